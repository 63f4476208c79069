#define _GNU_SOURCE
#include "CNetExtLinux.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/wait.h>

/// Creates the close-on-exec pipe a child reports a failed exec through, and forks. Returns the
/// pid (0 in the child) or -errno; on failure nothing is left open.
static pid_t fork_with_report(int report[2]) {
    if (pipe2(report, O_CLOEXEC) != 0) return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        return -saved;
    }
    return pid;
}

/// In the child: no blocked signals (the spawning thread's mask is inherited), and a process
/// group of its own (so that it and what it starts can be signalled together).
static void reset_child(void) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
}

/// In the parent: waits until the child has exec'd (the report pipe closes) or reported why it
/// could not (then it is reaped and -errno returned).
static pid_t await_exec(pid_t pid, int report[2]) {
    close(report[1]);
    int child_error = 0;
    ssize_t n;
    do { n = read(report[0], &child_error, sizeof(child_error)); } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == sizeof(child_error) && child_error != 0) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return -child_error;
    }
    return pid;
}

pid_t netext_spawn(const char *path, char *const argv[], char *const envp[],
                   uid_t uid, gid_t gid, int flags, int fd3, int fd4) {
    int report[2];
    pid_t pid = fork_with_report(report);
    if (pid < 0) return pid;
    if (pid == 0) {
        // Child: only async-signal-safe calls from here to execve.
        int err = 0;
        reset_child();
        // Move the report pipe and both descriptors above the range we fill, so placing one
        // cannot clobber another.
        int rep = fcntl(report[1], F_DUPFD_CLOEXEC, 100);
        if (rep < 0) _exit(127);
        int high3 = fd3 >= 0 ? fcntl(fd3, F_DUPFD, 100) : -1;
        int high4 = fd4 >= 0 ? fcntl(fd4, F_DUPFD, 100) : -1;
        if ((fd3 >= 0 && high3 < 0) || (fd4 >= 0 && high4 < 0)) { err = errno; goto fail; }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) { dup2(devnull, 0); if (devnull != 0) close(devnull); }
        if (high3 >= 0 && dup2(high3, 3) < 0) { err = errno; goto fail; }
        if (high4 >= 0 && dup2(high4, 4) < 0) { err = errno; goto fail; }
        // Close everything else except the report pipe (close-on-exec, it reports exec failures).
        unsigned int first_closed = high4 >= 0 ? 5 : (high3 >= 0 ? 4 : 3);
        if ((unsigned int)rep > first_closed) syscall(SYS_close_range, first_closed, (unsigned int)rep - 1, 0);
        syscall(SYS_close_range, (unsigned int)rep + 1, ~0U, 0);
        // A network namespace of its own (nothing in it but a loopback that is down): the child
        // can open sockets but reach nothing. Done while still root.
        if ((flags & NETEXT_SPAWN_ISOLATE_NETWORK) && unshare(CLONE_NEWNET) != 0) { err = errno; goto fail; }
        if (flags & NETEXT_SPAWN_DROP_PRIVILEGES) {
            if (setgroups(0, NULL) != 0) { err = errno; goto fail; }
            if (setresgid(gid, gid, gid) != 0) { err = errno; goto fail; }
            if (setresuid(uid, uid, uid) != 0) { err = errno; goto fail; }
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        }
        execve(path, argv, envp);
        err = errno;
    fail:
        (void)!write(rep, &err, sizeof(err));
        _exit(127);
    }
    return await_exec(pid, report);
}

int netext_send_fd(int socket_fd, int fd_to_send) {
    char byte = 'F';
    return netext_send_fd_message(socket_fd, fd_to_send, &byte, 1);
}

int netext_receive_fd(int socket_fd) {
    char byte;
    struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer) };
    ssize_t received;
    do { received = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC); } while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    if (received == 0) return -ECONNRESET;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (header == NULL || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) return -EBADMSG;
    int fd;
    memcpy(&fd, CMSG_DATA(header), sizeof(int));
    return fd;
}

int netext_socketpair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0 ? 0 : -errno;
}

int netext_socketpair_packets(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0 ? 0 : -errno;
}

#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <sys/ioctl.h>

int netext_tun_open(char *name, int offload) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct ifreq request;
    memset(&request, 0, sizeof(request));
    request.ifr_flags = IFF_TUN | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0);
    strncpy(request.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &request) < 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    if (offload) {
        // The kernel may then hand us TCP segments of up to 64 KiB with a partial checksum
        // (Documentation/networking/tuntap.rst; include/uapi/linux/if_tun.h).
        int header_size = sizeof(struct virtio_net_hdr);
        unsigned int features = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
        if (ioctl(fd, TUNSETVNETHDRSZ, &header_size) < 0 || ioctl(fd, TUNSETOFFLOAD, features) < 0) {
            int saved = errno;
            close(fd);
            return -saved;
        }
    }
    strncpy(name, request.ifr_name, IFNAMSIZ);
    return fd;
}

int netext_tun_has_vnet_header(int fd) {
    struct ifreq request;
    memset(&request, 0, sizeof(request));
    if (ioctl(fd, TUNGETIFF, &request) < 0) return -errno;
    return (request.ifr_flags & IFF_VNET_HDR) ? 1 : 0;
}


pid_t netext_spawn_piped(const char *path, char *const argv[], char *const envp[], int stdin_fd, int output_fd) {
    int report[2];
    pid_t pid = fork_with_report(report);
    if (pid < 0) return pid;
    if (pid == 0) {
        // Child: only async-signal-safe calls from here to execve.
        int err = 0;
        reset_child();
        int rep = fcntl(report[1], F_DUPFD_CLOEXEC, 100);
        int in = fcntl(stdin_fd, F_DUPFD, 100);
        int out = fcntl(output_fd, F_DUPFD, 100);
        if (rep < 0 || in < 0 || out < 0) { err = errno; goto fail; }
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) { err = errno; goto fail; }
        syscall(SYS_close_range, 3, (unsigned int)rep - 1, 0);
        syscall(SYS_close_range, (unsigned int)rep + 1, ~0U, 0);
        execve(path, argv, envp);
        err = errno;
    fail:
        if (rep >= 0) (void)!write(rep, &err, sizeof(err));
        _exit(127);
    }
    return await_exec(pid, report);
}

int netext_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}
