/* The stdout/stderr sinks of the executor (see stream_sink.h). */
#include "stream_sink.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

struct stream_sink stream_sinks[2] = {
    {.lock = PTHREAD_MUTEX_INITIALIZER,
     .out_fd = 1,
     .capture_fd = -1,
     .pending = stream_sinks[0].bufs[0],
     .spare = stream_sinks[0].bufs[1]},
    {.lock = PTHREAD_MUTEX_INITIALIZER,
     .out_fd = 2,
     .capture_fd = -1,
     .pending = stream_sinks[1].bufs[0],
     .spare = stream_sinks[1].bufs[1]},
};

struct stream_sink *stream_sink_of_fd(int fd)
{
        return fd == 1 || fd == 2 ? &stream_sinks[fd - 1] : NULL;
}

void stream_sink_init(struct stream_sink *s, int out_fd)
{
        pthread_mutex_init(&s->lock, NULL); /* default attributes: cannot fail */
        s->out_fd = out_fd;
        s->out_nonblocking = 0;
        s->capture_fd = -1;
        s->watched = 0;
        s->watched_until = 0;
        s->pending = s->bufs[0];
        s->spare = s->bufs[1];
        s->len = 0;
}

void stream_sink_destroy(struct stream_sink *s)
{
        pthread_mutex_destroy(&s->lock);
}

void stream_sink_lock(struct stream_sink *s)
{
        pthread_mutex_lock(&s->lock);
}

void stream_sink_unlock(struct stream_sink *s)
{
        pthread_mutex_unlock(&s->lock);
}

/* Bytes waiting in pipe `fd`; 0 when it is not a pipe. */
static size_t pipe_unread(int fd)
{
        int n = 0;
        if (fd < 0 || ioctl(fd, FIONREAD, &n) < 0 || n < 0)
                return 0;
        return (size_t)n;
}

int stream_sink_unread(const struct stream_sink *s)
{
        return (int)pipe_unread(s->out_fd);
}

static uint64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with this clock */
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* First and longest sleep between two looks at the agent's pipes. */
#define DRAIN_FIRST_SLEEP_NS 4000
#define DRAIN_MAX_SLEEP_NS 100000

/* With the lock held. */
static void watch_locked(struct stream_sink *s)
{
        if (s->capture_fd < 0)
                return;
        s->watched = 1;
        s->watched_until = now_ns() + STREAM_SINK_WATCH_NS;
}

/* Writes what the fd takes of p[0..n): 0 when all of it, else a negative errno
 * (-EAGAIN: the nonblocking pipe is full), with *done saying how much went. */
static int write_some(int fd, const char *p, size_t n, size_t *done)
{
        *done = 0;
        while (*done < n) {
                ssize_t w = write(fd, p + *done, n - *done);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                *done += (size_t)w;
        }
        return 0;
}

/* With the lock held and nothing pending (a flush took it): the unwritten rest
 * of a write, first in line for the next flush. Bytes still in the capture
 * pipe must then not fall behind text written after them: watched. */
static int carry(struct stream_sink *s, const char *rest, size_t n, int rc)
{
        if (rc == -EAGAIN) {
                memcpy(s->pending, rest, n);
                s->len = n;
                watch_locked(s);
        }
        return rc;
}

int stream_sink_flush_locked(struct stream_sink *s)
{
        /* The pending text moves to the spare buffer, which is then free
         * again to read captured bytes through. Of those, no more than the
         * pipe holds now: a child writing without pause must not keep the
         * lock for ever. */
        char *text = s->pending;
        size_t len = s->len, done;
        size_t left = pipe_unread(s->capture_fd);
        s->pending = s->spare;
        s->spare = text;
        s->len = 0;
        int rc = write_some(s->out_fd, text, len, &done);
        if (rc < 0)
                return carry(s, text + done, len - done, rc);
        if (left > 0)
                watch_locked(s);
        while (left > 0) {
                size_t want = left < STREAM_SINK_BUFFER ? left : STREAM_SINK_BUFFER;
                ssize_t n = read(s->capture_fd, text, want);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* EAGAIN: taken already; 0: no writer left */
                left -= (size_t)n;
                rc = write_some(s->out_fd, text, (size_t)n, &done);
                if (rc < 0)
                        return carry(s, text + done, (size_t)n - done, rc);
        }
        return 0;
}

int stream_sink_flush(struct stream_sink *s)
{
        pthread_mutex_lock(&s->lock);
        int rc = stream_sink_flush_locked(s);
        pthread_mutex_unlock(&s->lock);
        return rc;
}

int stream_sink_wait_writable(struct stream_sink *s)
{
        struct pollfd p = {.fd = s->out_fd, .events = POLLOUT};
        return poll(&p, 1, -1) < 0 ? -errno : 0;
}

int stream_sink_flush_all(struct stream_sink *s)
{
        for (;;) {
                int rc = stream_sink_flush(s);
                if (rc != -EAGAIN)
                        return rc;
                rc = stream_sink_wait_writable(s);
                if (rc < 0 && rc != -EINTR)
                        return rc;
        }
}

int stream_sink_is_empty(struct stream_sink *s, int captured)
{
        if (pthread_mutex_trylock(&s->lock) != 0)
                return 0;
        int empty = s->len == 0 && (!captured || pipe_unread(s->capture_fd) == 0);
        pthread_mutex_unlock(&s->lock);
        return empty;
}

int stream_sink_can_buffer(struct stream_sink *s, size_t n)
{
        if (s->len + n > STREAM_SINK_BUFFER)
                return 0;
        if (!s->watched)
                return 1;
        if (now_ns() >= s->watched_until) {
                s->watched = 0;
                return 1;
        }
        return pipe_unread(s->capture_fd) == 0;
}

void stream_sink_watch(struct stream_sink *s)
{
        pthread_mutex_lock(&s->lock);
        watch_locked(s);
        pthread_mutex_unlock(&s->lock);
}

void stream_sink_put(struct stream_sink *s, const char *p, size_t n)
{
        memcpy(s->pending + s->len, p, n);
        s->len += n;
}

int stream_sink_try_append(struct stream_sink *s, const char *p, size_t n)
{
        if (pthread_mutex_trylock(&s->lock) != 0)
                return 0;
        int done = stream_sink_can_buffer(s, n);
        if (done)
                stream_sink_put(s, p, n);
        pthread_mutex_unlock(&s->lock);
        return done;
}

/* Nothing written to the agent's stdout and stderr pipes is left unread. */
static int agent_read_all(void)
{
        return stream_sink_unread(&stream_sinks[0]) == 0 &&
               stream_sink_unread(&stream_sinks[1]) == 0;
}

int stream_sinks_drained(void)
{
        return stream_sink_is_empty(&stream_sinks[0], 1) &&
               stream_sink_is_empty(&stream_sinks[1], 1) && agent_read_all();
}

int stream_sinks_wait_drained(uint64_t timeout_ns)
{
        /* Undeliverable output (the agent is gone) fails the send after this;
         * with the agent's pipe full, the rest goes once it reads (the wait). */
        (void)stream_sink_flush(&stream_sinks[0]);
        (void)stream_sink_flush(&stream_sinks[1]);
        uint64_t deadline = now_ns() + timeout_ns;
        long sleep_ns = DRAIN_FIRST_SLEEP_NS;
        for (;;) {
                if (agent_read_all())
                        return 1;
                if (now_ns() >= deadline)
                        return 0;
                struct timespec step = {.tv_sec = 0, .tv_nsec = sleep_ns};
                if (nanosleep(&step, NULL) < 0 && errno != EINTR)
                        return 0;
                sleep_ns = sleep_ns * 2 > DRAIN_MAX_SLEEP_NS ? DRAIN_MAX_SLEEP_NS : sleep_ns * 2;
        }
}
