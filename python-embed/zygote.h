/* The zygote: a pre-initialised Python that forks executors (docs/PROTOCOL.md section 8). */
#ifndef CELLVM_ZYGOTE_H
#define CELLVM_ZYGOTE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/*
 * With Python initialised and `kernel` the _cellvm_kernel module: imports the
 * comma-separated `preload` modules, sends Z_READY on `fd`, then serves Z_SPAWN
 * until the agent closes the socket. Returns the process exit status. In each
 * forked executor it does not return: the executor exits when its own control
 * socket closes.
 */
int zygote_run(int fd, PyObject *kernel, const char *preload);

/* Forks a process running `body(kernel, arg)` (which must not return) through a short-lived
 * middle process, so the agent (a child subreaper) inherits it. Its pid or a negative errno. */
pid_t zygote_fork_executor(PyObject *kernel, void (*body)(PyObject *, void *), void *arg);

#endif
