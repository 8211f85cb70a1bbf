/* Turning a freshly forked process into an executor (docs/PROTOCOL.md section 8). */
#ifndef CELLVM_EXECUTOR_PROC_H
#define CELLVM_EXECUTOR_PROC_H

/* The control socket's fd number in every executor. */
#define EXECUTOR_CTL_FD 3

/*
 * New session; `out`/`err` become fds 1 and 2, /dev/null fd 0, `ctl` fd 3
 * (close-on-exec); every other fd is closed; cwd is `cwd` (unless empty); the
 * signal mask is cleared. Signal dispositions are reset by the Python side,
 * which owns the handler table. Returns 0 or a negative errno, with `*step`
 * naming what failed.
 */
int executor_proc_setup(int ctl, int out, int err, const char *cwd, const char **step);

#endif
