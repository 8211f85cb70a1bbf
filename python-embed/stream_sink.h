/*
 * Where a cell's stdout (and stderr) bytes meet on their way to the agent's
 * pipe: the text Python prints (sys.stdout, an OutStream, buffered here) and
 * what C code, os.write() and child processes write to fd 1 (captured through
 * a pipe, fd_capture.h). They leave in the order they were written: text is
 * only buffered while the capture pipe is empty, so captured bytes never wait
 * behind text written after them, nor text behind bytes written after it.
 *
 * Looking at the pipe costs a system call (~0.3 us, more than a print), so a
 * sink looks only while it is "watched": for 100 ms after bytes were
 * captured or Python was about to write the fd or start a child process
 * (os.write, subprocess). Text printed within microseconds after a C
 * extension's first write to the fd after a quiet spell can still come out
 * before it (ipykernel keeps this order no better).
 *
 * One sink per stream, each under its own mutex, which is never held while
 * waiting for anything (the GIL, the agent): Python's threads take it with
 * the GIL held, so that the pieces one print() writes stay together, and a
 * thread blocked writing fd 1 with the GIL held cannot stop the capture
 * reader, which never needs the GIL.
 */
#ifndef CELLVM_STREAM_SINK_H
#define CELLVM_STREAM_SINK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* At most this much of Python's text waits here (more goes out at once). */
#define STREAM_SINK_BUFFER 65536

/* How long a sink stays watched after the last sign of output on its fd. */
#define STREAM_SINK_WATCH_NS 100000000ull

struct stream_sink {
        pthread_mutex_t lock;
        int out_fd;          /* the agent's pipe */
        int out_nonblocking; /* out_fd is (a captured fd's: the executor's alone) */
        int capture_fd;      /* read end of the pipe fd 1/2 now is (nonblocking); -1: none */
        char *pending;       /* one of bufs */
        size_t len;
        char *spare;            /* the other: text on its way out (flush) */
        int watched;            /* the pipe is looked at before text is buffered... */
        uint64_t watched_until; /* ...until then (CLOCK_MONOTONIC ns) */
        char bufs[2][STREAM_SINK_BUFFER];
};

/* Sinks of fd 1 (index 0) and fd 2 (index 1). */
extern struct stream_sink stream_sinks[2];

/* The sink of fd 1 or 2, or NULL. */
struct stream_sink *stream_sink_of_fd(int fd);

/* A sink of another fd, with no capture (an OutStream made in a cell). */
void stream_sink_init(struct stream_sink *s, int out_fd);
void stream_sink_destroy(struct stream_sink *s);

void stream_sink_lock(struct stream_sink *s);
void stream_sink_unlock(struct stream_sink *s);

/* With the lock held: whether `n` more bytes can join the pending text (they
 * fit, and nothing was captured since the text before them). */
int stream_sink_can_buffer(struct stream_sink *s, size_t n);

/* With the lock held: appends `n` bytes that stream_sink_can_buffer took. */
void stream_sink_put(struct stream_sink *s, const char *p, size_t n);

/* Appends without blocking when that can be done at once (the lock is free,
 * nothing was captured, the bytes fit): 1 if done, 0 if the caller must take
 * the lock (see out_stream.c's append). */
int stream_sink_try_append(struct stream_sink *s, const char *p, size_t n);

/*
 * Writes the pending text, then what was captured so far, to the agent's pipe.
 * The captured pipes' agent ends are nonblocking, so this never waits with
 * the lock held: 0; -EAGAIN when the agent's pipe is full (it stops reading
 * while its client is slow), the unwritten rest kept first in line, to be
 * tried again once stream_sink_wait_writable returns; or another negative
 * errno (the agent is gone: what could not be written is dropped).
 */
int stream_sink_flush_locked(struct stream_sink *s);

/* The same, taking the lock. */
int stream_sink_flush(struct stream_sink *s);

/* Until everything is written (exits): 0 or a negative errno. */
int stream_sink_flush_all(struct stream_sink *s);

/* Waits (without the lock) until the agent's pipe takes more: 0 or a negative
 * errno, -EINTR when a signal came (the caller may have one to handle). */
int stream_sink_wait_writable(struct stream_sink *s);

/* Without blocking: 1 if the sink was found with nothing to flush (no pending
 * text and, if `captured`, nothing captured), else 0. */
int stream_sink_is_empty(struct stream_sink *s, int captured);

/* For STREAM_SINK_WATCH_NS, text is buffered only while the capture pipe is empty. */
void stream_sink_watch(struct stream_sink *s);

/* Bytes written to the agent's pipe and not yet read by the agent. */
int stream_sink_unread(const struct stream_sink *s);

/* Without blocking: 1 if both sinks were found with nothing to hand over and
 * the agent had read everything written to its pipes. */
int stream_sinks_drained(void);

/* Hands what both sinks captured to the agent's pipes, then waits until the
 * agent read everything written there, at most `timeout_ns`: 1 if it did. The
 * agent usually reads within tens of microseconds, so the sleeps between looks
 * start short and double. */
int stream_sinks_wait_drained(uint64_t timeout_ns);

#endif
