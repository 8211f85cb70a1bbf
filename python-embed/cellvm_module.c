/* The `_cellvm` builtin module (see cellvm_module.h). */
#include "cellvm_module.h"
#include "out_stream.h"

#include <errno.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "cell_depth.h"
#include "cell_hash.h"
#include "ctl_channel.h"
#include "embedded_py.h"
#include "output_flusher.h"
#include "png_write.h"
#include "stream_sink.h"
#include "pycbor.h"
#include "writer.h"

/* The executor reads one control socket; its partial input survives interrupts. */
static struct ctl_channel recv_chan = {.fd = -1};

static PyObject *set_errno_error(int neg_errno, const char *what)
{
        errno = -neg_errno;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, what);
}

/*
 * Messages the kernel held back with send(..., defer=True): they go out in the
 * same write as the next message sent, so a RESULT and the X_END right after it
 * cost the agent one wakeup. Only touched with the GIL held.
 */
static struct cv_buf held = {0};
static int held_fd = -1;

static int encode_msg(struct cv_buf *out, uint16_t type, uint32_t id, PyObject *body)
{
        size_t mark;
        int rc = cv_out_begin(out, &mark);
        if (rc == 0 && pycbor_encode(out, body) < 0) {
                cv_out_abort(out, mark);
                return -1; /* Python exception set */
        }
        if (rc == 0)
                rc = cv_out_end(out, mark, type, id);
        if (rc < 0) {
                cv_out_abort(out, mark);
                set_errno_error(rc, "encode message");
                return -1;
        }
        return 0;
}

/* Writes `out` to `fd` with the GIL released; `out` is private to this call. */
static int write_buf(int fd, struct cv_buf *out)
{
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = cv_write_all(fd, cv_buf_head(out), cv_buf_pending(out));
        Py_END_ALLOW_THREADS if (rc < 0)
        {
                set_errno_error(rc, "send on control socket");
                return -1;
        }
        return 0;
}

static int send_held(void)
{
        if (cv_buf_pending(&held) == 0)
                return 0;
        struct cv_buf out = held;
        cv_buf_init(&held);
        int rc = write_buf(held_fd, &out);
        cv_buf_free(&out);
        return rc;
}

static int send_msg(int fd, uint16_t type, uint32_t id, PyObject *body, int defer)
{
        if (cv_buf_pending(&held) > 0 && held_fd != fd && send_held() < 0)
                return -1;
        if (defer) {
                held_fd = fd;
                return encode_msg(&held, type, id, body);
        }
        /* Take the held messages along; another thread may send while we write. */
        struct cv_buf out = held;
        cv_buf_init(&held);
        if (encode_msg(&out, type, id, body) < 0) {
                held = out; /* the held ones stay for the next send */
                return -1;
        }
        int rc = write_buf(fd, &out);
        cv_buf_free(&out);
        return rc;
}

int cellvm_send_dict(int fd, uint16_t type, uint32_t id, PyObject *body)
{
        return send_msg(fd, type, id, body, 0);
}

static PyObject *cellvm_send(PyObject *self, PyObject *args, PyObject *kwargs)
{
        static char *kwlist[] = {"fd", "type", "id", "body", "defer", NULL};
        int fd, defer = 0;
        unsigned int type;
        unsigned long id;
        PyObject *body;
        (void)self;

        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iIkO!|p:send", kwlist, &fd, &type, &id,
                                         &PyDict_Type, &body, &defer))
                return NULL;
        if (type > 0xFFFF || id > 0xFFFFFFFFul) {
                PyErr_SetString(PyExc_ValueError, "type or id out of range");
                return NULL;
        }
        if (send_msg(fd, (uint16_t)type, (uint32_t)id, body, defer) < 0)
                return NULL;
        Py_RETURN_NONE;
}

static PyObject *cellvm_recv(PyObject *self, PyObject *args)
{
        int fd;
        struct cv_msg msg;
        int rc;
        (void)self;

        if (!PyArg_ParseTuple(args, "i:recv", &fd))
                return NULL;
        if (recv_chan.fd != fd) {
                if (recv_chan.fd >= 0)
                        ctl_channel_free(&recv_chan);
                rc = ctl_channel_init(&recv_chan, fd);
                if (rc < 0) {
                        recv_chan.fd = -1;
                        return set_errno_error(rc, "recv");
                }
        }
        for (;;) {
                Py_BEGIN_ALLOW_THREADS rc = ctl_channel_recv(&recv_chan, &msg);
                Py_END_ALLOW_THREADS if (rc != -EINTR) break;
                /* PEP 475: run the handlers; an exception ends the call, the
                 * partial message stays in the channel for the next one. */
                if (PyErr_CheckSignals() < 0)
                        return NULL;
        }
        if (rc == CV_READ_EOF)
                Py_RETURN_NONE;
        if (rc < 0)
                return set_errno_error(rc, "recv on control socket");

        cbor_item_t *item = NULL;
        rc = cv_body_parse(msg.body, msg.len, &item);
        if (rc < 0) {
                PyErr_Format(PyExc_ValueError, "message type 0x%04x: body is not a CBOR map",
                             msg.type);
                return NULL;
        }
        PyObject *body = pycbor_decode(item);
        cbor_decref(&item);
        if (body == NULL)
                return NULL;
        return Py_BuildValue("(HkN)", msg.type, (unsigned long)msg.id, body);
}

static PyObject *cellvm_png_encode(PyObject *self, PyObject *args, PyObject *kwargs)
{
        static char *kwlist[] = {"rgba", "width", "height", "dpi", NULL};
        PyObject *obj, *dpi_obj = Py_None;
        unsigned int width, height;
        double dpi = 0;
        (void)self;

        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OII|O:png_encode", kwlist, &obj, &width,
                                         &height, &dpi_obj))
                return NULL;
        if (dpi_obj != Py_None) {
                dpi = PyFloat_AsDouble(dpi_obj);
                if (dpi == -1 && PyErr_Occurred())
                        return NULL;
        }
        Py_buffer view;
        if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0)
                return NULL;
        if ((uint64_t)view.len != (uint64_t)width * height * 4) {
                PyBuffer_Release(&view);
                PyErr_Format(PyExc_ValueError, "buffer has %zd bytes, %ux%u RGBA needs %llu",
                             view.len, width, height, (unsigned long long)width * height * 4);
                return NULL;
        }
        struct cv_buf png;
        int rc;
        cv_buf_init(&png);
        Py_BEGIN_ALLOW_THREADS rc = png_write_rgba(view.buf, width, height, dpi, &png);
        Py_END_ALLOW_THREADS PyBuffer_Release(&view);
        if (rc < 0) {
                cv_buf_free(&png);
                if (rc == -ENOMEM)
                        return PyErr_NoMemory();
                PyErr_Format(PyExc_ValueError, "PNG encoding failed: %s", strerror(-rc));
                return NULL;
        }
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)cv_buf_head(&png),
                                                    (Py_ssize_t)cv_buf_pending(&png));
        cv_buf_free(&png);
        return bytes;
}

/*
 * Hands what fds 1 and 2 captured to the agent's pipes (the text of sys.stdout
 * and sys.stderr is flushed by the caller, in Python: a cell may have replaced
 * them), then waits (GIL released) until the agent took everything written so
 * far, at most `timeout` seconds (stream_sink.h). A message sent after this
 * cannot overtake output written before it, whatever the agent's scheduling.
 */
static PyObject *cellvm_wait_output_drained(PyObject *self, PyObject *args)
{
        double timeout;
        (void)self;

        if (!PyArg_ParseTuple(args, "d:wait_output_drained", &timeout))
                return NULL;
        if (stream_sinks_drained())
                Py_RETURN_TRUE; /* the usual case: no GIL switch */
        PyThreadState *ts = PyEval_SaveThread();
        int drained = stream_sinks_wait_drained((uint64_t)(timeout > 0 ? timeout * 1e9 : 0));
        PyEval_RestoreThread(ts);
        return PyBool_FromLong(drained);
}

static PyObject *cellvm_flusher_start(PyObject *self, PyObject *args)
{
        PyObject *flush;
        double interval;
        (void)self;

        if (!PyArg_ParseTuple(args, "Od:flusher_start", &flush, &interval))
                return NULL;
        if (!PyCallable_Check(flush) || !(interval > 0 && interval < 3600)) {
                PyErr_SetString(PyExc_ValueError, "flusher_start(callable, 0 < interval < 3600)");
                return NULL;
        }
        int rc = output_flusher_start(flush, interval);
        if (rc < 0)
                return set_errno_error(rc, "output flusher thread");
        Py_RETURN_NONE;
}

static PyObject *cellvm_flusher_active(PyObject *self, PyObject *arg)
{
        (void)self;
        int active = PyObject_IsTrue(arg);
        if (active < 0)
                return NULL;
        output_flusher_set_active(active);
        Py_RETURN_NONE;
}

static PyObject *cellvm_flusher_stop(PyObject *self, PyObject *unused)
{
        (void)self;
        (void)unused;
        output_flusher_stop();
        Py_RETURN_NONE;
}

static PyObject *cellvm_watch_fd_output(PyObject *self, PyObject *unused)
{
        (void)self;
        (void)unused;
        stream_sink_watch(&stream_sinks[0]);
        stream_sink_watch(&stream_sinks[1]);
        Py_RETURN_NONE;
}

/*
 * os.write and os._exit as the executor has them, C functions so that an
 * error shows no frame of their own: a write to fd 1 or 2 first makes its
 * sink watch the capture pipe (stream_sink.h), so text printed right after it
 * waits for it; an exit first hands over what the sinks hold and captured,
 * which would die with the process (before fds 1 and 2 were captured, such
 * writes had reached the agent already).
 */
static PyObject *os_write, *os_exit; /* the real ones (references held) */

static PyObject *fd_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
        (void)self;
        if (nargs >= 1 && PyLong_CheckExact(args[0])) {
                int overflow;
                long fd = PyLong_AsLongAndOverflow(args[0], &overflow);
                if (fd == 1 || fd == 2)
                        stream_sink_watch(&stream_sinks[fd - 1]);
                else if (fd == -1 && PyErr_Occurred())
                        PyErr_Clear(); /* os.write reports it */
        }
        return PyObject_Vectorcall(os_write, args, (size_t)nargs, NULL);
}

static PyObject *flushing_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
        (void)self;
        PyThreadState *ts = PyEval_SaveThread();
        (void)stream_sink_flush_all(&stream_sinks[0]); /* undeliverable: nobody to tell */
        (void)stream_sink_flush_all(&stream_sinks[1]);
        PyEval_RestoreThread(ts);
        return PyObject_Vectorcall(os_exit, args, (size_t)nargs, NULL);
}

static PyMethodDef fd_write_def = {"write", (PyCFunction)(void (*)(void))fd_write, METH_FASTCALL,
                                   "write(fd, data, /)\n--\n\nWrite a bytes object to a file "
                                   "descriptor."};
static PyMethodDef flushing_exit_def = {"_exit", (PyCFunction)(void (*)(void))flushing_exit,
                                        METH_FASTCALL,
                                        "_exit(status)\n--\n\nExit to the system with specified "
                                        "status, without normal exit processing."};

/* wrap_os(os.write, os._exit) -> (write, _exit): the executor's. */
static PyObject *cellvm_wrap_os(PyObject *self, PyObject *args)
{
        PyObject *write, *exit_;
        (void)self;
        if (!PyArg_ParseTuple(args, "OO:wrap_os", &write, &exit_))
                return NULL;
        if (!PyCallable_Check(write) || !PyCallable_Check(exit_)) {
                PyErr_SetString(PyExc_TypeError, "wrap_os(os.write, os._exit)");
                return NULL;
        }
        Py_XSETREF(os_write, Py_NewRef(write));
        Py_XSETREF(os_exit, Py_NewRef(exit_));
        PyObject *w = PyCFunction_NewEx(&fd_write_def, NULL, NULL);
        PyObject *e = w ? PyCFunction_NewEx(&flushing_exit_def, NULL, NULL) : NULL;
        if (e == NULL) {
                Py_XDECREF(w);
                return NULL;
        }
        return Py_BuildValue("(NN)", w, e);
}

static PyObject *cellvm_cell_hash(PyObject *self, PyObject *arg)
{
        (void)self;
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(arg, &n);
        if (!utf8)
                return NULL;
        return PyLong_FromUnsignedLong(
            cell_hash_murmur2((const unsigned char *)utf8, (size_t)n, CELL_HASH_SEED));
}

static PyMethodDef cellvm_methods[] = {
    {"cell_hash", cellvm_cell_hash, METH_O,
     "cell_hash(source) -> int: the number ipykernel names the cell's file by"},
    {"flusher_start", cellvm_flusher_start, METH_VARARGS,
     "flusher_start(flush, interval): call flush() every interval seconds while a cell runs"},
    {"flusher_active", cellvm_flusher_active, METH_O,
     "flusher_active(running): a cell started (True) or ended (False)"},
    {"flusher_stop", cellvm_flusher_stop, METH_NOARGS, "flusher_stop(): stop and join the thread"},
    {"watch_fd_output", cellvm_watch_fd_output, METH_NOARGS,
     "watch_fd_output(): fds 1 and 2 are about to be written (a child process starts)"},
    {"wrap_os", cellvm_wrap_os, METH_VARARGS,
     "wrap_os(os.write, os._exit) -> (write, _exit) that mind fds 1 and 2's capture"},
    {"wait_output_drained", cellvm_wait_output_drained, METH_VARARGS,
     "wait_output_drained(timeout) -> bool: the agent read all of stdout and stderr"},
    {"send", (PyCFunction)(void (*)(void))cellvm_send, METH_VARARGS | METH_KEYWORDS,
     "send(fd, type, id, body, defer=False): write one message (with any held ones);\n"
     "defer=True holds it back until the next send"},
    {"recv", cellvm_recv, METH_VARARGS, "recv(fd) -> (type, id, body) or None at end of stream"},
    {"eval_at_depth", cellvm_eval_at_depth, METH_VARARGS,
     "eval_at_depth(code, globals, depth) -> eval(code, globals), its frame counted at depth"},
    {"depth_shift", cellvm_depth_shift, METH_VARARGS,
     "depth_shift(depth) -> n: count n more frames, so the caller's are at depth"},
    {"depth_unshift", cellvm_depth_unshift, METH_VARARGS, "depth_unshift(n): undo depth_shift"},
    {"png_encode", (PyCFunction)(void (*)(void))cellvm_png_encode, METH_VARARGS | METH_KEYWORDS,
     "png_encode(rgba, width, height, dpi=None) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cellvm_moduledef = {
    PyModuleDef_HEAD_INIT,
    "_cellvm",
    "cellvm executor internals",
    -1,
    cellvm_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* sources: {name: source text}; code: {name: (file name, memoryview of the marshalled
   code)}; code_magic. */
static int add_embedded(PyObject *m)
{
        PyObject *sources = PyDict_New(), *code = PyDict_New();
        PyObject *magic = PyBytes_FromStringAndSize(embedded_py_magic, sizeof(embedded_py_magic));
        int rc = -1;
        if (sources == NULL || code == NULL || magic == NULL)
                goto out;
        for (const struct embedded_py *e = embedded_py_sources; e->name != NULL; e++) {
                PyObject *src = PyUnicode_DecodeUTF8(e->source, (Py_ssize_t)e->len, "strict");
                /* A view of the binary's own bytes: no copy on the heap. */
                PyObject *view =
                    PyMemoryView_FromMemory((char *)e->code, (Py_ssize_t)e->code_len, PyBUF_READ);
                PyObject *entry = view ? Py_BuildValue("(sN)", e->filename, view) : NULL;
                int bad = src == NULL || entry == NULL ||
                          PyDict_SetItemString(sources, e->name, src) < 0 ||
                          PyDict_SetItemString(code, e->name, entry) < 0;
                Py_XDECREF(src);
                Py_XDECREF(entry);
                if (bad)
                        goto out;
        }
        if (PyModule_AddObjectRef(m, "sources", sources) < 0 ||
            PyModule_AddObjectRef(m, "code", code) < 0 ||
            PyModule_AddObjectRef(m, "code_magic", magic) < 0)
                goto out;
        rc = 0;
out:
        Py_XDECREF(sources);
        Py_XDECREF(code);
        Py_XDECREF(magic);
        return rc;
}

PyMODINIT_FUNC cellvm_module_init(void)
{
        PyObject *m = PyModule_Create(&cellvm_moduledef);
        if (m == NULL)
                return NULL;
        if (add_embedded(m) < 0 || cv_out_stream_add_type(m) < 0) {
                Py_DECREF(m);
                return NULL;
        }
        return m;
}
