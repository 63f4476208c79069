// Finds the socket behind a flow with sock_diag (include/uapi/linux/inet_diag.h): one exact
// look-up request by addresses and ports; the answer carries the socket's inode and uid.
#include "CNetExtLinux.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>

int netext_sock_diag_open(void) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -errno;
    struct timeval timeout = { .tv_sec = 0, .tv_usec = 200000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    return fd;
}

static int query(int fd, int family, int protocol, const unsigned char *src, unsigned short sport,
                 const unsigned char *dst, unsigned short dport, unsigned int *inode, unsigned int *uid, unsigned long long *cgroup) {
    static unsigned int sequence = 0;
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof(message));
    message.header.nlmsg_len = sizeof(message);
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.header.nlmsg_seq = ++sequence;
    message.request.sdiag_family = (unsigned char)family;
    message.request.sdiag_protocol = (unsigned char)protocol;
    message.request.idiag_states = ~0U;
    message.request.id.idiag_sport = htons(sport);
    message.request.id.idiag_dport = htons(dport);
    int length = family == AF_INET6 ? 16 : 4;
    memcpy(message.request.id.idiag_src, src, length);
    memcpy(message.request.id.idiag_dst, dst, length);
    message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(fd, &message, sizeof(message), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) return -errno;
    unsigned char buffer[8192];
    ssize_t n;
    // Skip any late answer to an earlier request (one that timed out).
    do { n = recv(fd, buffer, sizeof(buffer), 0); } while (n > 0 && ((struct nlmsghdr *)buffer)->nlmsg_seq != message.header.nlmsg_seq);
    if (n < 0) return -errno;
    for (struct nlmsghdr *answer = (struct nlmsghdr *)buffer; NLMSG_OK(answer, (unsigned int)n); answer = NLMSG_NEXT(answer, n)) {
        if (answer->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *error = (struct nlmsgerr *)NLMSG_DATA(answer);
            return error->error ? error->error : -ENOENT;
        }
        if (answer->nlmsg_type == SOCK_DIAG_BY_FAMILY && answer->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            struct inet_diag_msg *found = (struct inet_diag_msg *)NLMSG_DATA(answer);
            *inode = found->idiag_inode;
            *uid = found->idiag_uid;
            if (cgroup) {
                // INET_DIAG_CGROUP_ID (21, Linux 5.7): the socket's cgroup v2 id, sent with every
                // answer where the kernel keeps socket cgroup data.
                *cgroup = 0;
                int rest = (int)answer->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*found));
                for (struct rtattr *attribute = (struct rtattr *)(found + 1); RTA_OK(attribute, rest); attribute = RTA_NEXT(attribute, rest)) {
                    if (attribute->rta_type == 21 && RTA_PAYLOAD(attribute) >= sizeof(*cgroup)) memcpy(cgroup, RTA_DATA(attribute), sizeof(*cgroup));
                }
            }
            return 0;
        }
    }
    return -ENOENT;
}

int netext_socket_inode(int fd, int ipv6, int protocol, const unsigned char *local, unsigned short local_port,
                        const unsigned char *remote, unsigned short remote_port, unsigned int *inode, unsigned int *uid) {
    int family = ipv6 ? AF_INET6 : AF_INET;
    // TCP looks a socket up from its own side (source = local); UDP from an arriving packet's
    // (source = remote), which also finds unconnected sockets bound to the local port.
    int result = query(fd, family, protocol, local, local_port, remote, remote_port, inode, uid, NULL);
    if (result != 0 && protocol == IPPROTO_UDP) {
        result = query(fd, family, protocol, remote, remote_port, local, local_port, inode, uid, NULL);
    }
    return result;
}

int netext_socket_cgroup(int fd, int ipv6, const unsigned char *local, unsigned short local_port,
                         const unsigned char *remote, unsigned short remote_port, unsigned long long *cgroup, unsigned int *uid) {
    unsigned int inode = 0;
    return query(fd, ipv6 ? AF_INET6 : AF_INET, IPPROTO_TCP, local, local_port, remote, remote_port, &inode, uid, cgroup);
}
