/* Python <-> CBOR conversion for the `_cellvm` module (see pycbor.h). */
#include "pycbor.h"

#include <errno.h>

#include "cbor_util.h"

static int buf_error(struct cv_buf *b)
{
        if (b->err == -ENOMEM)
                PyErr_NoMemory();
        else
                PyErr_Format(PyExc_ValueError, "message too large (%s)", strerror(-b->err));
        return -1;
}

static int encode_text(struct cv_buf *b, PyObject *obj)
{
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(obj, &len);

        if (s == NULL)
                return -1; /* lone surrogates: UnicodeEncodeError */
        return cv_enc_text(b, s, (size_t)len);
}

/* An int beyond 64 bits (math.factorial(30) in a dict result, a big id in a
 * DataFrame) as a CBOR bignum (RFC 8949 3.4.3): tag 2 over n's big-endian
 * bytes, or tag 3 over those of -1 - n for a negative one. */
static int encode_bignum(struct cv_buf *b, PyObject *obj, int negative)
{
        PyObject *n = negative ? PyNumber_Invert(obj) : Py_NewRef(obj); /* ~x == -1 - x */
        PyObject *bits = n ? PyObject_CallMethod(n, "bit_length", NULL) : NULL;
        long nbits = bits ? PyLong_AsLong(bits) : -1;
        PyObject *bytes = NULL;
        int rc = -1;

        if (nbits >= 0 && !PyErr_Occurred())
                bytes = PyObject_CallMethod(n, "to_bytes", "ls", (nbits + 7) / 8, "big");
        if (bytes != NULL) { /* a buffer's error: encode_any reports it */
                rc = cv_enc_tag(b, negative ? 3 : 2);
                if (rc == 0)
                        rc = cv_enc_bytes(b, PyBytes_AS_STRING(bytes),
                                          (size_t)PyBytes_GET_SIZE(bytes));
        }
        Py_XDECREF(bytes);
        Py_XDECREF(bits);
        Py_XDECREF(n);
        return rc;
}

static int encode_int(struct cv_buf *b, PyObject *obj)
{
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);

        if (v == -1 && PyErr_Occurred())
                return -1;
        if (overflow > 0) {
                unsigned long long u = PyLong_AsUnsignedLongLong(obj);
                if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                                return -1;
                        PyErr_Clear();
                        return encode_bignum(b, obj, 0);
                }
                return cv_enc_uint(b, u);
        }
        if (overflow < 0)
                return encode_bignum(b, obj, 1);
        return cv_enc_int(b, v);
}

static int encode_any(struct cv_buf *b, PyObject *obj, unsigned depth);

static int encode_sequence(struct cv_buf *b, PyObject *obj, unsigned depth)
{
        PyObject *seq = PySequence_Fast(obj, "expected a sequence");
        if (seq == NULL)
                return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        PyObject **items = PySequence_Fast_ITEMS(seq);
        int rc = cv_enc_array(b, (size_t)n);
        for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
                rc = encode_any(b, items[i], depth + 1);
        Py_DECREF(seq);
        return rc;
}

static int encode_dict(struct cv_buf *b, PyObject *obj, unsigned depth)
{
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        int rc = cv_enc_map(b, (size_t)PyDict_Size(obj));

        while (rc == 0 && PyDict_Next(obj, &pos, &key, &value)) {
                /* Keys are encoded like values: the protocol's maps have text keys,
                 * but Out-style int keys are legal CBOR and decode fine in cbor2. */
                rc = encode_any(b, key, depth + 1);
                if (rc == 0)
                        rc = encode_any(b, value, depth + 1);
        }
        return rc;
}

static int encode_any(struct cv_buf *b, PyObject *obj, unsigned depth)
{
        int rc;

        if (depth > PYCBOR_MAX_DEPTH) {
                PyErr_SetString(PyExc_ValueError, "message nested too deeply");
                return -1;
        }
        if (obj == Py_None)
                rc = cv_enc_null(b);
        else if (PyBool_Check(obj))
                rc = cv_enc_bool(b, obj == Py_True);
        else if (PyLong_Check(obj))
                rc = encode_int(b, obj);
        else if (PyFloat_Check(obj))
                rc = cv_enc_double(b, PyFloat_AS_DOUBLE(obj));
        else if (PyUnicode_Check(obj))
                rc = encode_text(b, obj);
        else if (PyBytes_Check(obj))
                rc = cv_enc_bytes(b, PyBytes_AS_STRING(obj), (size_t)PyBytes_GET_SIZE(obj));
        else if (PyByteArray_Check(obj))
                rc = cv_enc_bytes(b, PyByteArray_AS_STRING(obj), (size_t)PyByteArray_GET_SIZE(obj));
        else if (PyMemoryView_Check(obj)) {
                PyObject *bytes = PyBytes_FromObject(obj);
                if (bytes == NULL)
                        return -1;
                rc = cv_enc_bytes(b, PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
                Py_DECREF(bytes);
        } else if (PyDict_Check(obj))
                rc = encode_dict(b, obj, depth);
        else if (PyList_Check(obj) || PyTuple_Check(obj))
                rc = encode_sequence(b, obj, depth);
        else {
                PyErr_Format(PyExc_TypeError, "cannot send a %.100s", Py_TYPE(obj)->tp_name);
                return -1;
        }
        if (PyErr_Occurred())
                return -1;
        return rc == 0 ? 0 : buf_error(b);
}

int pycbor_encode(struct cv_buf *b, PyObject *obj)
{
        return encode_any(b, obj, 0);
}

static PyObject *decode_any(const cbor_item_t *item, unsigned depth);

static PyObject *decode_string_like(const cbor_item_t *item, int text)
{
        /* Indefinite strings arrive as chunks; join them. */
        if (cbor_isa_string(item) ? cbor_string_is_definite(item)
                                  : cbor_bytestring_is_definite(item)) {
                const char *p =
                    (const char *)(text ? cbor_string_handle(item) : cbor_bytestring_handle(item));
                size_t len = text ? cbor_string_length(item) : cbor_bytestring_length(item);
                if (p == NULL)
                        p = "";
                return text ? PyUnicode_DecodeUTF8(p, (Py_ssize_t)len, "strict")
                            : PyBytes_FromStringAndSize(p, (Py_ssize_t)len);
        }
        size_t n = text ? cbor_string_chunk_count(item) : cbor_bytestring_chunk_count(item);
        cbor_item_t **chunks =
            text ? cbor_string_chunks_handle(item) : cbor_bytestring_chunks_handle(item);
        PyObject *parts = PyList_New((Py_ssize_t)n);
        if (parts == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                PyObject *part = decode_string_like(chunks[i], text);
                if (part == NULL) {
                        Py_DECREF(parts);
                        return NULL;
                }
                PyList_SET_ITEM(parts, (Py_ssize_t)i, part);
        }
        PyObject *empty = text ? PyUnicode_FromString("") : PyBytes_FromString("");
        PyObject *joined = NULL;
        if (empty != NULL)
                joined = text ? PyUnicode_Join(empty, parts)
                              : PyObject_CallMethod(empty, "join", "O", parts);
        Py_XDECREF(empty);
        Py_DECREF(parts);
        return joined;
}

static PyObject *decode_array(const cbor_item_t *item, unsigned depth)
{
        size_t n = cbor_array_size(item);
        cbor_item_t **items = cbor_array_handle(item);
        PyObject *list = PyList_New((Py_ssize_t)n);

        if (list == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                PyObject *v = decode_any(items[i], depth + 1);
                if (v == NULL) {
                        Py_DECREF(list);
                        return NULL;
                }
                PyList_SET_ITEM(list, (Py_ssize_t)i, v);
        }
        return list;
}

static PyObject *decode_map(const cbor_item_t *item, unsigned depth)
{
        size_t n = cbor_map_size(item);
        struct cbor_pair *pairs = cbor_map_handle(item);
        PyObject *dict = PyDict_New();

        if (dict == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                PyObject *k = decode_any(pairs[i].key, depth + 1);
                PyObject *v = k ? decode_any(pairs[i].value, depth + 1) : NULL;
                int rc = v ? PyDict_SetItem(dict, k, v) : -1;
                Py_XDECREF(k);
                Py_XDECREF(v);
                if (rc < 0) {
                        Py_DECREF(dict);
                        return NULL;
                }
        }
        return dict;
}

static PyObject *decode_float_ctrl(const cbor_item_t *item)
{
        if (cbor_float_ctrl_is_ctrl(item)) {
                if (cbor_is_bool(item))
                        return PyBool_FromLong(cbor_get_bool(item));
                Py_RETURN_NONE; /* null, undefined */
        }
        return PyFloat_FromDouble(cbor_float_get_float(item));
}

static PyObject *decode_any(const cbor_item_t *item, unsigned depth)
{
        if (depth > PYCBOR_MAX_DEPTH) {
                PyErr_SetString(PyExc_ValueError, "message nested too deeply");
                return NULL;
        }
        switch (cbor_typeof(item)) {
        case CBOR_TYPE_UINT:
                return PyLong_FromUnsignedLongLong(cbor_get_int(item));
        case CBOR_TYPE_NEGINT: {
                /* -1 - n, computed in Python ints so n = 2**64-1 does not overflow. */
                PyObject *n = PyLong_FromUnsignedLongLong(cbor_get_int(item));
                PyObject *neg = n ? PyNumber_Negative(n) : NULL;
                PyObject *one = PyLong_FromLong(1);
                PyObject *r = (neg && one) ? PyNumber_Subtract(neg, one) : NULL;
                Py_XDECREF(n);
                Py_XDECREF(neg);
                Py_XDECREF(one);
                return r;
        }
        case CBOR_TYPE_BYTESTRING:
                return decode_string_like(item, 0);
        case CBOR_TYPE_STRING:
                return decode_string_like(item, 1);
        case CBOR_TYPE_ARRAY:
                return decode_array(item, depth);
        case CBOR_TYPE_MAP:
                return decode_map(item, depth);
        case CBOR_TYPE_TAG: {
                cbor_item_t *inner = cbor_tag_item(item);
                PyObject *r = decode_any(inner, depth + 1);
                cbor_decref(&inner);
                return r;
        }
        case CBOR_TYPE_FLOAT_CTRL:
                return decode_float_ctrl(item);
        }
        PyErr_SetString(PyExc_ValueError, "unknown CBOR item type");
        return NULL;
}

PyObject *pycbor_decode(const cbor_item_t *item)
{
        return decode_any(item, 0);
}
