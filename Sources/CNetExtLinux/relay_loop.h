// What the flow relay (relay.c) and the datagram relay (datagram_relay.c) share: an epoll set
// with an eventfd that wakes the loop thread when another thread queued work, a lock for that
// queue, and a flag that stops the loop. Private to CNetExtLinux.
#ifndef NETEXT_RELAY_LOOP_H
#define NETEXT_RELAY_LOOP_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int epoll;
    int wake;               // registered with a NULL data pointer
    pthread_mutex_t lock;   // guards the owner's queue of pending work
    atomic_bool stopping;
} relay_loop;

/// Opens the epoll set and the wake eventfd. Returns 0, or -1 with errno set (nothing left open).
int relay_loop_open(relay_loop *loop);
/// Wakes the loop thread (after queueing work, or to stop it).
void relay_loop_wake(relay_loop *loop);
/// Takes the wake-up (the loop thread, when epoll reported the eventfd).
void relay_loop_take_wake(relay_loop *loop);
/// Makes the loop stop at its next turn.
void relay_loop_stop(relay_loop *loop);
/// Closes what `relay_loop_open` opened.
void relay_loop_close(relay_loop *loop);

/// A non-blocking socket of `type` (SOCK_STREAM or SOCK_DGRAM) connecting to `family` (4 or 6)
/// `address` `port`, with SO_MARK `mark` when nonzero (set before its route is chosen). Returns
/// the descriptor, or -errno; a stream socket still connecting (EINPROGRESS) sets `*connecting`.
int relay_connect_upstream(int type, int family, const unsigned char *address, uint16_t port, uint32_t mark, bool *connecting);

#endif
