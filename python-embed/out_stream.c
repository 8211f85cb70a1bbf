/*
 * _cellvm.OutStream: the text layer of the executor's sys.stdout/sys.stderr.
 *
 * print() calls file.write() once per argument and once for `end`; through
 * io.TextIOWrapper that costs ~0.36 us a call here, through this type less
 * (10,000 prints: 3.6 ms -> 1.5 ms before fd capture, docs/BENCHMARKS.md).
 * write() appends the text's UTF-8 to its fd's sink (stream_sink.h), which
 * buffers it and hands it to the agent's pipe in order with what is written
 * to the fd itself. The common case takes the sink's lock without waiting,
 * with the GIL held; otherwise the GIL is released first, as no thread may
 * wait for the GIL while holding a sink.
 *
 * Its base is io's C _TextIOBase, as ipykernel's OutStream derives from
 * io.TextIOBase: errors, newlines, read(), detach(), writelines(), context
 * management and the finaliser come from there. The layout of that base is
 * private to CPython, so this type's fields go after its basic size, read at
 * run time.
 */
#include "out_stream.h"
#include "stream_sink.h"

#include <errno.h>
#include <string.h>

struct out_stream_fields {
        struct stream_sink *sink; /* NULL until initialised */
        int own_sink;             /* allocated for another fd than 1 or 2 */
        int closed;
};

static PyTypeObject *base_type;  /* _io._TextIOBase (a reference held) */
static Py_ssize_t fields_offset; /* its basic size */

static struct out_stream_fields *fields_of(PyObject *self)
{
        return (struct out_stream_fields *)((char *)self + fields_offset);
}

static int check_open(struct out_stream_fields *f)
{
        if (f->closed) {
                PyErr_SetString(PyExc_ValueError, "I/O operation on closed file.");
                return -1;
        }
        if (f->sink == NULL) {
                PyErr_SetString(PyExc_ValueError, "OutStream is not initialised");
                return -1;
        }
        return 0;
}

static int raise_errno(int neg_errno)
{
        errno = -neg_errno;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
}

/* The agent's pipe is full (it stops reading while its client is slow): waits
 * for room without the GIL, as a blocking write would, and lets a signal
 * (the agent's SIGINT) raise; 0 or -1 with an exception. */
static int wait_writable(struct stream_sink *sink)
{
        PyThreadState *ts = PyEval_SaveThread();
        int rc = stream_sink_wait_writable(sink);
        PyEval_RestoreThread(ts);
        if (rc == -EINTR)
                return PyErr_CheckSignals();
        return rc < 0 ? raise_errno(rc) : 0;
}

/* Flushes a sink locked with the GIL held, and unlocks it. A blocking fd (no
 * capture: another fd, a bash context's) is written without the GIL, which is
 * taken back only after the lock is released (stream_sink.h). */
static int flush_and_unlock(struct stream_sink *sink)
{
        if (sink->out_nonblocking) {
                int rc = stream_sink_flush_locked(sink);
                stream_sink_unlock(sink);
                return rc;
        }
        PyThreadState *ts = PyEval_SaveThread();
        int rc = stream_sink_flush_locked(sink);
        stream_sink_unlock(sink);
        PyEval_RestoreThread(ts);
        return rc;
}

/* After a flush: 0 to go on (waited for room if the agent's pipe was full),
 * or -1 with an exception. */
static int after_flush(struct stream_sink *sink, int rc)
{
        if (rc == -EAGAIN)
                return wait_writable(sink);
        return rc < 0 ? raise_errno(rc) : 0;
}

/* Appends `n` bytes; 0 or -1 with an exception. The sink's lock is taken with
 * the GIL held, so no other thread's text comes between the pieces one
 * print() writes (unless the agent's pipe is full). */
static int append(struct out_stream_fields *f, const char *s, Py_ssize_t n)
{
        struct stream_sink *sink = f->sink;
        size_t left = (size_t)n;
        while (left > 0) {
                size_t k = left < STREAM_SINK_BUFFER ? left : STREAM_SINK_BUFFER;
                if (!stream_sink_try_append(sink, s, k)) {
                        stream_sink_lock(sink);
                        if (!stream_sink_can_buffer(sink, k)) {
                                if (after_flush(sink, flush_and_unlock(sink)) < 0)
                                        return -1;
                                continue; /* room made: the piece goes in next round */
                        }
                        stream_sink_put(sink, s, k);
                        stream_sink_unlock(sink);
                }
                s += k;
                left -= k;
        }
        return 0;
}

/* ipykernel's OutStream.write raises in its own frame (iostream.py): the
 * Python class gives that frame as the attribute `hook`, called with the
 * error (`type` of `message`) and the text; without it the error is raised
 * here. */
static PyObject *refuse_write(PyObject *self, const char *hook, PyObject *type, PyObject *message,
                              PyObject *text)
{
        if (message == NULL)
                return NULL;
        PyObject *error = PyObject_CallOneArg(type, message);
        Py_DECREF(message);
        if (error == NULL)
                return NULL;
        PyObject *raiser = PyObject_GetAttrString(self, hook);
        if (raiser == NULL) {
                PyErr_Clear();
                PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        } else {
                PyObject *r = PyObject_CallFunctionObjArgs(raiser, error, text, NULL);
                Py_DECREF(raiser);
                if (r != NULL) { /* a hook that did not raise: the error still stands */
                        Py_DECREF(r);
                        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
                }
        }
        Py_DECREF(error);
        return NULL;
}

static PyObject *out_stream_write(PyObject *self, PyObject *text)
{
        struct out_stream_fields *f = fields_of(self);
        if (!PyUnicode_Check(text)) /* ipykernel's message: f"... not {type(string)}" */
                return refuse_write(self, "_cellvm_write_not_str", PyExc_TypeError,
                                    PyUnicode_FromFormat("write() argument must be str, not %R",
                                                         (PyObject *)Py_TYPE(text)),
                                    text);
        if (f->closed)
                return refuse_write(self, "_cellvm_write_closed", PyExc_ValueError,
                                    PyUnicode_FromString("I/O operation on closed file"), text);
        if (check_open(f) < 0)
                return NULL;
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
        if (utf8 != NULL) {
                if (append(f, utf8, n) < 0)
                        return NULL;
        } else {
                /* Lone surrogates: as jupyter_client sends them, by the error
                 * handler kernel/iostream.py registers. */
                PyErr_Clear();
                PyObject *b = PyUnicode_AsEncodedString(text, "utf-8", "cellvm-lone-surrogates");
                if (b == NULL) {
                        PyErr_Clear();
                        b = PyUnicode_AsEncodedString(text, "utf-8", "backslashreplace");
                }
                if (b == NULL)
                        return NULL;
                int rc = append(f, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
                Py_DECREF(b);
                if (rc < 0)
                        return NULL;
        }
        return PyLong_FromSsize_t(PyUnicode_GET_LENGTH(text));
}

static PyObject *out_stream_flush(PyObject *self, PyObject *Py_UNUSED(unused))
{
        struct out_stream_fields *f = fields_of(self);
        if (check_open(f) < 0)
                return NULL;
        /* Most flushes find nothing (one before every message): no lock wait.
         * What fds 1/2 captured goes out without it (the reader thread). */
        while (!stream_sink_is_empty(f->sink, 0)) {
                stream_sink_lock(f->sink);
                int rc = flush_and_unlock(f->sink);
                if (after_flush(f->sink, rc) < 0)
                        return NULL;
                if (rc == 0)
                        break;
        }
        Py_RETURN_NONE;
}

/* As ipykernel's OutStream: later writes fail, the fd stays open. */
static PyObject *out_stream_close(PyObject *self, PyObject *Py_UNUSED(unused))
{
        struct out_stream_fields *f = fields_of(self);
        if (f->closed || f->sink == NULL)
                return Py_NewRef(Py_None);
        PyObject *r = out_stream_flush(self, NULL);
        f->closed = 1;
        if (r == NULL)
                return NULL;
        Py_DECREF(r);
        return Py_NewRef(Py_None);
}

static PyObject *out_stream_closed(PyObject *self, void *Py_UNUSED(closure))
{
        return PyBool_FromLong(fields_of(self)->closed);
}

static int out_stream_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
        static char *kwlist[] = {"fd", NULL};
        int fd;
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i:OutStream", kwlist, &fd))
                return -1;
        if (fd < 0) {
                PyErr_SetString(PyExc_ValueError, "OutStream's fd must not be negative");
                return -1;
        }
        struct out_stream_fields *f = fields_of(self);
        if (f->sink != NULL) {
                PyErr_SetString(PyExc_RuntimeError, "OutStream is initialised already");
                return -1;
        }
        struct stream_sink *sink = stream_sink_of_fd(fd);
        if (sink == NULL) {
                sink = PyMem_Malloc(sizeof(*sink));
                if (sink == NULL) {
                        PyErr_NoMemory();
                        return -1;
                }
                stream_sink_init(sink, fd);
                f->own_sink = 1;
        }
        f->sink = sink;
        f->closed = 0;
        return 0;
}

static int out_stream_traverse(PyObject *self, visitproc visit, void *arg)
{
        Py_VISIT(Py_TYPE(self));
        return base_type->tp_traverse(self, visit, arg);
}

static int out_stream_clear(PyObject *self)
{
        return base_type->tp_clear(self);
}

static void out_stream_dealloc(PyObject *self)
{
        /* The finaliser (IOBase's: close(), so pending text is written) needs
         * the fields; the base's dealloc, which frees the object, comes last. */
        if (PyObject_CallFinalizerFromDealloc(self) < 0)
                return; /* resurrected */
        PyTypeObject *tp = Py_TYPE(self);
        struct out_stream_fields *f = fields_of(self);
        if (f->own_sink) {
                stream_sink_destroy(f->sink);
                PyMem_Free(f->sink);
        }
        base_type->tp_dealloc(self);
        Py_DECREF(tp); /* instances of heap types hold their type */
}

static PyMethodDef out_stream_methods[] = {
    {"write", out_stream_write, METH_O, "write(text) -> number of characters written"},
    {"flush", out_stream_flush, METH_NOARGS, "hand the pending text to the agent's pipe"},
    {"close", out_stream_close, METH_NOARGS, "flush; later writes raise ValueError"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef out_stream_getset[] = {
    {"closed", out_stream_closed, NULL, "True after close()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int cv_out_stream_add_type(PyObject *module)
{
        PyObject *io = PyImport_ImportModule("_io");
        if (io == NULL)
                return -1;
        PyObject *base = PyObject_GetAttrString(io, "_TextIOBase");
        Py_DECREF(io);
        if (base == NULL)
                return -1;
        if (!PyType_Check(base)) {
                Py_DECREF(base);
                PyErr_SetString(PyExc_TypeError, "_io._TextIOBase is not a type");
                return -1;
        }
        if (((PyTypeObject *)base)->tp_itemsize != 0) {
                Py_DECREF(base);
                PyErr_SetString(PyExc_TypeError, "_io._TextIOBase has variable size");
                return -1;
        }
        fields_offset = ((PyTypeObject *)base)->tp_basicsize;
        PyType_Slot slots[] = {
            {Py_tp_init, (void *)out_stream_init},
            {Py_tp_dealloc, (void *)out_stream_dealloc},
            {Py_tp_traverse, (void *)out_stream_traverse},
            {Py_tp_clear, (void *)out_stream_clear},
            {Py_tp_methods, out_stream_methods},
            {Py_tp_getset, out_stream_getset},
            {Py_tp_doc, "OutStream(fd): buffered UTF-8 text of an fd (for 1 and 2, in order with "
                        "what is written to the fd itself)"},
            {0, NULL},
        };
        PyType_Spec spec = {
            .name = "_cellvm.OutStream",
            .basicsize = (int)(fields_offset + (Py_ssize_t)sizeof(struct out_stream_fields)),
            .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
            .slots = slots,
        };
        PyObject *type = PyType_FromSpecWithBases(&spec, base);
        if (type == NULL) {
                Py_DECREF(base);
                return -1;
        }
        Py_XSETREF(base_type, (PyTypeObject *)base);
        if (PyModule_AddObject(module, "OutStream", type) < 0) {
                Py_DECREF(type);
                return -1;
        }
        return 0;
}
