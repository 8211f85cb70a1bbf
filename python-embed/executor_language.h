/* What an executor runs once attached to its context, by the context's language
 * (docs/PROTOCOL.md section 8, Z_SPAWN). */
#ifndef CELLVM_EXECUTOR_LANGUAGE_H
#define CELLVM_EXECUTOR_LANGUAGE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>

/* Longest language name a Z_SPAWN may carry. */
#define EXECUTOR_LANGUAGE_MAX 32

/* True if this executor can serve contexts of `language` (a canonical name). */
bool executor_language_known(const char *language);

/*
 * In an executor attached to its context (confined, prepared: executor_prepare()
 * ran), serves `language` on control socket `fd` until it closes, then exits the
 * process. `kernel` is the _cellvm_kernel module.
 */
void executor_language_serve(PyObject *kernel, const char *language, int fd)
    __attribute__((noreturn));

#endif
