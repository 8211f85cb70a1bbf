/* FILE_WRITE uploads and FILE_READ downloads (file_transfer.c, docs/PROTOCOL.md section 9). */
#ifndef CELLVM_AGENT_FILE_TRANSFER_H
#define CELLVM_AGENT_FILE_TRANSFER_H

#include <cbor.h>
#include <stdint.h>

struct agent;
struct conn;

void files_write_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void files_read_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);

#endif
