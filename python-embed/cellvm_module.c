/* The `_cellvm` builtin module (see cellvm_module.h). */
#include "cellvm_module.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "cbor_util.h"
#include "ctl_channel.h"
#include "embedded_py.h"
#include "png_write.h"
#include "pycbor.h"
#include "writer.h"

/* The executor reads one control socket; its partial input survives interrupts. */
static struct ctl_channel recv_chan = {.fd = -1};

static PyObject *set_errno_error(int neg_errno, const char *what)
{
        errno = -neg_errno;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, what);
}

int cellvm_send_dict(int fd, uint16_t type, uint32_t id, PyObject *body)
{
        struct cv_buf out;
        size_t mark;
        cv_buf_init(&out);
        int rc = cv_out_begin(&out, &mark);
        if (rc == 0 && pycbor_encode(&out, body) < 0) {
                cv_buf_free(&out);
                return -1;
        }
        if (rc == 0)
                rc = cv_out_end(&out, mark, type, id);
        if (rc == 0) {
                /* Blocking write of our own buffer: no Python objects touched. */
                Py_BEGIN_ALLOW_THREADS rc =
                    ctl_write_all(fd, cv_buf_head(&out), cv_buf_pending(&out));
                Py_END_ALLOW_THREADS
        }
        cv_buf_free(&out);
        if (rc < 0) {
                set_errno_error(rc, "send on control socket");
                return -1;
        }
        return 0;
}

static PyObject *cellvm_send(PyObject *self, PyObject *args)
{
        int fd;
        unsigned int type;
        unsigned long id;
        PyObject *body;
        (void)self;

        if (!PyArg_ParseTuple(args, "iIkO!:send", &fd, &type, &id, &PyDict_Type, &body))
                return NULL;
        if (type > 0xFFFF || id > 0xFFFFFFFFul) {
                PyErr_SetString(PyExc_ValueError, "type or id out of range");
                return NULL;
        }
        if (cellvm_send_dict(fd, (uint16_t)type, (uint32_t)id, body) < 0)
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

/* Bytes still unread in pipe `fd`; 0 when it is not a pipe. */
static int pipe_pending(int fd)
{
        int n = 0;
        if (ioctl(fd, FIONREAD, &n) < 0)
                return 0;
        return n;
}

/*
 * Waits (GIL released) until the readers of fds 1 and 2 took everything written
 * so far, at most `timeout` seconds. A message sent after this cannot overtake
 * output written before it, whatever the agent's scheduling.
 */
static PyObject *cellvm_wait_output_drained(PyObject *self, PyObject *args)
{
        double timeout;
        int drained = 0;
        (void)self;

        if (!PyArg_ParseTuple(args, "d:wait_output_drained", &timeout))
                return NULL;
        Py_BEGIN_ALLOW_THREADS struct timespec step = {.tv_sec = 0, .tv_nsec = 100 * 1000};
        long rounds = (long)(timeout / 1e-4);
        for (long i = 0; i <= rounds; i++) {
                if (pipe_pending(1) == 0 && pipe_pending(2) == 0) {
                        drained = 1;
                        break;
                }
                nanosleep(&step, NULL);
        }
        Py_END_ALLOW_THREADS return PyBool_FromLong(drained);
}

static PyMethodDef cellvm_methods[] = {
    {"wait_output_drained", cellvm_wait_output_drained, METH_VARARGS,
     "wait_output_drained(timeout) -> bool: pipes 1 and 2 were read empty"},
    {"send", cellvm_send, METH_VARARGS, "send(fd, type, id, body): write one message"},
    {"recv", cellvm_recv, METH_VARARGS, "recv(fd) -> (type, id, body) or None at end of stream"},
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

PyMODINIT_FUNC cellvm_module_init(void)
{
        PyObject *m = PyModule_Create(&cellvm_moduledef);
        if (m == NULL)
                return NULL;
        PyObject *sources = PyDict_New();
        if (sources == NULL)
                goto fail;
        for (const struct embedded_py *e = embedded_py_sources; e->name != NULL; e++) {
                PyObject *src = PyUnicode_DecodeUTF8(e->source, (Py_ssize_t)e->len, "strict");
                if (src == NULL || PyDict_SetItemString(sources, e->name, src) < 0) {
                        Py_XDECREF(src);
                        Py_DECREF(sources);
                        goto fail;
                }
                Py_DECREF(src);
        }
        if (PyModule_AddObject(m, "sources", sources) < 0) {
                Py_DECREF(sources);
                goto fail;
        }
        return m;
fail:
        Py_DECREF(m);
        return NULL;
}
