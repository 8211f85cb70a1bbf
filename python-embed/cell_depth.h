/*
 * A cell's depth against the recursion limit, as in ipykernel.
 *
 * ipykernel runs a cell's code under its asyncio loop, tornado, traitlets and
 * runpy: 22 frames, and C calls between them that count too. The executor's
 * stack is shallower, and how much of it counts varies as CPython specialises
 * the calls in it (a call site it has specialised no longer counts a C
 * function's call). So the executor sets the count where a cell starts to what
 * it is there in ipykernel: a RecursionError comes at the same depth, its
 * traceback counts as many repeated frames, and a cell measuring its depth
 * reads the same.
 *
 * Python's own count (Py_EnterRecursiveCall) is shifted, no frame is added:
 * inspect.stack() and tracebacks show the executor's frames as they are.
 * These are METH_VARARGS functions: such a call always counts one (no
 * specialisation takes it), so the depth they read is the same at each call.
 */
#ifndef CELL_DEPTH_H
#define CELL_DEPTH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* eval_at_depth(code, globals, depth): eval(code, globals) with the count
   before the code's frame set to `depth`, unless it is deeper already (back
   as it was after). */
PyObject *cellvm_eval_at_depth(PyObject *self, PyObject *args);

/* depth_shift(depth) -> n: the count set to `depth` where the caller is (n
   added to it), unless it is deeper already (n = 0); depth_unshift(n) undoes it. */
PyObject *cellvm_depth_shift(PyObject *self, PyObject *args);
PyObject *cellvm_depth_unshift(PyObject *self, PyObject *args);

#endif
