/* Printing a decoded CBOR tree as JSON, for `cellvm info` and `cellvm contexts`.
 * The tree comes from cv_body_parse*(), whose depth check bounds the recursion. */
#include "print_json.h"

#include <inttypes.h>
#include <math.h>

static void print_string(FILE *f, const unsigned char *s, size_t len)
{
        fputc('"', f);
        for (size_t i = 0; i < len; i++) {
                unsigned char ch = s[i];
                if (ch == '"' || ch == '\\')
                        fprintf(f, "\\%c", ch);
                else if (ch < 0x20)
                        fprintf(f, "\\u%04x", ch);
                else
                        fputc(ch, f);
        }
        fputc('"', f);
}

void cvc_print_json(FILE *f, const cbor_item_t *item)
{
        if (!item) {
                fputs("null", f);
                return;
        }
        switch (cbor_typeof(item)) {
        case CBOR_TYPE_UINT:
                fprintf(f, "%" PRIu64, cbor_get_int(item));
                break;
        case CBOR_TYPE_NEGINT: {
                /* CBOR negative n encodes -1 - n, which may not fit an int64_t. */
                uint64_t n = cbor_get_int(item);
                if (n == UINT64_MAX)
                        fputs("-18446744073709551616", f);
                else
                        fprintf(f, "-%" PRIu64, n + 1);
                break;
        }
        case CBOR_TYPE_BYTESTRING:
                fprintf(f, "\"<%zu bytes>\"",
                        cbor_bytestring_is_definite(item) ? cbor_bytestring_length(item) : 0);
                break;
        case CBOR_TYPE_STRING:
                if (cbor_string_is_definite(item))
                        print_string(f, cbor_string_handle(item), cbor_string_length(item));
                else
                        fputs("\"<indefinite string>\"", f);
                break;
        case CBOR_TYPE_ARRAY: {
                fputc('[', f);
                cbor_item_t **items = cbor_array_handle(item);
                for (size_t i = 0; i < cbor_array_size(item); i++) {
                        if (i)
                                fputs(", ", f);
                        cvc_print_json(f, items[i]);
                }
                fputc(']', f);
                break;
        }
        case CBOR_TYPE_MAP: {
                fputc('{', f);
                struct cbor_pair *pairs = cbor_map_handle(item);
                for (size_t i = 0; i < cbor_map_size(item); i++) {
                        if (i)
                                fputs(", ", f);
                        cvc_print_json(f, pairs[i].key);
                        fputs(": ", f);
                        cvc_print_json(f, pairs[i].value);
                }
                fputc('}', f);
                break;
        }
        case CBOR_TYPE_TAG:
                cvc_print_json(f, cbor_tag_item(item));
                break;
        case CBOR_TYPE_FLOAT_CTRL:
                if (cbor_float_ctrl_is_ctrl(item)) {
                        uint8_t v = cbor_ctrl_value(item);
                        fputs(v == CBOR_CTRL_TRUE    ? "true"
                              : v == CBOR_CTRL_FALSE ? "false"
                                                     : "null",
                              f);
                } else {
                        double d = cbor_float_get_float(item);
                        if (isfinite(d))
                                fprintf(f, "%.17g", d);
                        else
                                fputs("null", f);
                }
                break;
        }
}
