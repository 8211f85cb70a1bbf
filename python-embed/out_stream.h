/*
 * _cellvm.OutStream(binary, buffer_size=65536): the text layer of the
 * executor's sys.stdout/sys.stderr (out_stream.c says why it is in C).
 */
#ifndef CELLVM_OUT_STREAM_H
#define CELLVM_OUT_STREAM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds the OutStream type to `module`; 0, or -1 with a Python exception set. */
int cv_out_stream_add_type(PyObject *module);

#endif
