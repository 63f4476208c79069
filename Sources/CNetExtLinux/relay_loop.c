// The epoll set and wake-up shared by the flow relay and the datagram relay (relay_loop.h).
#define _GNU_SOURCE
#include "relay_loop.h"
#include <errno.h>
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
