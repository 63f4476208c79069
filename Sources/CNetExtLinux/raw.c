// Sends whole IP packets that netextd built (the content filter's block page and resets).
#include "CNetExtLinux.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int netext_raw_open(int ipv6) {
    // IPPROTO_RAW implies IP_HDRINCL (IPv4) and, since Linux 4.5, IPV6_HDRINCL (IPv6).
    int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    return fd < 0 ? -errno : fd;
}

long netext_raw_send(int fd, const unsigned char *packet, unsigned long length) {
    struct sockaddr_storage to;
    memset(&to, 0, sizeof(to));
    socklen_t to_length;
    if (length >= 40 && (packet[0] >> 4) == 6) {
        struct sockaddr_in6 *six = (struct sockaddr_in6 *)&to;
        six->sin6_family = AF_INET6;
        memcpy(&six->sin6_addr, packet + 24, 16);
        to_length = sizeof(*six);
    } else if (length >= 20 && (packet[0] >> 4) == 4) {
        struct sockaddr_in *four = (struct sockaddr_in *)&to;
        four->sin_family = AF_INET;
        memcpy(&four->sin_addr, packet + 16, 4);
        to_length = sizeof(*four);
    } else {
        return -EINVAL;
    }
    ssize_t sent;
    do { sent = sendto(fd, packet, length, 0, (struct sockaddr *)&to, to_length); } while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : sent;
}
