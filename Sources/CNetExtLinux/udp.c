#define _GNU_SOURCE
#include "CNetExtLinux.h"
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

enum { control_size = 128, batch_limit = 128 };

int netext_udp_enable_pktinfo(int fd, int ipv6) {
    int on = 1;
    if (ipv6) {
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) != 0) return -errno;
        // A dual-stack socket also reports IPv4 destinations through IP_PKTINFO.
        (void)setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
        return 0;
    }
    return setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) == 0 ? 0 : -errno;
}

int netext_udp_enable_gro(int fd) {
    int on = 1;
    return setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof(on)) == 0 ? 0 : -errno;
}

int netext_udp_supports_gso(int fd) {
    int zero = 0;
    return setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0 ? 1 : 0;
}

/// Reads IP_PKTINFO / IPV6_PKTINFO and UDP_GRO from a received message's control data.
static void read_control(struct msghdr *message, netext_local_address *local, unsigned short *segment_size) {
    memset(local, 0, sizeof(*local));
    if (segment_size) *segment_size = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(message); header != NULL; header = CMSG_NXTHDR(message, header)) {
        if (header->cmsg_level == IPPROTO_IP && header->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo info;
            memcpy(&info, CMSG_DATA(header), sizeof(info));
            local->family = AF_INET;
            local->ifindex = info.ipi_ifindex;
            memcpy(local->address, &info.ipi_addr, 4);
        } else if (header->cmsg_level == IPPROTO_IPV6 && header->cmsg_type == IPV6_PKTINFO) {
            struct in6_pktinfo info;
            memcpy(&info, CMSG_DATA(header), sizeof(info));
            local->family = AF_INET6;
            local->ifindex = info.ipi6_ifindex;
            memcpy(local->address, &info.ipi6_addr, 16);
        } else if (header->cmsg_level == IPPROTO_UDP && header->cmsg_type == UDP_GRO && segment_size) {
            int size = 0;
            memcpy(&size, CMSG_DATA(header), sizeof(size));
            *segment_size = (unsigned short)size;
        }
    }
}

/// Fills `control` with the source address (pktinfo) and the GSO segment size, as needed.
static void write_control(struct msghdr *message, char *control, const netext_local_address *local, int to_family, unsigned short segment_size) {
    memset(control, 0, control_size);
    message->msg_control = control;
    message->msg_controllen = control_size;
    size_t used = 0;
    struct cmsghdr *header = CMSG_FIRSTHDR(message);
    if (local != NULL && local->family == AF_INET && to_family == AF_INET) {
        header->cmsg_level = IPPROTO_IP;
        header->cmsg_type = IP_PKTINFO;
        header->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
        struct in_pktinfo info;
        memset(&info, 0, sizeof(info));
        memcpy(&info.ipi_spec_dst, local->address, 4);
        memcpy(CMSG_DATA(header), &info, sizeof(info));
        used += CMSG_SPACE(sizeof(info));
        header = CMSG_NXTHDR(message, header);
    } else if (local != NULL && to_family == AF_INET6 && (local->family == AF_INET6 || local->family == AF_INET)) {
        header->cmsg_level = IPPROTO_IPV6;
        header->cmsg_type = IPV6_PKTINFO;
        header->cmsg_len = CMSG_LEN(sizeof(struct in6_pktinfo));
        struct in6_pktinfo info;
        memset(&info, 0, sizeof(info));
        if (local->family == AF_INET6) {
            memcpy(&info.ipi6_addr, local->address, 16);
        } else {
            // An IPv4 destination on a dual-stack socket: the IPv4-mapped source address.
            info.ipi6_addr.s6_addr[10] = 0xff;
            info.ipi6_addr.s6_addr[11] = 0xff;
            memcpy(&info.ipi6_addr.s6_addr[12], local->address, 4);
        }
        memcpy(CMSG_DATA(header), &info, sizeof(info));
        used += CMSG_SPACE(sizeof(info));
        header = CMSG_NXTHDR(message, header);
    }
    if (segment_size > 0 && header != NULL) {
        header->cmsg_level = IPPROTO_UDP;
        header->cmsg_type = UDP_SEGMENT;
        header->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t size = segment_size;
        memcpy(CMSG_DATA(header), &size, sizeof(size));
        used += CMSG_SPACE(sizeof(size));
    }
    message->msg_controllen = used;
    if (used == 0) message->msg_control = NULL;
}

long netext_udp_send(int fd, const void *buffer, unsigned long length, const struct sockaddr *to, socklen_t to_length, const netext_local_address *local) {
    struct iovec iov = { .iov_base = (void *)buffer, .iov_len = length };
    union { char buffer[control_size]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_name = (void *)to, .msg_namelen = to_length, .msg_iov = &iov, .msg_iovlen = 1 };
    write_control(&message, control.buffer, local, to->sa_family, 0);
    ssize_t sent;
    do { sent = sendmsg(fd, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : sent;
}

/// Sends a run one datagram at a time (when the kernel cannot segment it). Returns 0 or -1.
static int send_run_unsegmented(int fd, const netext_outgoing *entry) {
    // The run's bytes are the concatenation of its iovecs; split them every segment_size bytes.
    unsigned char datagram[65536];
    size_t filled = 0;
    int failed = 0;
    for (int i = 0; i < entry->iov_count; i++) {
        const unsigned char *bytes = entry->iov[i].iov_base;
        size_t left = entry->iov[i].iov_len;
        while (left > 0) {
            size_t take = entry->segment_size - filled;
            if (take > left) take = left;
            memcpy(datagram + filled, bytes, take);
            filled += take;
            bytes += take;
            left -= take;
            if (filled == entry->segment_size) {
                struct iovec iov = { .iov_base = datagram, .iov_len = filled };
                struct msghdr message = { .msg_name = (void *)entry->to, .msg_namelen = entry->to ? entry->to_length : 0, .msg_iov = &iov, .msg_iovlen = 1 };
                char control[control_size];
                write_control(&message, control, &entry->from, entry->to ? entry->to->ss_family : 0, 0);
                if (sendmsg(fd, &message, MSG_NOSIGNAL) < 0) failed = -1;
                filled = 0;
            }
        }
    }
    if (filled > 0) {
        struct iovec iov = { .iov_base = datagram, .iov_len = filled };
        struct msghdr message = { .msg_name = (void *)entry->to, .msg_namelen = entry->to ? entry->to_length : 0, .msg_iov = &iov, .msg_iovlen = 1 };
        char control[control_size];
        write_control(&message, control, &entry->from, entry->to ? entry->to->ss_family : 0, 0);
        if (sendmsg(fd, &message, MSG_NOSIGNAL) < 0) failed = -1;
    }
    return failed;
}

int netext_udp_send_batch(int fd, const netext_outgoing *entries, int count) {
    struct mmsghdr messages[batch_limit];
    union { char buffer[control_size]; struct cmsghdr align; } controls[batch_limit];
    int unsent = 0;
    for (int start = 0; start < count; start += batch_limit) {
        int n = count - start < batch_limit ? count - start : batch_limit;
        for (int i = 0; i < n; i++) {
            const netext_outgoing *entry = &entries[start + i];
            struct msghdr *message = &messages[i].msg_hdr;
            memset(message, 0, sizeof(*message));
            message->msg_name = (void *)entry->to;
            message->msg_namelen = entry->to ? entry->to_length : 0;
            message->msg_iov = (struct iovec *)entry->iov;
            message->msg_iovlen = entry->iov_count;
            write_control(message, controls[i].buffer, &entry->from, entry->to ? entry->to->ss_family : 0, entry->segment_size);
        }
        int done = 0;
        while (done < n) {
            int sent = sendmmsg(fd, messages + done, n - done, MSG_NOSIGNAL);
            if (sent > 0) {
                done += sent;
                continue;
            }
            if (errno == EINTR) continue;
            // The entry at `done` failed. A GSO run the path cannot segment (EIO) goes out
            // datagram by datagram; anything else is counted as lost.
            const netext_outgoing *entry = &entries[start + done];
            if (entry->segment_size > 0 && (errno == EIO || errno == EINVAL || errno == EMSGSIZE)) {
                if (send_run_unsegmented(fd, entry) != 0) unsent++;
            } else {
                unsent++;
            }
            done++;
        }
    }
    return unsent;
}

int netext_udp_receive_batch(int fd, unsigned char *buffers, unsigned long buffer_size, int count, netext_incoming *received) {
    if (count > batch_limit) count = batch_limit;
    struct mmsghdr messages[batch_limit];
    struct iovec iovs[batch_limit];
    union { char buffer[control_size]; struct cmsghdr align; } controls[batch_limit];
    for (int i = 0; i < count; i++) {
        iovs[i].iov_base = buffers + (size_t)i * buffer_size;
        iovs[i].iov_len = buffer_size;
        struct msghdr *message = &messages[i].msg_hdr;
        memset(message, 0, sizeof(*message));
        message->msg_name = &received[i].from;
        message->msg_namelen = sizeof(received[i].from);
        message->msg_iov = &iovs[i];
        message->msg_iovlen = 1;
        message->msg_control = controls[i].buffer;
        message->msg_controllen = control_size;
    }
    int got;
    do { got = recvmmsg(fd, messages, count, MSG_WAITFORONE, NULL); } while (got < 0 && errno == EINTR);
    if (got < 0) return -errno;
    for (int i = 0; i < got; i++) {
        received[i].length = messages[i].msg_len;
        read_control(&messages[i].msg_hdr, &received[i].local, &received[i].segment_size);
        if (messages[i].msg_hdr.msg_namelen == 0) memset(&received[i].from, 0, sizeof(received[i].from));
    }
    return got;
}

long netext_receive_with_hop_limit(int fd, void *buffer, unsigned long capacity, struct sockaddr_storage *from, int *hop_limit) {
    *hop_limit = -1;
    struct iovec iov = { .iov_base = buffer, .iov_len = capacity };
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr message = {
        .msg_name = from, .msg_namelen = sizeof(*from), .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer),
    };
    ssize_t received;
    do { received = recvmsg(fd, &message, 0); } while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == IPPROTO_IPV6 && header->cmsg_type == IPV6_HOPLIMIT && header->cmsg_len >= CMSG_LEN(sizeof(int))) {
            memcpy(hop_limit, CMSG_DATA(header), sizeof(int));
        }
    }
    if (message.msg_flags & MSG_TRUNC) return -EMSGSIZE;
    return received;
}
