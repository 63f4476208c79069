// The netfilter queue (nfnetlink_queue) and log (nfnetlink_log) spoken directly over
// NETLINK_NETFILTER sockets. Message layout: include/uapi/linux/netfilter/nfnetlink_queue.h,
// nfnetlink_log.h and nfnetlink.h.
#include "CNetExtLinux.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static void put_attribute(unsigned char *message, unsigned short type, const void *data, unsigned short length) {
    struct nlmsghdr *header = (struct nlmsghdr *)message;
    struct nlattr *attribute = (struct nlattr *)(message + NLMSG_ALIGN(header->nlmsg_len));
    attribute->nla_type = type;
    attribute->nla_len = NLA_HDRLEN + length;
    memcpy((unsigned char *)attribute + NLA_HDRLEN, data, length);
    header->nlmsg_len = NLMSG_ALIGN(header->nlmsg_len) + NLA_ALIGN(attribute->nla_len);
}

static void start_subsystem_message(unsigned char *message, unsigned char subsystem, unsigned short type, unsigned short flags, unsigned short queue, unsigned char family) {
    struct nlmsghdr *header = (struct nlmsghdr *)message;
    header->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
    header->nlmsg_type = (subsystem << 8) | type;
    header->nlmsg_flags = NLM_F_REQUEST | flags;
    header->nlmsg_seq = 0;
    header->nlmsg_pid = 0;
    struct nfgenmsg *generic = (struct nfgenmsg *)NLMSG_DATA(header);
    generic->nfgen_family = family;
    generic->version = NFNETLINK_V0;
    generic->res_id = htons(queue);
}

static void start_message(unsigned char *message, unsigned short type, unsigned short flags, unsigned short queue, unsigned char family) {
    start_subsystem_message(message, NFNL_SUBSYS_QUEUE, type, flags, queue, family);
}

/// Sends a configuration message that asks for an acknowledgement and returns 0 or -errno.
static int send_config(int fd, unsigned char *message, unsigned int sequence) {
    struct nlmsghdr *header = (struct nlmsghdr *)message;
    header->nlmsg_seq = sequence;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(fd, message, header->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) return -errno;
    unsigned char reply[8192];
    for (int attempt = 0; attempt < 64; attempt++) {
        ssize_t n = recv(fd, reply, sizeof(reply), 0);
        if (n < 0) return errno == EINTR ? 0 : -errno;
        for (struct nlmsghdr *answer = (struct nlmsghdr *)reply; NLMSG_OK(answer, (unsigned int)n); answer = NLMSG_NEXT(answer, n)) {
            if (answer->nlmsg_type == NLMSG_ERROR && answer->nlmsg_seq == sequence) {
                struct nlmsgerr *error = (struct nlmsgerr *)NLMSG_DATA(answer);
                return error->error;  // 0 = acknowledged, else -errno
            }
        }
    }
    return -ETIMEDOUT;
}

/// A bound NETLINK_NETFILTER socket with a receive buffer of `buffer` bytes, no ENOBUFS errors
/// and a 2 s receive timeout for the configuration exchange. Returns it or -errno.
static int open_netfilter_socket(int buffer) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    if (fd < 0) return -errno;
    struct sockaddr_nl local = { .nl_family = AF_NETLINK };
    if (bind(fd, (struct sockaddr *)&local, sizeof(local)) != 0) { int saved = errno; close(fd); return -saved; }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer));
    int one = 1;
    setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
    struct timeval timeout = { .tv_sec = 2, .tv_usec = 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    return fd;
}

int netext_nfq_open(unsigned short queue, unsigned int copy_range, unsigned int max_length, int fail_open) {
    int fd = open_netfilter_socket(8 << 20);
    if (fd < 0) return fd;

    unsigned char message[256];
    int result;
    // Bind the queue (the kernel has not needed PF_BIND since Linux 3.8).
    struct nfqnl_msg_config_cmd command = { .command = NFQNL_CFG_CMD_BIND, .pf = htons(AF_UNSPEC) };
    start_message(message, NFQNL_MSG_CONFIG, NLM_F_ACK, queue, AF_UNSPEC);
    put_attribute(message, NFQA_CFG_CMD, &command, sizeof(command));
    if ((result = send_config(fd, message, 1)) != 0) goto fail;
    // Copy whole packets up to copy_range bytes.
    struct nfqnl_msg_config_params params = { .copy_range = htonl(copy_range), .copy_mode = NFQNL_COPY_PACKET };
    start_message(message, NFQNL_MSG_CONFIG, NLM_F_ACK, queue, AF_UNSPEC);
    put_attribute(message, NFQA_CFG_PARAMS, &params, sizeof(params));
    if ((result = send_config(fd, message, 2)) != 0) goto fail;
    unsigned int length = htonl(max_length);
    start_message(message, NFQNL_MSG_CONFIG, NLM_F_ACK, queue, AF_UNSPEC);
    put_attribute(message, NFQA_CFG_QUEUE_MAXLEN, &length, sizeof(length));
    if ((result = send_config(fd, message, 3)) != 0) goto fail;
    // The owning socket's uid/gid and (fail open) accept on overflow. Without NFQA_CFG_F_GSO the
    // kernel segments GSO/GRO packets before queueing them: a super-packet can exceed the largest
    // copy range (0xffff less a netlink header), and a flow whose data a provider reads needs
    // every byte. Only undecided flows are queued, so the extra segments cost little.
    unsigned int flags = NFQA_CFG_F_UID_GID | (fail_open ? NFQA_CFG_F_FAIL_OPEN : 0);
    unsigned int mask = NFQA_CFG_F_UID_GID | NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN;
    flags = htonl(flags);
    mask = htonl(mask);
    start_message(message, NFQNL_MSG_CONFIG, NLM_F_ACK, queue, AF_UNSPEC);
    put_attribute(message, NFQA_CFG_FLAGS, &flags, sizeof(flags));
    put_attribute(message, NFQA_CFG_MASK, &mask, sizeof(mask));
    if ((result = send_config(fd, message, 4)) != 0) goto fail;
    // Blocking reads from here on; the caller's loop sets its own timeout.
    struct timeval none = { 0, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
    return fd;
fail:
    close(fd);
    return result;
}

int netext_nfq_set_timeout(int fd, int timeout_ms) {
    struct timeval timeout = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) == 0 ? 0 : -errno;
}

long netext_nfq_receive(int fd, unsigned char *buffer, unsigned long size) {
    ssize_t n;
    do { n = recv(fd, buffer, size, 0); } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

static unsigned int be32_at(const struct nlattr *attribute) {
    unsigned int value;
    memcpy(&value, (const unsigned char *)attribute + NLA_HDRLEN, sizeof(value));
    return ntohl(value);
}

int netext_nfq_next(const unsigned char *buffer, unsigned long length, unsigned long *offset, netext_nfq_packet *packet) {
    while (*offset + NLMSG_HDRLEN <= length) {
        const struct nlmsghdr *header = (const struct nlmsghdr *)(buffer + *offset);
        if (header->nlmsg_len < NLMSG_HDRLEN || *offset + header->nlmsg_len > length) {
            *offset = length;
            return -1;
        }
        *offset += NLMSG_ALIGN(header->nlmsg_len);
        if (header->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET)) continue;
        if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) return -1;
        memset(packet, 0, sizeof(*packet));
        const struct nfgenmsg *generic = (const struct nfgenmsg *)NLMSG_DATA(header);
        packet->family = generic->nfgen_family;
        int has_header = 0;
        const unsigned char *cursor = (const unsigned char *)NLMSG_DATA(header) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
        const unsigned char *end = (const unsigned char *)header + header->nlmsg_len;
        while (cursor + NLA_HDRLEN <= end) {
            const struct nlattr *attribute = (const struct nlattr *)cursor;
            if (attribute->nla_len < NLA_HDRLEN || cursor + attribute->nla_len > end) return -1;
            unsigned int payload_length = attribute->nla_len - NLA_HDRLEN;
            switch (attribute->nla_type & NLA_TYPE_MASK) {
            case NFQA_PACKET_HDR:
                if (payload_length >= sizeof(struct nfqnl_msg_packet_hdr)) {
                    struct nfqnl_msg_packet_hdr packet_header;
                    memcpy(&packet_header, cursor + NLA_HDRLEN, sizeof(packet_header));
                    packet->id = ntohl(packet_header.packet_id);
                    packet->hook = packet_header.hook;
                    has_header = 1;
                }
                break;
            case NFQA_MARK: if (payload_length >= 4) packet->mark = be32_at(attribute); break;
            case NFQA_IFINDEX_INDEV: if (payload_length >= 4) packet->in_interface = be32_at(attribute); break;
            case NFQA_IFINDEX_OUTDEV: if (payload_length >= 4) packet->out_interface = be32_at(attribute); break;
            case NFQA_UID: if (payload_length >= 4) { packet->uid = be32_at(attribute); packet->has_owner = 1; } break;
            case NFQA_GID: if (payload_length >= 4) packet->gid = be32_at(attribute); break;
            case NFQA_CAP_LEN: if (payload_length >= 4) packet->original_length = be32_at(attribute); break;
            case NFQA_PAYLOAD:
                packet->payload = cursor + NLA_HDRLEN;
                packet->payload_length = payload_length;
                break;
            default: break;
            }
            cursor += NLA_ALIGN(attribute->nla_len);
        }
        if (!has_header) return -1;
        if (packet->original_length == 0) packet->original_length = packet->payload_length;
        return 1;
    }
    return 0;
}

int netext_nfq_verdict(int fd, unsigned short queue, unsigned int id, unsigned int verdict, int set_mark, unsigned int mark) {
    unsigned char message[64];
    start_message(message, NFQNL_MSG_VERDICT, 0, queue, AF_UNSPEC);
    struct nfqnl_msg_verdict_hdr header = { .verdict = htonl(verdict), .id = htonl(id) };
    put_attribute(message, NFQA_VERDICT_HDR, &header, sizeof(header));
    if (set_mark) {
        unsigned int value = htonl(mark);
        put_attribute(message, NFQA_MARK, &value, sizeof(value));
    }
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    ssize_t n;
    do {
        n = sendto(fd, message, ((struct nlmsghdr *)message)->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : 0;
}

int netext_nflog_open(unsigned short group, unsigned int copy_range) {
    int fd = open_netfilter_socket(4 << 20);
    if (fd < 0) return fd;
    unsigned char message[256];
    int result;
    struct nfulnl_msg_config_cmd command = { .command = NFULNL_CFG_CMD_BIND };
    start_subsystem_message(message, NFNL_SUBSYS_ULOG, NFULNL_MSG_CONFIG, NLM_F_ACK, group, AF_UNSPEC);
    put_attribute(message, NFULA_CFG_CMD, &command, sizeof(command));
    if ((result = send_config(fd, message, 1)) != 0) goto fail;
    struct nfulnl_msg_config_mode mode = { .copy_range = htonl(copy_range), .copy_mode = NFULNL_COPY_PACKET };
    start_subsystem_message(message, NFNL_SUBSYS_ULOG, NFULNL_MSG_CONFIG, NLM_F_ACK, group, AF_UNSPEC);
    put_attribute(message, NFULA_CFG_MODE, &mode, sizeof(mode));
    // One packet a message, sent at once (the default batches up to 100 or a second).
    unsigned int threshold = htonl(1);
    put_attribute(message, NFULA_CFG_QTHRESH, &threshold, sizeof(threshold));
    if ((result = send_config(fd, message, 2)) != 0) goto fail;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
fail:
    close(fd);
    return result;
}

int netext_nflog_next(const unsigned char *buffer, unsigned long length, unsigned long *offset,
                      const unsigned char **payload, unsigned int *payload_length, unsigned char *hook) {
    while (*offset + NLMSG_HDRLEN <= length) {
        const struct nlmsghdr *header = (const struct nlmsghdr *)(buffer + *offset);
        if (header->nlmsg_len < NLMSG_HDRLEN || *offset + header->nlmsg_len > length) {
            *offset = length;
            return -1;
        }
        *offset += NLMSG_ALIGN(header->nlmsg_len);
        if (header->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)) continue;
        if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) return -1;
        *payload = 0;
        *payload_length = 0;
        *hook = 0;
        const unsigned char *cursor = (const unsigned char *)NLMSG_DATA(header) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
        const unsigned char *end = (const unsigned char *)header + header->nlmsg_len;
        while (cursor + NLA_HDRLEN <= end) {
            const struct nlattr *attribute = (const struct nlattr *)cursor;
            if (attribute->nla_len < NLA_HDRLEN || cursor + attribute->nla_len > end) return -1;
            unsigned int attribute_length = attribute->nla_len - NLA_HDRLEN;
            switch (attribute->nla_type & NLA_TYPE_MASK) {
            case NFULA_PACKET_HDR:
                if (attribute_length >= sizeof(struct nfulnl_msg_packet_hdr)) {
                    struct nfulnl_msg_packet_hdr packet_header;
                    memcpy(&packet_header, cursor + NLA_HDRLEN, sizeof(packet_header));
                    *hook = packet_header.hook;
                }
                break;
            case NFULA_PAYLOAD:
                *payload = cursor + NLA_HDRLEN;
                *payload_length = attribute_length;
                break;
            default: break;
            }
            cursor += NLA_ALIGN(attribute->nla_len);
        }
        if (*payload == 0) return -1;
        return 1;
    }
    return 0;
}
