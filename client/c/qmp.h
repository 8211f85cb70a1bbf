/*
 * A small QMP client (QEMU's JSON machine protocol over a Unix socket), what
 * a template build and a clone's restore need (docs/SNAPSHOTS.md): one
 * command at a time, its `{"return": ...}` or `{"error": ...}`, events
 * skipped, an fd passed with a command (SCM_RIGHTS, for `getfd`), and
 * query-migrate polled until a migration is over.
 *
 * Everything QEMU sends is parsed by a bounded JSON scanner (one object a
 * line, at most CQMP_MAX_LINE bytes, nesting at most CQMP_MAX_DEPTH): no JSON
 * library, only the members that are read are looked at.
 */
#ifndef CELLVM_CLIENT_QMP_H
#define CELLVM_CLIENT_QMP_H

#include <stddef.h>

#define CQMP_MAX_LINE (64 * 1024)
#define CQMP_MAX_DEPTH 32

enum cqmp_kind { CQMP_GREETING, CQMP_RETURN, CQMP_ERROR, CQMP_EVENT };

/* One line from QEMU. `value` borrows the line: the return value's JSON text
 * (CQMP_RETURN) or the error object's (CQMP_ERROR). */
struct cqmp_reply {
        enum cqmp_kind kind;
        const char *value;
        size_t value_len;
        char error_class[64]; /* CQMP_ERROR: "class" and "desc", unescaped, maybe cut short */
        char desc[512];
};

/* Classifies one line (without its line break): 0, or -EPROTO when it is
 * not one well-formed JSON object with a "QMP", "return", "error" or
 * "event" member. */
int cqmp_parse_reply(const char *line, size_t len, struct cqmp_reply *r);

/* The value of member `key` of the JSON object `obj` (len bytes): its text
 * span in *val and *vlen. 0, -ENOENT (no such member) or -EPROTO (not an object). */
int cqmp_json_get(const char *obj, size_t len, const char *key, const char **val, size_t *vlen);

/* A JSON string value unescaped into `out` (UTF-8, NUL-terminated). 0,
 * -E2BIG (cut short to fit), or -EPROTO (not a valid JSON string). */
int cqmp_json_string(const char *val, size_t len, char *out, size_t outlen);

struct cqmp {
        int fd;
        size_t len; /* bytes in buf */
        char buf[CQMP_MAX_LINE + 1];
        char line[CQMP_MAX_LINE + 1]; /* the last line read: replies borrow it */
        char err[600];
};

/* Connects to `path` (QEMU's -qmp unix:PATH,server=on,wait=off), retrying
 * while it does not exist or refuses, as long as `alive(ud)` says QEMU runs
 * (NULL: no check), reads the greeting and sends qmp_capabilities. 0 or a
 * negative errno with q->err saying why (q->fd is -1 then). */
int cqmp_connect(struct cqmp *q, const char *path, int timeout_ms, int (*alive)(void *), void *ud);

/* Runs `command` with `args_json` (a JSON object's text, or NULL) and, when
 * `pass_fd` >= 0, that fd sent with it. 0 with its return in *reply (if not
 * NULL); -EREMOTEIO when QEMU answers an error (q->err: "QMP command: class:
 * desc"), -ETIMEDOUT, -ECONNRESET, -EPROTO. */
int cqmp_execute(struct cqmp *q, const char *command, const char *args_json, int pass_fd,
                 int timeout_ms, struct cqmp_reply *reply);

/* Polls query-migrate until the (outgoing or incoming) migration completed:
 * 0, or -EIO when it failed (q->err has QEMU's error-desc), -ETIMEDOUT, or
 * cqmp_execute's error. */
int cqmp_wait_migration(struct cqmp *q, int timeout_ms);

void cqmp_close(struct cqmp *q);

#endif
