/*
 * The `_cellvm` builtin module offered to the embedded Python:
 *   send(fd, type, id, body, defer=False)  body (dict) -> CBOR, written as frames on
 *                                  fd together with any messages held back by defer=True
 *   recv(fd) -> (type, id, body)   blocking; None at end of stream
 *   png_encode(rgba, width, height, dpi=None) -> bytes   (GIL released)
 *   flusher_start(flush, interval) / flusher_active(bool) / flusher_stop()
 *                                  output flusher thread (output_flusher.h)
 *   OutStream                      sys.stdout/sys.stderr's text layer (out_stream.h)
 *   sources: {module name: source text} compiled into the binary (embed_sources.py)
 *   code: {module name: (file name, marshalled code object)}, compiled by the
 *                                  build's Python, whose importlib MAGIC_NUMBER is code_magic
 */
#ifndef CELLVM_MODULE_H
#define CELLVM_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* For PyImport_AppendInittab("_cellvm", ...) before Py_Initialize. */
PyMODINIT_FUNC cellvm_module_init(void);

/*
 * Encodes the dict `body` and writes it as one message to `fd` (blocking, GIL
 * released while writing). Returns 0, or -1 with a Python exception set.
 */
int cellvm_send_dict(int fd, uint16_t type, uint32_t id, PyObject *body);

#endif
