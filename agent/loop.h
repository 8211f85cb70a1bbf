/*
 * The loop's hooks (loop.c): what services need from the loop besides fd
 * watches, registered once at startup (main.c), so that the loop, the bottom
 * layer, names no service: child exits, deadlines, work to do before each
 * wait, and the stop.
 */
#ifndef CELLVM_AGENT_LOOP_H
#define CELLVM_AGENT_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;

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
