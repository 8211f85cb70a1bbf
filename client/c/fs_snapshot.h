/*
 * The guest's side of a filesystem-only pause (pause.h, docs/SNAPSHOTS.md
 * "Filesystem-only pause"), over an agent connection:
 * image-build/guest/fs-snapshot archives the files the sandbox changed, the
 * archive comes to the host, and on resume goes to a fresh clone of the
 * template, where the tool puts the files back. The tool runs as CMD_START's
 * `system` (root, the agent's capabilities): nothing a client chooses.
 *
 * A connection is either the CLI's own (struct cvc, one request at a time)
 * or one of cellvm serve's multiplexed ones: struct cfs_link is the little
 * both give.
 */
#ifndef CELLVM_CLIENT_FS_SNAPSHOT_H
#define CELLVM_CLIENT_FS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "cellvm.h"

struct cv_buf;

/* One request at a time over an agent connection. */
struct cfs_link {
        void *ud;
        /* Starts a request of `type`: 0 with *req, or a negative errno. */
        int (*begin)(void *ud, uint16_t type, struct cv_buf *body, void **req);
        /* A continuation (FILE_DATA) of `req`. */
        int (*more)(void *req, uint16_t type, struct cv_buf *body);
        /* `req`'s next message: 1 with `ev` (cvc_event_free it), 0 after
         * `timeout_ms`, or a negative errno (the connection broke). */
        int (*next)(void *req, int timeout_ms, struct cvc_event *ev);
        void (*end)(void *req);
};

/* The link of `c` (the CLI's connection, nothing else in flight on it). */
void cfs_link_cvc(struct cfs_link *l, struct cvc *c);

/* Archives the guest's changed files into host file `path` (created, 0600),
 * at most `max_bytes` of it (the archive is built in the guest's memory: a
 * guest that sends more is refused with -EFBIG). 0, or a negative errno with
 * `err` (the tool's own words when it failed). */
int cfs_pack(const struct cfs_link *l, const char *path, uint64_t max_bytes, char *err,
             size_t errlen);
/* Puts the files of archive `path` back into the guest (a fresh clone of the
 * template the archived one came from). 0 or a negative errno with `err`. */
int cfs_unpack(const struct cfs_link *l, const char *path, char *err, size_t errlen);

#endif
