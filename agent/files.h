/* The files service's one-shot requests (files.c, docs/PROTOCOL.md section 9) and what
 * file_transfer.c and fswatch.c share with them. */
#ifndef CELLVM_AGENT_FILES_H
#define CELLVM_AGENT_FILES_H

#include <cbor.h>
#include <stddef.h>
#include <stdint.h>

struct agent;
struct conn;
struct creds;
struct creds_saved;
struct cv_buf;
struct stat;

void files_stat_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void files_list_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void files_remove_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void files_rename_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void files_mkdir_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
/* mkdir -p of an absolute path (restored on return): 1 if the last component was
 * created, 0 if it existed, or -errno. Runs with the caller's credentials. */
int files_make_dirs(char *path);
/* files_make_dirs for the user of `cr` (creds entered, `saved` from creds_enter): where the
 * user may not write, each missing directory is made as root and chowned to them, as envd
 * does (files.c). Same results. */
int files_make_dirs_owned(char *path, const struct creds *cr, struct creds_saved *saved);
/* Encodes EntryInfo of `path` (lstat'ed already into *st) as a CBOR map. */
void files_encode_entry(struct cv_buf *b, const char *path, const struct stat *st);

/* Reads the `path` and `user` keys shared by file requests; answers the error itself.
 * Returns 0 with `abs` filled, or -1. */
int files_request_path(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body,
                       const char *key, struct creds *cr, char *abs, size_t size);

#endif
