/*
 * The executor's output flusher: a plain thread that, while a cell runs, calls
 * a Python callable (which flushes sys.stdout/sys.stderr) every `interval`, so
 * buffered output of a long cell still reaches the agent promptly.
 *
 * It waits outside the GIL and takes it only to flush, so a cell shorter than
 * one interval never meets it: marking a cell started is an atomic store and an
 * uncontended mutex (plus a wakeup when the thread sleeps idle).
 */
#ifndef CELLVM_OUTPUT_FLUSHER_H
#define CELLVM_OUTPUT_FLUSHER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Starts the thread (GIL held). Returns 0 or a negative errno; -EALREADY if running. */
int output_flusher_start(PyObject *flush, double interval);

/* A cell started (1) or ended (0). */
void output_flusher_set_active(int active);

/* Stops and joins the thread; call with the GIL held (it is released while joining). */
void output_flusher_stop(void);

#endif
