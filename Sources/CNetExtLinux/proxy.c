// The app proxy's system calls: transparent sockets for nftables `tproxy` (kernel document
// Documentation/networking/tproxy.rst), descriptors passed with a message (SCM_RIGHTS,
// unix(7)), socket endpoints, and UDP flows' sockets.
#define _GNU_SOURCE
#include "CNetExtLinux.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#ifndef IP_TRANSPARENT
#define IP_TRANSPARENT 19
#endif
#ifndef IPV6_TRANSPARENT
#define IPV6_TRANSPARENT 75
#endif
#ifndef IP_RECVORIGDSTADDR
#define IP_RECVORIGDSTADDR 20
#endif
#ifndef IPV6_RECVORIGDSTADDR
#define IPV6_RECVORIGDSTADDR 74
#endif

int netext_accept_cloexec(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC);
}

int netext_tproxy_socket(int ipv6, int udp, uint16_t *port) {
    int fd = socket(ipv6 ? AF_INET6 : AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int on = 1;
    int failed = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0
        || (ipv6 ? setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &on, sizeof(on)) : setsockopt(fd, SOL_IP, IP_TRANSPARENT, &on, sizeof(on))) < 0
        || (ipv6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) < 0)
        || (udp && (ipv6 ? setsockopt(fd, SOL_IPV6, IPV6_RECVORIGDSTADDR, &on, sizeof(on)) : setsockopt(fd, SOL_IP, IP_RECVORIGDSTADDR, &on, sizeof(on))) < 0);
    if (!failed) {
        if (ipv6) {
            struct sockaddr_in6 address = { .sin6_family = AF_INET6, .sin6_port = htons(*port), .sin6_addr = IN6ADDR_LOOPBACK_INIT };
            failed = bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0;
        } else {
            struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(*port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
            failed = bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0;
        }
    }
    if (!failed && !udp) failed = listen(fd, 4096) < 0;
    if (!failed) {
        struct sockaddr_storage bound;
        socklen_t length = sizeof(bound);
        failed = getsockname(fd, (struct sockaddr *)&bound, &length) < 0;
        if (!failed) *port = ntohs(ipv6 ? ((struct sockaddr_in6 *)&bound)->sin6_port : ((struct sockaddr_in *)&bound)->sin_port);
    }
    if (failed) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int netext_send_fd_message(int socket_fd, int fd_to_send, const void *bytes, size_t length) {
    struct iovec iov = { .iov_base = (void *)bytes, .iov_len = length };
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (fd_to_send >= 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = sizeof(control.buffer);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &fd_to_send, sizeof(int));
    }
    ssize_t sent;
    do { sent = sendmsg(socket_fd, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    if (sent < 0) return -errno;
    return (size_t)sent == length ? 0 : -EMSGSIZE;
}

ssize_t netext_receive_fd_message(int socket_fd, void *buffer, size_t capacity, int *fd) {
    *fd = -1;
    struct iovec iov = { .iov_base = buffer, .iov_len = capacity };
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer) };
    ssize_t received;
    do { received = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC); } while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS && header->cmsg_len >= CMSG_LEN(sizeof(int))) {
            memcpy(fd, CMSG_DATA(header), sizeof(int));
        }
    }
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (*fd >= 0) { close(*fd); *fd = -1; }
        return -EMSGSIZE;
    }
    return received;
}

int netext_socket_endpoint(int fd, int peer, int *family, unsigned char address[16], uint16_t *port) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof(storage);
    int result = peer ? getpeername(fd, (struct sockaddr *)&storage, &length) : getsockname(fd, (struct sockaddr *)&storage, &length);
    if (result < 0) return -errno;
    memset(address, 0, 16);
    if (storage.ss_family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
        *family = 4;
        memcpy(address, &v4->sin_addr, 4);
        *port = ntohs(v4->sin_port);
    } else if (storage.ss_family == AF_INET6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
        // An IPv4 peer of a dual-stack socket (::ffff:a.b.c.d) is reported as IPv4.
        if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
            *family = 4;
            memcpy(address, ((unsigned char *)&v6->sin6_addr) + 12, 4);
        } else {
            *family = 6;
            memcpy(address, &v6->sin6_addr, 16);
        }
        *port = ntohs(v6->sin6_port);
    } else {
        return -EAFNOSUPPORT;
    }
    return 0;
}

static socklen_t fill_address(struct sockaddr_storage *storage, int family, const unsigned char *address, uint16_t port) {
    memset(storage, 0, sizeof(*storage));
    if (family == 6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)storage;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        memcpy(&v6->sin6_addr, address, 16);
        return sizeof(*v6);
    }
    struct sockaddr_in *v4 = (struct sockaddr_in *)storage;
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    memcpy(&v4->sin_addr, address, 4);
    return sizeof(*v4);
}

ssize_t netext_udp_receive_original(int fd, void *buffer, size_t capacity,
                                    int *source_family, unsigned char source[16], uint16_t *source_port,
                                    unsigned char destination[16], uint16_t *destination_port) {
    struct sockaddr_storage from;
    union { char buffer[256]; struct cmsghdr align; } control;
    struct iovec iov = { .iov_base = buffer, .iov_len = capacity };
    struct msghdr message = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1,
                              .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer) };
    ssize_t received;
    do { received = recvmsg(fd, &message, MSG_DONTWAIT); } while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    memset(source, 0, 16);
    memset(destination, 0, 16);
    if (from.ss_family == AF_INET6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&from;
        *source_family = 6;
        memcpy(source, &v6->sin6_addr, 16);
        *source_port = ntohs(v6->sin6_port);
    } else {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&from;
        *source_family = 4;
        memcpy(source, &v4->sin_addr, 4);
        *source_port = ntohs(v4->sin_port);
    }
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_IP && header->cmsg_type == IP_RECVORIGDSTADDR) {
            struct sockaddr_in original;
            memcpy(&original, CMSG_DATA(header), sizeof(original));
            memcpy(destination, &original.sin_addr, 4);
            *destination_port = ntohs(original.sin_port);
            return received;
        }
        if (header->cmsg_level == SOL_IPV6 && header->cmsg_type == IPV6_RECVORIGDSTADDR) {
            struct sockaddr_in6 original;
            memcpy(&original, CMSG_DATA(header), sizeof(original));
            memcpy(destination, &original.sin6_addr, 16);
            *destination_port = ntohs(original.sin6_port);
            return received;
        }
    }
    return -EBADMSG;
}

int netext_udp_flow_socket(int family, const unsigned char destination[16], uint16_t destination_port,
                           const unsigned char source[16], uint16_t source_port) {
    int fd = socket(family == 6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int on = 1;
    struct sockaddr_storage local, peer;
    socklen_t local_length = fill_address(&local, family, destination, destination_port);
    socklen_t peer_length = fill_address(&peer, family, source, source_port);
    int failed = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0
        || (family == 6 ? setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &on, sizeof(on)) : setsockopt(fd, SOL_IP, IP_TRANSPARENT, &on, sizeof(on))) < 0
        || (family == 6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) < 0)
        || bind(fd, (struct sockaddr *)&local, local_length) < 0
        || connect(fd, (struct sockaddr *)&peer, peer_length) < 0;
    if (failed) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}
