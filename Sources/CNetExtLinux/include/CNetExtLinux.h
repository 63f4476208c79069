#pragma once
#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>

/// Peer credentials of a connected Unix socket (SO_PEERCRED). Returns 0 or -errno.
int netext_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

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
