/* Printing a decoded CBOR tree as JSON. */
#ifndef CELLVM_CLIENT_PRINT_JSON_H
#define CELLVM_CLIENT_PRINT_JSON_H

#include <stdio.h>

#include <cbor.h>

/* Writes `item` as one line of JSON; byte strings print as "<N bytes>". */
void cvc_print_json(FILE *f, const cbor_item_t *item);

#endif
