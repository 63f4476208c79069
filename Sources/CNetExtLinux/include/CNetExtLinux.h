#pragma once
#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>
#include <sys/uio.h>

/// Starts `path` with `argv`/`envp` as user `uid`/`gid` (no supplementary groups), with
/// `fd3` and `fd4` (each -1 for none) duplicated onto descriptors 3 and 4 and every other
/// descriptor above 2 closed. stdin is /dev/null; stdout and stderr are inherited. A new process
/// group is created. `flags`: NETEXT_SPAWN_DROP_PRIVILEGES switches to uid/gid;
/// NETEXT_SPAWN_ISOLATE_NETWORK puts the child in a new, empty network namespace.
/// Returns the child's pid or -errno.
#define NETEXT_SPAWN_DROP_PRIVILEGES 1
#define NETEXT_SPAWN_ISOLATE_NETWORK 2
pid_t netext_spawn(const char *path, char *const argv[], char *const envp[],
                   uid_t uid, gid_t gid, int flags, int fd3, int fd4);

/// pipe2(fds, O_CLOEXEC): a pipe no concurrently spawned child inherits. Returns 0 or -errno.
int netext_pipe_cloexec(int fds[2]);

/// Starts a system tool (`ip`, `nft`) in a process group of its own with `stdin_fd` as its
/// standard input and `output_fd` as both standard output and standard error; every other
/// descriptor is closed, the signal mask cleared and every signal's disposition the default.
/// Spawned with posix_spawn (no copy of the caller's page tables). Returns the pid, or -errno
/// when the spawn or the exec failed.
pid_t netext_spawn_piped(const char *path, char *const argv[], char *const envp[], int stdin_fd, int output_fd);

/// Opens /dev/net/tun and attaches a TUN interface (IFF_TUN | IFF_NO_PI). `name` (at least 16
/// bytes) holds the requested name or pattern such as "netext%d" and receives the real name.
/// With `offload`, every packet carries a 10-byte virtio_net_hdr and the kernel may pass TCP
/// segments of up to 64 KiB (IFF_VNET_HDR, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6).
/// Returns the descriptor or -errno.
int netext_tun_open(char *name, int offload);

/// 1 if the TUN descriptor was opened with IFF_VNET_HDR, 0 if not, or -errno.
int netext_tun_has_vnet_header(int fd);

/// Sends one byte with a file descriptor attached (SCM_RIGHTS). Returns 0 or -errno.
int netext_send_fd(int socket_fd, int fd_to_send);

/// Receives a file descriptor sent with netext_send_fd. Returns the fd or -errno.
int netext_receive_fd(int socket_fd);

/// A connected AF_UNIX SOCK_STREAM pair, both close-on-exec. Returns 0 or -errno.
int netext_socketpair(int fds[2]);

/// A connected AF_UNIX SOCK_SEQPACKET pair (message boundaries kept), both close-on-exec.
/// Returns 0 or -errno.
int netext_socketpair_packets(int fds[2]);

/// The local address a datagram arrived at (from IP_PKTINFO / IPV6_PKTINFO), so that a reply can
/// leave from the same address on a host with several.
typedef struct {
    int family;            // AF_INET, AF_INET6, or 0 if unknown
    int ifindex;
    unsigned char address[16];
} netext_local_address;

/// Asks the kernel to report each datagram's destination address. Returns 0 or -errno.
int netext_udp_enable_pktinfo(int fd, int ipv6);


/// sendmsg to `to`, from `local` when its family is set. Returns the length or -errno.
long netext_udp_send(int fd, const void *buffer, unsigned long length, const struct sockaddr *to, socklen_t to_length, const netext_local_address *local);

/// A datagram to send with netext_udp_send_batch; with `segment_size`, a run of datagrams of that
/// size (the last may be shorter) passed to the kernel at once (UDP GSO, UDP_SEGMENT).
typedef struct {
    const struct iovec *iov;
    int iov_count;
    unsigned short segment_size;  // 0: one datagram
    const struct sockaddr_storage *to;  // NULL on a connected socket
    socklen_t to_length;
    netext_local_address from;  // family 0: any local address
} netext_outgoing;

/// Sends every entry with sendmmsg; a run the kernel refuses to segment is sent one datagram at
/// a time. Returns the number of entries that could not be sent (0 = all sent).
int netext_udp_send_batch(int fd, const netext_outgoing *entries, int count);

/// One received buffer: a datagram, or with `segment_size` several coalesced ones (UDP GRO).
typedef struct {
    long length;
    unsigned short segment_size;  // 0: one datagram
    struct sockaddr_storage from;
    netext_local_address local;
} netext_incoming;

/// recvmmsg into `count` buffers of `buffer_size` bytes laid out one after another at `buffers`:
/// blocks for the first, then takes what is already queued. Returns how many, or -errno.
int netext_udp_receive_batch(int fd, unsigned char *buffers, unsigned long buffer_size, int count, netext_incoming *received);

/// Asks the kernel to coalesce datagrams of one flow (UDP_GRO). Returns 0 or -errno.
int netext_udp_enable_gro(int fd);

/// recvmsg of one datagram: its source in `from`, and its IPv6 hop limit in `hop_limit` when the
/// socket asked for it (IPV6_RECVHOPLIMIT; else -1). Returns the length or -errno (-EMSGSIZE
/// when it did not fit).
long netext_receive_with_hop_limit(int fd, void *buffer, unsigned long capacity, struct sockaddr_storage *from, int *hop_limit);

/// Whether the kernel accepts UDP_SEGMENT on this socket (UDP GSO). Returns 1 or 0.
int netext_udp_supports_gso(int fd);

/// A netlink socket subscribed to link, address and route changes (IPv4 and IPv6), with a
/// receive timeout of `timeout_ms`. Returns the descriptor or -errno.
int netext_netlink_route_open(int timeout_ms);

/// One packet the kernel queued to user space (netfilter queue). `payload` points into the
/// receive buffer: the IP packet, at most the copy range long.
typedef struct {
    unsigned int id;
    unsigned char family;     // NFPROTO_IPV4 (2) or NFPROTO_IPV6 (10)
    unsigned char hook;       // NF_INET_LOCAL_IN (1), NF_INET_LOCAL_OUT (3), ...
    unsigned int mark;
    unsigned int in_interface, out_interface;
    int has_owner;            // uid/gid of the owning socket are known
    unsigned int uid, gid;
    const unsigned char *payload;
    unsigned int payload_length;
    unsigned int original_length;
} netext_nfq_packet;

/// Opens a netfilter queue socket bound to queue `queue`: whole packets up to `copy_range`
/// bytes, at most `max_length` packets waiting, with owner uid/gid (GSO packets segmented),
/// and with `fail_open` packets accepted instead of dropped when the queue is full.
/// Returns the descriptor or -errno (-EBUSY: another program has the queue).
int netext_nfq_open(unsigned short queue, unsigned int copy_range, unsigned int max_length, int fail_open);

/// Sets the receive timeout (0 = block). Returns 0 or -errno.
int netext_nfq_set_timeout(int fd, int timeout_ms);

/// Receives one netlink datagram (it may hold several packets). Returns its length or -errno.
long netext_nfq_receive(int fd, unsigned char *buffer, unsigned long size);

/// Parses the next queued packet of a received datagram from `*offset` on. Returns 1 with
/// `packet` filled, 0 at the end, -1 for a malformed message (skipped).
int netext_nfq_next(const unsigned char *buffer, unsigned long length, unsigned long *offset, netext_nfq_packet *packet);

/// Issues a verdict (NF_DROP 0, NF_ACCEPT 1, NF_REPEAT 4) for packet `id`, optionally setting
/// the packet's mark. Returns 0 or -errno.
int netext_nfq_verdict(int fd, unsigned short queue, unsigned int id, unsigned int verdict, int set_mark, unsigned int mark);

/// Opens a netfilter log socket (nfnetlink_log) bound to group `group`, copying whole packets
/// up to `copy_range` bytes, each delivered at once (queue threshold 1). Non-blocking.
/// Returns the descriptor or -errno.
int netext_nflog_open(unsigned short group, unsigned int copy_range);

/// Parses the next logged packet of a received datagram from `*offset` on. Returns 1 with the
/// packet's bytes in `*payload`/`*payload_length` and its hook, 0 at the end, -1 for a
/// malformed message (skipped).
int netext_nflog_next(const unsigned char *buffer, unsigned long length, unsigned long *offset,
                      const unsigned char **payload, unsigned int *payload_length, unsigned char *hook);

/// A raw socket for sending whole IPv4 (ipv6 = 0) or IPv6 packets, headers included.
/// Returns the descriptor or -errno.
int netext_raw_open(int ipv6);

/// Sends one whole IP packet to its own destination address. Returns the length or -errno.
long netext_raw_send(int fd, const unsigned char *packet, unsigned long length);

/// The cgroup v2 id (0 if the kernel does not report it) and owner uid of the local TCP socket
/// of a connection, asked as netext_socket_inode does. Returns 0 or -errno.
int netext_socket_cgroup(int fd, int ipv6, const unsigned char *local, unsigned short local_port,
                         const unsigned char *remote, unsigned short remote_port, unsigned long long *cgroup, unsigned int *uid);

/// A NETLINK_SOCK_DIAG socket for netext_socket_inode (200 ms answer timeout), or -errno.
int netext_sock_diag_open(void);

/// The inode and owner uid of the local socket of a TCP or UDP flow (IPPROTO_TCP/IPPROTO_UDP;
/// addresses of 4 or, with `ipv6`, 16 bytes), asked on `fd` (netext_sock_diag_open; one thread
/// at a time). Returns 0 or -errno (-ENOENT: no such socket).
int netext_socket_inode(int fd, int ipv6, int protocol, const unsigned char *local, unsigned short local_port,
                        const unsigned char *remote, unsigned short remote_port, unsigned int *inode, unsigned int *uid);

/// Loads a BPF_CGROUP_INET_SOCK_CREATE program that gives every socket created in the cgroups
/// it is attached to (and their descendants) the mark `mark`, before the socket's first route
/// lookup. The verifier's log goes to `log` (NULL: none). Returns the program's descriptor or
/// -errno.
int netext_bpf_socket_mark_program(unsigned int mark, char *log, unsigned int log_size);

/// Attaches program `program_fd` to the cgroup directory `cgroup_fd` (BPF_F_ALLOW_OVERRIDE: it
/// replaces the program of this kind attached there, such as one a crashed netextd left; a
/// cgroup holding other programs of this kind in multi mode refuses it with -EPERM). Returns 0
/// or -errno.
int netext_bpf_cgroup_attach(int cgroup_fd, int program_fd);

/// Detaches the program of this kind from the cgroup (whichever is attached: in override mode
/// there is one; `program_fd` may be -1). Returns 0 or -errno.
int netext_bpf_cgroup_detach(int cgroup_fd, int program_fd);

// MARK: App proxy (proxy.c)

/// A TCP listener for nftables `tproxy` (IP_TRANSPARENT / IPV6_TRANSPARENT, CAP_NET_ADMIN) on
/// 127.0.0.1 or ::1 at `*port` (0: any free port, written back), non-blocking, close-on-exec.
/// `udp`: a datagram socket instead, reporting each datagram's original destination
/// (IP_RECVORIGDSTADDR / IPV6_RECVORIGDSTADDR). Returns the descriptor or -errno.
int netext_tproxy_socket(int ipv6, int udp, uint16_t *port);
/// Accepts one connection as a close-on-exec descriptor (accept4 SOCK_CLOEXEC): the descriptor,
/// or -1 with errno set.
int netext_accept_cloexec(int listener);

/// Sends `length` bytes as one message with `fd_to_send` attached (SCM_RIGHTS; -1: none).
/// Returns 0 or -errno.
int netext_send_fd_message(int socket_fd, int fd_to_send, const void *bytes, size_t length);

/// Receives one message into `buffer` and the descriptor attached to it (`*fd`, -1 if none;
/// close-on-exec). Returns its length (0: the peer closed) or -errno.
ssize_t netext_receive_fd_message(int socket_fd, void *buffer, size_t capacity, int *fd);

/// The local (`peer` 0) or remote (`peer` 1) address of a socket: family (4 or 6), 16 address
/// bytes (IPv4 in the first 4) and the port. Returns 0 or -errno.
int netext_socket_endpoint(int fd, int peer, int *family, unsigned char address[16], uint16_t *port);


// MARK: Flow relay (relay.c)

/// An event loop (epoll) that moves bytes between pairs of connected stream sockets inside the
/// kernel (non-blocking splice through a pipe per direction), connecting the upstream socket
/// itself where asked. One thread runs it (`netext_relay_run`); any thread adds pairs.
typedef struct netext_relay netext_relay;

/// What became of one pair: the bytes each way, and the errno that ended it (0: both sides
/// finished in order; ECONNREFUSED etc.: the upstream connection failed).
typedef struct {
    uint64_t id;
    long long app_to_upstream;
    long long upstream_to_app;
    int error;
} netext_relay_done;

/// A new loop, or NULL with errno set.
netext_relay *netext_relay_create(void);
/// Frees a loop whose `netext_relay_run` has returned -1 (stopped); closes what it still holds.
void netext_relay_destroy(netext_relay *relay);
/// Hands a pair to the loop: `app_fd` and `upstream_fd` (connected) are the loop's from now on,
/// closed when the pair ends. Returns 0 or -errno (then the caller still owns both).
int netext_relay_add(netext_relay *relay, uint64_t id, int app_fd, int upstream_fd);
/// Hands `app_fd` to the loop with an upstream the loop connects to (`family` 4 or 6, the
/// address bytes, `port`; `mark` nonzero: the upstream socket's SO_MARK, CAP_NET_ADMIN); a
/// failed connection resets the app's. Returns 0 or -errno.
int netext_relay_add_connect(netext_relay *relay, uint64_t id, int app_fd, int family, const unsigned char *address, uint16_t port, uint32_t mark);
/// Runs until at least one pair ended, then returns how many (their outcomes in `done`, at most
/// `capacity`), or -1 once `netext_relay_stop` was called.
int netext_relay_run(netext_relay *relay, netext_relay_done *done, int capacity);
/// Makes `netext_relay_run` return -1.
void netext_relay_stop(netext_relay *relay);

// MARK: Datagram relay (datagram_relay.c)

/// An event loop (epoll) that carries datagrams between pairs of connected UDP sockets, for the
/// UDP flows a transparent proxy declines. One thread runs it; any thread adds pairs.
typedef struct netext_datagram_relay netext_datagram_relay;

/// A new loop, or NULL with errno set.
netext_datagram_relay *netext_datagram_relay_create(void);
/// Hands `app_fd` (a connected UDP socket) to the loop with an upstream socket it makes and
/// connects to `family` (4 or 6) `address` `port` (`mark` nonzero: its SO_MARK), first sending
/// `first` (the flow's first datagram, `first_length` 0: none). Returns 0 or -errno (then the
/// caller still owns `app_fd`).
int netext_datagram_relay_add_connect(netext_datagram_relay *relay, uint64_t id, int app_fd, int family,
                                      const unsigned char *address, uint16_t port, uint32_t mark,
                                      const void *first, size_t first_length);
/// Runs until at least one pair went `idle_ms` without a datagram either way (it is then
/// closed), and returns how many (outcomes in `done`: bytes each way, the last socket error),
/// or -1 once `netext_datagram_relay_stop` was called.
int netext_datagram_relay_run(netext_datagram_relay *relay, netext_relay_done *done, int capacity, int idle_ms);
/// Makes `netext_datagram_relay_run` return -1.
void netext_datagram_relay_stop(netext_datagram_relay *relay);
/// Frees a loop whose run has returned -1; closes what it still holds.
void netext_datagram_relay_destroy(netext_datagram_relay *relay);

/// Receives one datagram on a transparent UDP socket (netext_tproxy_socket with `udp`): its
/// bytes, the sender (`source`) and where the sender addressed it (`destination`, from
/// IP_ORIGDSTADDR / IPV6_ORIGDSTADDR). Addresses: family 4 or 6, 16 bytes (IPv4 in the first 4).
/// Returns the length, or -errno (-EAGAIN: none waiting; -EBADMSG: no original destination).
ssize_t netext_udp_receive_original(int fd, void *buffer, size_t capacity,
                                    int *source_family, unsigned char source[16], uint16_t *source_port,
                                    unsigned char destination[16], uint16_t *destination_port);

/// A UDP socket that stands for one app flow: bound (IP_TRANSPARENT, SO_REUSEADDR) to the
/// address and port the app sent to, connected to the app's, so the kernel's `tproxy` lookup
/// gives it the flow's further datagrams and what is written on it reaches the app from where
/// the app expects. Blocking, close-on-exec. Returns the descriptor or -errno.
int netext_udp_flow_socket(int family, const unsigned char destination[16], uint16_t destination_port,
                           const unsigned char source[16], uint16_t source_port);
