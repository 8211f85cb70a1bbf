/* A cell's depth against the recursion limit (see cell_depth.h). */
#include "cell_depth.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "cell_depth.c reads Python 3.11's recursion count (3.12 splits it in two)"
#endif

/* How much to add to the count so the caller of a METH_VARARGS function (the
   call counts one) is at `depth`. Never less than nothing: a cell run from
   another (run_cell in a cell) goes deeper, or a cell running itself would
   never reach the limit. */
static long shift_to(PyThreadState *ts, int depth)
{
        long n = (long)depth - (ts->recursion_limit - ts->recursion_remaining - 1);
        return n > 0 ? n : 0;
}

/* Counts n more calls. A shift past the limit fails with a RecursionError,
   shifting nothing. */
static int shift(PyThreadState *ts, long n)
{
        if (n > 0 && ts->recursion_remaining - n <= 0) {
                PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
                return -1;
        }
        ts->recursion_remaining -= (int)n;
        return 0;
}

PyObject *cellvm_eval_at_depth(PyObject *self, PyObject *args)
{
        PyObject *code, *globals;
        int depth;
        (void)self;
        if (!PyArg_ParseTuple(args, "O!O!i:eval_at_depth", &PyCode_Type, &code, &PyDict_Type,
                              &globals, &depth))
                return NULL;
        PyThreadState *ts = PyThreadState_Get();
        long n = shift_to(ts, depth);
        if (shift(ts, n) < 0)
                return NULL;
        PyObject *result = PyEval_EvalCode(code, globals, globals);
        ts->recursion_remaining += (int)n;
        return result;
}

PyObject *cellvm_depth_shift(PyObject *self, PyObject *args)
{
        int depth;
        (void)self;
        if (!PyArg_ParseTuple(args, "i:depth_shift", &depth))
                return NULL;
        PyThreadState *ts = PyThreadState_Get();
        long n = shift_to(ts, depth);
        if (shift(ts, n) < 0)
                return NULL;
        return PyLong_FromLong(n);
}

PyObject *cellvm_depth_unshift(PyObject *self, PyObject *args)
{
        long n;
        (void)self;
        if (!PyArg_ParseTuple(args, "l:depth_unshift", &n))
                return NULL;
        PyThreadState_Get()->recursion_remaining += (int)n;
        Py_RETURN_NONE;
}
