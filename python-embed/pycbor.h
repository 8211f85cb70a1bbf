/*
 * Python objects <-> CBOR for the `_cellvm` module: encoding goes through the
 * protocol library's cv_enc_* (libcbor's streaming encoder), decoding walks a
 * libcbor item tree from cv_body_parse(). Both bound the nesting depth.
 */
#ifndef CELLVM_PYCBOR_H
#define CELLVM_PYCBOR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cbor.h>

#include "buf.h"

/* Deepest nesting of lists/dicts converted either way. */
#define PYCBOR_MAX_DEPTH 48

/*
 * Appends `obj` (str, bytes/bytearray/memoryview, int, float, bool, None, list,
 * tuple, dict with str keys) to `b`. Returns 0, or -1 with a Python exception
 * set (TypeError for an unsupported type, ValueError when nested too deep,
 * OverflowError for an int outside 64 bits, MemoryError).
 */
int pycbor_encode(struct cv_buf *b, PyObject *obj);

/* A new reference converted from `item`, or NULL with a Python exception set. */
PyObject *pycbor_decode(const cbor_item_t *item);

#endif
