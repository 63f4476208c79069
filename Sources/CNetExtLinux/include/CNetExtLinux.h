#pragma once
#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>

/// Starts `path` with `argv`/`envp` as user `uid`/`gid` (no supplementary groups), with
/// `fd3` and `fd4` (each -1 for none) duplicated onto descriptors 3 and 4 and every other
/// descriptor above 2 closed. stdin is /dev/null; stdout and stderr are inherited. A new process
/// group is created. Returns the child's pid or -errno.
pid_t netext_spawn(const char *path, char *const argv[], char *const envp[],
                   uid_t uid, gid_t gid, int drop_privileges, int fd3, int fd4);

/// Opens /dev/net/tun and attaches a TUN interface (IFF_TUN | IFF_NO_PI). `name` (at least 16
/// bytes) holds the requested name or pattern such as "netext%d" and receives the real name.
/// Returns the descriptor or -errno.
int netext_tun_open(char *name);

/// Sends one byte with a file descriptor attached (SCM_RIGHTS). Returns 0 or -errno.
int netext_send_fd(int socket_fd, int fd_to_send);

/// Receives a file descriptor sent with netext_send_fd. Returns the fd or -errno.
int netext_receive_fd(int socket_fd);

/// A connected AF_UNIX SOCK_STREAM pair, both close-on-exec. Returns 0 or -errno.
int netext_socketpair(int fds[2]);

/// The local address a datagram arrived at (from IP_PKTINFO / IPV6_PKTINFO), so that a reply can
/// leave from the same address on a host with several.
typedef struct {
    int family;            // AF_INET, AF_INET6, or 0 if unknown
    int ifindex;
    unsigned char address[16];
} netext_local_address;

/// Asks the kernel to report each datagram's destination address. Returns 0 or -errno.
int netext_udp_enable_pktinfo(int fd, int ipv6);

/// recvmsg: fills `from` and `local`; returns the length or -errno.
long netext_udp_receive(int fd, void *buffer, unsigned long length, struct sockaddr_storage *from, socklen_t *from_length, netext_local_address *local);

/// sendmsg to `to`, from `local` when its family is set. Returns the length or -errno.
long netext_udp_send(int fd, const void *buffer, unsigned long length, const struct sockaddr *to, socklen_t to_length, const netext_local_address *local);
