/*
 * The epoll loop (loop.c): fd watches, the clocks, and the loop's hooks: what
 * services need from the loop besides fd watches, registered once at startup
 * (main.c), so that the loop, the bottom layer, names no service: child exits,
 * deadlines, work to do before each wait, and the stop.
 */
#ifndef CELLVM_AGENT_LOOP_H
#define CELLVM_AGENT_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;

/* An fd in the epoll set; `fn` handles its events. Embedded in its owner. */
struct watch {
        int fd;
        uint32_t events; /* registered interest, 0 = not in the epoll set */
        void (*fn)(struct agent *a, struct watch *w, uint32_t events);
};

uint64_t now_mono(void);
uint64_t now_boottime(void);
/* Sets the epoll interest of `w` (0 removes it from the set). Returns 0 or -errno. */
int watch_set(struct agent *a, struct watch *w, uint32_t events);
/* Removes `w` from the epoll set and closes its fd. */
void watch_close(struct agent *a, struct watch *w);
int loop_run(struct agent *a);
/* The signals the loop reads from its signalfd (blocked in the agent; children unblock them). */
int loop_signals(sigset_t *set);

/* Formats a wait status as "exited with status N" / "killed by signal N (NAME)". */
void describe_status(int status, char *out, size_t size);

/* A child exited: true if it was this service's (the loop stops asking). */
typedef bool (*loop_reap_fn)(struct agent *a, pid_t pid, int status);
/* Runs what is due at `now` (monotonic ns); lowers *next to its next deadline. */
typedef void (*loop_timer_fn)(struct agent *a, uint64_t now, uint64_t *next);
/* Before each wait, in registration order: true if more work is ready now. */
typedef bool (*loop_before_wait_fn)(struct agent *a);
/* The loop ended. */
typedef void (*loop_stop_fn)(struct agent *a);

/* Each: 0, or -ENOSPC past LOOP_MAX_HOOKS of its kind. */
#define LOOP_MAX_HOOKS 8
int loop_on_reap(loop_reap_fn fn);
int loop_on_timer(loop_timer_fn fn);
int loop_before_wait(loop_before_wait_fn fn);
int loop_on_stop(loop_stop_fn fn);

#endif
