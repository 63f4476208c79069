// The flow relay: an epoll loop that moves each pair's bytes, half-closes in order (a side that
// finished sending is shut down for writing on the other), and connects upstream sockets
// without blocking (connect(2) EINPROGRESS, then SO_ERROR).
//
// A direction starts by copying (recv into the loop's buffer, send): a short request or answer
// costs two calls and no pipe. The first read that fills the buffer marks the direction as bulk,
// and from then on its bytes move with non-blocking splice(2) through a pipe (they stay in the
// kernel). A copy the destination cannot take whole goes into the pipe, which then drains by
// splice like any other. Pipes come from a pool the loop keeps: one a pair finished with empty
// (FIONREAD 0) is used again, so a short flow makes no pipe and a bulk one rarely does.
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define DIRECTION_CHUNK (1 << 20)
#define RELAY_PIPE_SIZE (256 << 10)
/// Reads up to this size are copied; one this size (more may wait) makes the direction bulk.
/// Smaller than any pipe (64 KiB at least), so an empty pipe takes an unsent rest whole.
#define COPY_LIMIT (16 << 10)
/// Empty pipes kept for later pairs.
#define PIPE_POOL_SIZE 64

typedef struct relay_pair relay_pair;

typedef struct {
    int from;
    int to;
    int pipe[2];         // -1 until the direction needs one
    bool bulk;           // a read filled the copy buffer: splice from now on
    size_t buffered;     // bytes in the pipe
    bool from_ended;     // `from` sent its end
    bool finished;       // the end was passed on (`to` shut down for writing)
    long long moved;
} relay_direction;

typedef struct {
    relay_pair *pair;
} relay_handle;

struct relay_pair {
    uint64_t id;
    int app;
    int upstream;
    bool connecting;
    bool ended;
    int error;
    relay_direction out;   // app → upstream
    relay_direction in;    // upstream → app
    relay_handle app_handle;
    relay_handle upstream_handle;
    relay_pair *next_pending;
    relay_pair *previous_live;
    relay_pair *next_live;
};

struct netext_relay {
    relay_loop loop;
    relay_pair *pending;     // added, not yet registered (guarded by loop.lock)
    relay_pair *live;        // registered (the loop thread's alone)
    netext_relay_done *completed;
    int completed_count;
    int completed_capacity;
    int pool[PIPE_POOL_SIZE][2];   // empty pipes (the loop thread's alone)
    int pool_count;
    unsigned char copy[COPY_LIMIT];
};

static void link_live(netext_relay *relay, relay_pair *pair) {
    pair->previous_live = NULL;
    pair->next_live = relay->live;
    if (relay->live) relay->live->previous_live = pair;
    relay->live = pair;
}

static void unlink_live(netext_relay *relay, relay_pair *pair) {
    if (pair->previous_live) pair->previous_live->next_live = pair->next_live; else relay->live = pair->next_live;
    if (pair->next_live) pair->next_live->previous_live = pair->previous_live;
    pair->previous_live = pair->next_live = NULL;
}

/// Records a pair's outcome; false if there is no memory for it (it is then lost).
static bool push_completed(netext_relay *relay, relay_pair *pair) {
    if (relay->completed_count == relay->completed_capacity) {
        int capacity = relay->completed_capacity ? relay->completed_capacity * 2 : 64;
        netext_relay_done *grown = realloc(relay->completed, (size_t)capacity * sizeof(*grown));
        if (!grown) return false;
        relay->completed = grown;
        relay->completed_capacity = capacity;
    }
    relay->completed[relay->completed_count++] = (netext_relay_done){ pair->id, pair->out.moved, pair->in.moved, pair->error };
    return true;
}

/// Gives `direction` a pipe (from the pool, else a new one). False with errno set if none.
static bool take_pipe(netext_relay *relay, relay_direction *direction) {
    if (direction->pipe[0] >= 0) return true;
    if (relay->pool_count > 0) {
        relay->pool_count -= 1;
        direction->pipe[0] = relay->pool[relay->pool_count][0];
        direction->pipe[1] = relay->pool[relay->pool_count][1];
        return true;
    }
    if (pipe2(direction->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        direction->pipe[0] = direction->pipe[1] = -1;
        return false;
    }
    // Larger pipes move a bulk flow in fewer calls; past the user's pipe page limit the kernel
    // refuses and the default size stays.
    fcntl(direction->pipe[1], F_SETPIPE_SZ, RELAY_PIPE_SIZE);
    return true;
}

/// Returns a direction's pipe to the pool when it is empty (a pipe holding a failed pair's bytes
/// is closed: no byte of one flow may reach another).
static void release_pipe(netext_relay *relay, relay_direction *direction) {
    if (direction->pipe[0] < 0) return;
    int waiting = -1;
    if (relay && relay->pool_count < PIPE_POOL_SIZE && ioctl(direction->pipe[0], FIONREAD, &waiting) == 0 && waiting == 0) {
        relay->pool[relay->pool_count][0] = direction->pipe[0];
        relay->pool[relay->pool_count][1] = direction->pipe[1];
        relay->pool_count += 1;
    } else {
        close(direction->pipe[0]);
        close(direction->pipe[1]);
    }
    direction->pipe[0] = direction->pipe[1] = -1;
}

/// Closes a pair's sockets and frees it; its pipes go back to `relay`'s pool where they can
/// (NULL: closed).
static void free_pair(netext_relay *relay, relay_pair *pair, bool reset) {
    // A reset on failure; an orderly close otherwise, even on a socket handed over set to reset
    // when closed (netextd sets that, so that a provider's death resets its apps' connections).
    // (The upstream socket is the relay's own or the provider's, never set to reset: it needs
    // the option only for a reset.)
    {
        struct linger linger = { .l_onoff = reset ? 1 : 0, .l_linger = 0 };
        if (pair->app >= 0) setsockopt(pair->app, SOL_SOCKET, SO_LINGER, &linger, sizeof(linger));
        if (reset && pair->upstream >= 0) setsockopt(pair->upstream, SOL_SOCKET, SO_LINGER, &linger, sizeof(linger));
    }
    if (pair->app >= 0) close(pair->app);
    if (pair->upstream >= 0) close(pair->upstream);
    release_pipe(relay, &pair->out);
    release_pipe(relay, &pair->in);
    free(pair);
}

netext_relay *netext_relay_create(void) {
    netext_relay *relay = calloc(1, sizeof(*relay));
    if (!relay) return NULL;
    if (relay_loop_open(&relay->loop) < 0) {
        int error = errno;
        free(relay);
        errno = error;
        return NULL;
    }
    return relay;
}

static relay_pair *new_pair(uint64_t id, int app, int upstream) {
    relay_pair *pair = calloc(1, sizeof(*pair));
    if (!pair) return NULL;
    pair->id = id;
    pair->app = app;
    pair->upstream = upstream;
    pair->out = (relay_direction){ .from = app, .to = upstream, .pipe = { -1, -1 } };
    pair->in = (relay_direction){ .from = upstream, .to = app, .pipe = { -1, -1 } };
    pair->app_handle.pair = pair;
    pair->upstream_handle.pair = pair;
    return pair;
}

static int queue_pair(netext_relay *relay, relay_pair *pair) {
    pthread_mutex_lock(&relay->loop.lock);
    pair->next_pending = relay->pending;
    relay->pending = pair;
    pthread_mutex_unlock(&relay->loop.lock);
    relay_loop_wake(&relay->loop);
    return 0;
}

static void set_nonblocking(int fd) {
    int on = 1;
    ioctl(fd, FIONBIO, &on);
}

int netext_relay_add(netext_relay *relay, uint64_t id, int app_fd, int upstream_fd) {
    relay_pair *pair = new_pair(id, app_fd, upstream_fd);
    if (!pair) return -errno;
    set_nonblocking(app_fd);
    set_nonblocking(upstream_fd);
    return queue_pair(relay, pair);
}

int netext_relay_add_connect(netext_relay *relay, uint64_t id, int app_fd, int family, const unsigned char *address, uint16_t port, uint32_t mark) {
    bool connecting = false;
    int upstream = relay_connect_upstream(SOCK_STREAM, family, address, port, mark, &connecting);
    if (upstream < 0) return upstream;
    relay_pair *pair = new_pair(id, app_fd, upstream);
    if (!pair) {
        int error = errno;
        close(upstream);
        return -error;
    }
    pair->connecting = connecting;
    set_nonblocking(app_fd);
    return queue_pair(relay, pair);
}

/// Copies what `from` has waiting (at most COPY_LIMIT) to `to`; a rest `to` cannot take now goes
/// into the direction's pipe. False on a failure (`pair->error` set).
static bool copy_once(netext_relay *relay, relay_pair *pair, relay_direction *direction, bool *moved) {
    ssize_t in = recv(direction->from, relay->copy, COPY_LIMIT, MSG_DONTWAIT);
    if (in == 0) {
        direction->from_ended = true;
        *moved = true;
        return true;
    }
    if (in < 0) {
        if (errno == EAGAIN || errno == EINTR) return true;
        pair->error = errno;
        return false;
    }
    if (in == COPY_LIMIT) direction->bulk = true;
    ssize_t out = send(direction->to, relay->copy, (size_t)in, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (out < 0) {
        if (errno != EAGAIN && errno != EINTR) {
            pair->error = errno;
            return false;
        }
        out = 0;
    }
    direction->moved += out;
    *moved = true;
    if (out == in) return true;
    // The pipe is empty here (a copy happens only then) and larger than COPY_LIMIT: it takes
    // the whole rest.
    if (!take_pipe(relay, direction)) {
        pair->error = errno;
        return false;
    }
    ssize_t kept = write(direction->pipe[1], relay->copy + out, (size_t)(in - out));
    if (kept != in - out) {
        pair->error = kept < 0 ? errno : EIO;
        return false;
    }
    direction->buffered += (size_t)kept;
    return true;
}

/// Moves what can be moved in one direction without blocking. Returns false on a failure
/// (`pair->error` set).
static bool pump(netext_relay *relay, relay_pair *pair, relay_direction *direction, bool *progressed) {
    for (;;) {
        bool moved = false;
        if (!direction->from_ended && !direction->bulk && direction->buffered == 0) {
            if (!copy_once(relay, pair, direction, &moved)) return false;
        } else if (!direction->from_ended && direction->bulk && direction->buffered < DIRECTION_CHUNK) {
            if (!take_pipe(relay, direction)) {
                pair->error = errno;
                return false;
            }
            ssize_t in = splice(direction->from, NULL, direction->pipe[1], NULL, DIRECTION_CHUNK - direction->buffered, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (in > 0) {
                direction->buffered += (size_t)in;
                moved = true;
            } else if (in == 0) {
                direction->from_ended = true;
                moved = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                pair->error = errno;
                return false;
            }
        }
        if (direction->buffered > 0) {
            ssize_t out = splice(direction->pipe[0], NULL, direction->to, NULL, direction->buffered, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (out > 0) {
                direction->buffered -= (size_t)out;
                direction->moved += out;
                moved = true;
            } else if (out < 0 && errno != EAGAIN && errno != EINTR) {
                pair->error = errno;
                return false;
            }
        }
        if (direction->from_ended && direction->buffered == 0 && !direction->finished) {
            direction->finished = true;
            shutdown(direction->to, SHUT_WR);
            moved = true;
        }
        if (!moved) return true;
        *progressed = true;
    }
}

static int register_pair(netext_relay *relay, relay_pair *pair) {
    struct epoll_event app_event = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = &pair->app_handle };
    struct epoll_event upstream_event = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = &pair->upstream_handle };
    if (epoll_ctl(relay->loop.epoll, EPOLL_CTL_ADD, pair->app, &app_event) < 0) return -errno;
    if (epoll_ctl(relay->loop.epoll, EPOLL_CTL_ADD, pair->upstream, &upstream_event) < 0) {
        int error = errno;
        epoll_ctl(relay->loop.epoll, EPOLL_CTL_DEL, pair->app, NULL);
        return -error;
    }
    return 0;
}

/// Advances a pair after an event; true once it has ended.
static bool advance(netext_relay *relay, relay_pair *pair) {
    if (pair->connecting) {
        int error = 0;
        socklen_t length = sizeof(error);
        if (getsockopt(pair->upstream, SOL_SOCKET, SO_ERROR, &error, &length) < 0) error = errno;
        if (error == EINPROGRESS || error == EALREADY) return false;
        if (error != 0) {
            pair->error = error;
            return true;
        }
        // Still in progress when no error is reported yet and the socket is not writable:
        // the peer name exists only once connected.
        struct sockaddr_storage peer;
        socklen_t peer_length = sizeof(peer);
        if (getpeername(pair->upstream, (struct sockaddr *)&peer, &peer_length) < 0) return false;
        pair->connecting = false;
    }
    bool progressed = true;
    while (progressed) {
        progressed = false;
        if (!pump(relay, pair, &pair->out, &progressed) || !pump(relay, pair, &pair->in, &progressed)) return true;
    }
    return pair->out.finished && pair->in.finished;
}

/// Ends a registered pair: out of epoll and the live list, its outcome recorded. The memory is
/// freed by the caller once no event of the current batch can name it.
static void end_pair(netext_relay *relay, relay_pair *pair) {
    pair->ended = true;
    epoll_ctl(relay->loop.epoll, EPOLL_CTL_DEL, pair->app, NULL);
    epoll_ctl(relay->loop.epoll, EPOLL_CTL_DEL, pair->upstream, NULL);
    unlink_live(relay, pair);
    push_completed(relay, pair);
}

int netext_relay_run(netext_relay *relay, netext_relay_done *done, int capacity) {
    struct epoll_event events[64];
    while (relay->completed_count == 0) {
        if (atomic_load(&relay->loop.stopping)) return -1;
        int ready = epoll_wait(relay->loop.epoll, events, 64, 1000);
        if (ready < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        for (int index = 0; index < ready; index++) {
            relay_handle *handle = events[index].data.ptr;
            if (handle == NULL) {
                relay_loop_take_wake(&relay->loop);
                pthread_mutex_lock(&relay->loop.lock);
                relay_pair *pending = relay->pending;
                relay->pending = NULL;
                pthread_mutex_unlock(&relay->loop.lock);
                while (pending) {
                    relay_pair *pair = pending;
                    pending = pair->next_pending;
                    int result = register_pair(relay, pair);
                    link_live(relay, pair);
                    if (result < 0) pair->error = -result;
                    if (result < 0 || advance(relay, pair)) {
                        // Registered in this batch: no event of it can follow; freed now.
                        end_pair(relay, pair);
                        free_pair(relay, pair, pair->error != 0);
                    }
                }
                continue;
            }
            relay_pair *pair = handle->pair;
            if (!pair->ended && advance(relay, pair)) end_pair(relay, pair);
        }
        // The pairs that ended in this batch are freed once all its events were seen (both of a
        // pair's sockets may have had one).
        for (int index = 0; index < ready; index++) {
            relay_handle *handle = events[index].data.ptr;
            if (handle == NULL || !handle->pair->ended) continue;
            relay_pair *pair = handle->pair;
            for (int later = index + 1; later < ready; later++) {
                relay_handle *other = events[later].data.ptr;
                if (other && other->pair == pair) events[later].data.ptr = NULL;
            }
            free_pair(relay, pair, pair->error != 0);
        }
    }
    int count = relay->completed_count < capacity ? relay->completed_count : capacity;
    memcpy(done, relay->completed, (size_t)count * sizeof(*done));
    memmove(relay->completed, relay->completed + count, (size_t)(relay->completed_count - count) * sizeof(*done));
    relay->completed_count -= count;
    return count;
}

void netext_relay_stop(netext_relay *relay) {
    relay_loop_stop(&relay->loop);
}

void netext_relay_destroy(netext_relay *relay) {
    while (relay->live) {
        relay_pair *pair = relay->live;
        unlink_live(relay, pair);
        free_pair(NULL, pair, true);
    }
    while (relay->pending) {
        relay_pair *pair = relay->pending;
        relay->pending = pair->next_pending;
        free_pair(NULL, pair, true);
    }
    for (int index = 0; index < relay->pool_count; index++) {
        close(relay->pool[index][0]);
        close(relay->pool[index][1]);
    }
    relay_loop_close(&relay->loop);
    free(relay->completed);
    free(relay);
}
