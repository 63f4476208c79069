// The datagram relay: an epoll loop that carries datagrams between pairs of connected UDP
// sockets — a flow's socket (bound to where the app sent, connected to the app) and an upstream
// socket connected to that destination — one recv/send at a time, without a thread per flow.
// UDP has no end: a pair ends after `idle_ms` without a datagram either way.
#define _GNU_SOURCE
#include "CNetExtLinux.h"
#include "relay_loop.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DATAGRAM_MAXIMUM 65536
/// At most this many datagrams are moved per socket per wake, so one busy flow cannot hold the
/// loop from the others.
#define DATAGRAM_BATCH 64

typedef struct datagram_pair datagram_pair;

typedef struct {
    datagram_pair *pair;
    bool upstream_side;
} datagram_handle;

struct datagram_pair {
    uint64_t id;
    int app;
    int upstream;
    long long app_to_upstream;
    long long upstream_to_app;
    int error;
    long long last_active_ms;
    datagram_handle app_handle;
    datagram_handle upstream_handle;
    datagram_pair *next_pending;
    datagram_pair *previous_live;
    datagram_pair *next_live;
};

struct netext_datagram_relay {
    relay_loop loop;
    datagram_pair *pending;   // added, not yet registered (guarded by loop.lock)
    datagram_pair *live;      // registered (the loop thread's alone)
    unsigned char buffer[DATAGRAM_MAXIMUM];
};

static long long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

netext_datagram_relay *netext_datagram_relay_create(void) {
    netext_datagram_relay *relay = calloc(1, sizeof(*relay));
    if (!relay) return NULL;
    if (relay_loop_open(&relay->loop) < 0) {
        int error = errno;
        free(relay);
        errno = error;
        return NULL;
    }
    return relay;
}

int netext_datagram_relay_add_connect(netext_datagram_relay *relay, uint64_t id, int app_fd, int family,
                                      const unsigned char *address, uint16_t port, uint32_t mark,
                                      const void *first, size_t first_length) {
    bool connecting = false;
    int upstream = relay_connect_upstream(SOCK_DGRAM, family, address, port, mark, &connecting);
    if (upstream < 0) return upstream;
    datagram_pair *pair = calloc(1, sizeof(*pair));
    if (!pair) {
        close(upstream);
        return -ENOMEM;
    }
    pair->id = id;
    pair->app = app_fd;
    pair->upstream = upstream;
    pair->last_active_ms = now_ms();
    pair->app_handle = (datagram_handle){ pair, false };
    pair->upstream_handle = (datagram_handle){ pair, true };
    fcntl(app_fd, F_SETFL, fcntl(app_fd, F_GETFL) | O_NONBLOCK);
    // The flow's first datagram reached netextd's listener, not the flow's socket: it goes now.
    if (first_length > 0) {
        if (send(upstream, first, first_length, MSG_DONTWAIT) >= 0) pair->app_to_upstream += (long long)first_length;
        else if (errno != EAGAIN && errno != EWOULDBLOCK) pair->error = errno;
    }
    pthread_mutex_lock(&relay->loop.lock);
    pair->next_pending = relay->pending;
    relay->pending = pair;
    pthread_mutex_unlock(&relay->loop.lock);
    relay_loop_wake(&relay->loop);
    return 0;
}

/// Closes both of a pair's sockets and frees it.
static void free_pair(datagram_pair *pair) {
    close(pair->app);
    close(pair->upstream);
    free(pair);
}

static void unlink_live(netext_datagram_relay *relay, datagram_pair *pair) {
    if (pair->previous_live) pair->previous_live->next_live = pair->next_live; else relay->live = pair->next_live;
    if (pair->next_live) pair->next_live->previous_live = pair->previous_live;
}

/// Moves up to a batch of datagrams from one side to the other. A datagram the other side cannot
/// take now is dropped, as a router would drop it. An error queued on the source (ICMP port
/// unreachable: ECONNREFUSED) is recorded and the pair goes on: UDP peers come and go.
static void pump(netext_datagram_relay *relay, datagram_pair *pair, bool from_upstream) {
    int from = from_upstream ? pair->upstream : pair->app;
    int to = from_upstream ? pair->app : pair->upstream;
    for (int count = 0; count < DATAGRAM_BATCH; count++) {
        ssize_t received = recv(from, relay->buffer, sizeof(relay->buffer), MSG_DONTWAIT);
        if (received < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if (errno != EINTR) pair->error = errno;
            continue;
        }
        pair->last_active_ms = now_ms();
        if (send(to, relay->buffer, (size_t)received, MSG_DONTWAIT) >= 0) {
            if (from_upstream) pair->upstream_to_app += received; else pair->app_to_upstream += received;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            // An error queued on the destination side (a port unreachable) surfaces on a send.
            pair->error = errno;
        }
    }
}

int netext_datagram_relay_run(netext_datagram_relay *relay, netext_relay_done *done, int capacity, int idle_ms) {
    struct epoll_event events[64];
    long long last_sweep = now_ms();
    for (;;) {
        if (atomic_load(&relay->loop.stopping)) return -1;
        int ready = epoll_wait(relay->loop.epoll, events, 64, 1000);
        if (ready < 0 && errno != EINTR) return -1;
        for (int index = 0; index < ready; index++) {
            datagram_handle *handle = events[index].data.ptr;
            if (handle == NULL) {
                relay_loop_take_wake(&relay->loop);
                pthread_mutex_lock(&relay->loop.lock);
                datagram_pair *pending = relay->pending;
                relay->pending = NULL;
                pthread_mutex_unlock(&relay->loop.lock);
                while (pending) {
                    datagram_pair *pair = pending;
                    pending = pair->next_pending;
                    struct epoll_event app_event = { .events = EPOLLIN, .data.ptr = &pair->app_handle };
                    struct epoll_event upstream_event = { .events = EPOLLIN, .data.ptr = &pair->upstream_handle };
                    epoll_ctl(relay->loop.epoll, EPOLL_CTL_ADD, pair->app, &app_event);
                    epoll_ctl(relay->loop.epoll, EPOLL_CTL_ADD, pair->upstream, &upstream_event);
                    pair->previous_live = NULL;
                    pair->next_live = relay->live;
                    if (relay->live) relay->live->previous_live = pair;
                    relay->live = pair;
                }
                continue;
            }
            pump(relay, handle->pair, handle->upstream_side);
        }
        // Pairs are ended only here, after the batch's events were handled: no event of a
        // freed pair can follow in the same batch.
        long long now = now_ms();
        if (now - last_sweep < 1000 && !atomic_load(&relay->loop.stopping)) continue;
        last_sweep = now;
        int count = 0;
        datagram_pair *pair = relay->live;
        while (pair && count < capacity) {
            datagram_pair *next = pair->next_live;
            if (now - pair->last_active_ms >= idle_ms) {
                unlink_live(relay, pair);
                done[count++] = (netext_relay_done){ pair->id, pair->app_to_upstream, pair->upstream_to_app, pair->error };
                free_pair(pair);
            }
            pair = next;
        }
        if (count > 0) return count;
    }
}

void netext_datagram_relay_stop(netext_datagram_relay *relay) {
    relay_loop_stop(&relay->loop);
}

void netext_datagram_relay_destroy(netext_datagram_relay *relay) {
    while (relay->live) {
        datagram_pair *pair = relay->live;
        relay->live = pair->next_live;
        free_pair(pair);
    }
    while (relay->pending) {
        datagram_pair *pair = relay->pending;
        relay->pending = pair->next_pending;
        free_pair(pair);
    }
    relay_loop_close(&relay->loop);
    free(relay);
}
