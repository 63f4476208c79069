#define _GNU_SOURCE
#include "CNetExtLinux.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <spawn.h>
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


/// The system tools' spawn (`ip`, `nft`, … — netextd runs them often): `posix_spawn`, which glibc
/// does with `clone(CLONE_VM | CLONE_VFORK)`, so no page table of a large daemon is copied (a
/// `fork` of a 300 MB test process took ~13 ms and held its memory map's lock meanwhile, which
/// stalled every other thread of it). The child gets `stdin_fd` as 0, `output_fd` as 1 and 2,
/// nothing else open, no blocked signals, default dispositions, and a process group of its own
/// (so that it and what it starts can be signalled together). Returns the pid or -errno, also
/// when the exec failed (glibc reports that as posix_spawn's result).
pid_t netext_spawn_piped(const char *path, char *const argv[], char *const envp[], int stdin_fd, int output_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int err = posix_spawn_file_actions_init(&actions);
    if (err != 0) return -err;
    err = posix_spawnattr_init(&attributes);
    if (err != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -err;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    // Both pipes first go above either number, so that placing one cannot clobber the other
    // (a daemon started with 0-2 closed gets its pipes there); dup2 clears close-on-exec.
    int high = (stdin_fd > output_fd ? stdin_fd : output_fd) + 1;
    if ((err = posix_spawn_file_actions_adddup2(&actions, stdin_fd, high)) == 0
        && (err = posix_spawn_file_actions_adddup2(&actions, output_fd, high + 1)) == 0
        && (err = posix_spawn_file_actions_adddup2(&actions, high, 0)) == 0
        && (err = posix_spawn_file_actions_adddup2(&actions, high + 1, 1)) == 0
        && (err = posix_spawn_file_actions_adddup2(&actions, high + 1, 2)) == 0
        && (err = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0
        && (err = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) == 0
        && (err = posix_spawnattr_setpgroup(&attributes, 0)) == 0
        && (err = posix_spawnattr_setsigmask(&attributes, &none)) == 0
        && (err = posix_spawnattr_setsigdefault(&attributes, &all)) == 0) {
        pid_t pid;
        err = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        return err == 0 ? pid : -err;
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return -err;
}

int netext_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}
