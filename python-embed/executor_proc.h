/* Turning a freshly forked process into an executor (docs/PROTOCOL.md section 8). */
#ifndef CELLVM_EXECUTOR_PROC_H
#define CELLVM_EXECUTOR_PROC_H

/* The control socket's fd number in every executor. */
#define EXECUTOR_CTL_FD 3

/*
 * The half of the setup that needs no context: new session, /dev/null as fd 0,
 * every inherited fd closed but 1, 2 and `keep` (which becomes fd 3; -1: none),
 * the signal mask cleared, then the isolation policy (confine/confine.h: the
 * sandbox user, no capabilities, seccomp). A spare executor does this ahead,
 * before a context is known. Signal dispositions are reset by the Python side,
 * which owns the handler table. Returns 0 or a negative errno, with `*step`
 * naming what failed.
 */
int executor_proc_detach(int keep, const char **step);

/*
 * The context's half: `out`/`err` become fds 1 and 2, `ctl` fd 3 (close-on-exec),
 * every other fd is closed. Returns 0 or a negative errno, with `*step` naming
 * what failed.
 */
int executor_proc_attach(int ctl, int out, int err, const char **step);

/* Changes to the context's directory (nothing if `cwd` is empty), as the
 * sandbox user: after executor_proc_detach(). */
int executor_proc_chdir(const char *cwd, const char **step);

#endif
