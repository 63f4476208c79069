// The epoll set and wake-up shared by the flow relay and the datagram relay (relay_loop.h).
#define _GNU_SOURCE
#include "relay_loop.h"
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int relay_loop_open(relay_loop *loop) {
    loop->epoll = epoll_create1(EPOLL_CLOEXEC);
    loop->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->epoll < 0 || loop->wake < 0) {
        int error = errno;
        if (loop->epoll >= 0) close(loop->epoll);
        if (loop->wake >= 0) close(loop->wake);
        errno = error;
        return -1;
    }
    pthread_mutex_init(&loop->lock, NULL);
    atomic_store(&loop->stopping, false);
    struct epoll_event event = { .events = EPOLLIN, .data.ptr = NULL };
    epoll_ctl(loop->epoll, EPOLL_CTL_ADD, loop->wake, &event);
    return 0;
}

void relay_loop_wake(relay_loop *loop) {
    uint64_t one = 1;
    ssize_t written = write(loop->wake, &one, sizeof(one));
    (void)written;
}

void relay_loop_take_wake(relay_loop *loop) {
    uint64_t value;
    ssize_t got = read(loop->wake, &value, sizeof(value));
    (void)got;
}

void relay_loop_stop(relay_loop *loop) {
    atomic_store(&loop->stopping, true);
    relay_loop_wake(loop);
}

void relay_loop_close(relay_loop *loop) {
    close(loop->epoll);
    close(loop->wake);
    pthread_mutex_destroy(&loop->lock);
}

int relay_connect_upstream(int type, int family, const unsigned char *address, uint16_t port, uint32_t mark, bool *connecting) {
    int upstream = socket(family == 6 ? AF_INET6 : AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (upstream < 0) return -errno;
    if (mark != 0 && setsockopt(upstream, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0) {
        int error = errno;
        close(upstream);
        return -error;
    }
    int result;
    if (family == 6) {
        struct sockaddr_in6 target = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
        memcpy(&target.sin6_addr, address, 16);
        result = connect(upstream, (struct sockaddr *)&target, sizeof(target));
    } else {
        struct sockaddr_in target = { .sin_family = AF_INET, .sin_port = htons(port) };
        memcpy(&target.sin_addr, address, 4);
        result = connect(upstream, (struct sockaddr *)&target, sizeof(target));
    }
    *connecting = result < 0 && errno == EINPROGRESS;
    if (result < 0 && !*connecting) {
        int error = errno;
        close(upstream);
        return -error;
    }
    return upstream;
}
