/* The process's epoch (see executor_epoch.h). */
#include "executor_epoch.h"

#include <stdio.h>

static struct {
        bool known;
        uint64_t value;
} current;

int executor_epoch_enter(uint64_t epoch)
{
        PyObject *mod = PyImport_ImportModule("cellvm_reseed");
        PyObject *r =
            mod ? PyObject_CallMethod(mod, "enter_epoch", "K", (unsigned long long)epoch) : NULL;
        Py_XDECREF(mod);
        if (r == NULL) {
                fprintf(stderr, "cellvm-executor: reseeding for epoch %llu:\n",
                        (unsigned long long)epoch);
                PyErr_Print();
                return -1;
        }
        Py_DECREF(r);
        current.known = true;
        current.value = epoch;
        return 0;
}

bool executor_epoch_get(uint64_t *out)
{
        if (current.known)
                *out = current.value;
        return current.known;
}
