/* cellvm serve's envd (spec/envd): the helpers its RPC files share. */
#ifndef CELLVM_CLIENT_SERVE_ENVD_H
#define CELLVM_CLIENT_SERVE_ENVD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "serve_http.h"

/* The agent's error code (docs/PROTOCOL.md 3, 9) as Connect's. */
const char *connect_code(const char *code);
/* mux_call's failure ("code: message") as a Connect error response. */
enum MHD_Result call_failure(struct hreq *h, int rc, const char *err);
/* A string member by its proto JSON name (or the proto field name), or NULL. */
const char *str_field(json_t *o, const char *camel, const char *snake);
/* A uint64 that proto JSON may write as a number or a string. */
bool uint_field(json_t *o, const char *key, uint64_t *out);
/* A streaming RPC's error before its first message: an end-stream message. */
enum MHD_Result stream_error(struct hreq *h, const char *code, const char *msg);

/* The agent's entry (docs/PROTOCOL.md 9) as envd's EntryInfo, or NULL. */
json_t *entry_json(const cbor_item_t *e);

/* filesystem.Filesystem's watches (serve_watch.c). */
enum MHD_Result watch_dir(struct hreq *h, json_t *req, const char *user);
enum MHD_Result watcher_create(struct hreq *h, json_t *req, const char *user);
enum MHD_Result watcher_events(struct hreq *h, json_t *req);
enum MHD_Result watcher_remove(struct hreq *h, json_t *req);

/* process.Process (serve_process.c). */
enum MHD_Result process_start(struct hreq *h, json_t *req, const char *user);
enum MHD_Result process_connect(struct hreq *h, json_t *req);
enum MHD_Result process_list(struct hreq *h);
enum MHD_Result process_signal(struct hreq *h, json_t *req);
enum MHD_Result process_stdin(struct hreq *h, json_t *req, bool close_it);
enum MHD_Result process_update(struct hreq *h, json_t *req);

#endif
