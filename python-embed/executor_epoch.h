/*
 * The epoch a process's interpreter state belongs to (docs/PROTOCOL.md section
 * 8): the zygote learns it from Z_SPAWN, a spare from its assignment, and a
 * forked executor inherits the zygote's. Python's side is module cellvm_reseed
 * (python-embed/reseed.py), which reseeds on a change.
 */
#ifndef CELLVM_EXECUTOR_EPOCH_H
#define CELLVM_EXECUTOR_EPOCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>

/* Makes `epoch` this process's, reseeding its Python state first if it had another
 * (or none yet). 0, or -1 with the Python error printed (the state stays as it was). */
int executor_epoch_enter(uint64_t epoch);
/* This process's epoch, false if it has none yet. */
bool executor_epoch_get(uint64_t *out);

#endif
