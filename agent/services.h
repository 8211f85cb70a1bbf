/*
 * The files, commands and ports services (docs/PROTOCOL.md sections 9, 10, 12):
 * requests that stay in flight (uploads, downloads, directory watches, commands,
 * tunnels) hang
 * off their connection as a `struct svc_req`, so CANCEL, duplicate ids,
 * disconnects and output flow control treat them like executions.
 */
#ifndef CELLVM_AGENT_SERVICES_H
#define CELLVM_AGENT_SERVICES_H

#include <cbor.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "msgtypes.h"

struct agent;
struct conn;
struct cv_buf;

/* Bytes of file data per FILE_CHUNK message. */
#define SVC_CHUNK (1u << 20)

struct svc_req;

struct svc_ops {
        const char *name; /* for logs */
        /* Ends the request: with ERROR cancelled when `notify`, silently on disconnect. Frees it.
         */
        void (*cancel)(struct agent *a, struct svc_req *r, bool notify);
        /* The connection's output went below its high water: produce more (may be NULL). */
        void (*resume)(struct agent *a, struct svc_req *r);
        /* A continuation message (FILE_DATA) for this request (may be NULL). */
        void (*data)(struct agent *a, struct svc_req *r, uint16_t type, const cbor_item_t *body);
};

/* Embedded in each service's request state. */
struct svc_req {
        struct svc_req *next; /* in conn->svcs */
        struct conn *conn;
        uint32_t id;
        const struct svc_ops *ops;
};

/* --- svc.c: the in-flight list of a connection --- */
void svc_attach(struct conn *c, struct svc_req *r, uint32_t id, const struct svc_ops *ops);
/* Removes `r` from its connection's list (no-op if detached). */
void svc_detach(struct svc_req *r);
struct svc_req *svc_find(struct conn *c, uint32_t id);
/* Cancels every service request of `c` without replying (disconnect). */
void svc_drop_all(struct agent *a, struct conn *c);
void svc_resume_all(struct agent *a, struct conn *c);
/* A continuation message (FILE_DATA, PORT_DATA) of request `id`; dropped if that request
 * already ended. */
void svc_data(struct agent *a, struct conn *c, uint16_t type, uint32_t id, const uint8_t *body,
              size_t len);
/* OK {} for request `id`. */
void svc_reply_ok_empty(struct conn *c, uint32_t id);
/* ERROR for a failed file operation: code from errno, message "what path: strerror (ENAME)". */
void svc_send_errno(struct agent *a, struct conn *c, uint32_t id, int err, const char *what,
                    const char *path);

/* --- creds.c: the sandbox user's credentials --- */
struct creds {
        char name[64];
        uid_t uid;
        gid_t gid;
        gid_t groups[64];
        int ngroups;
        char home[4096]; /* base of relative paths and default cwd of commands */
        bool drop;       /* the agent is root and the user is not: switch around operations */
};

/* Default sandbox user when a request names none. */
#define SVC_SANDBOX_USER "user"
/* Its uid and gid when a root agent runs where the user does not exist (a dev host). */
#define SVC_SANDBOX_FALLBACK_ID 1000

/* Resolves `name` (NULL: the default user). Returns 0 or -ENOENT for an unknown explicit user. */
int creds_lookup(struct agent *a, const char *name, struct creds *out);

/* File-system identity switch around file operations (setfsuid/setfsgid/setgroups). */
struct creds_saved {
        bool active;
        uid_t fsuid;
        gid_t fsgid;
        gid_t groups[64];
        int ngroups;
};
int creds_enter(const struct creds *cr, struct creds_saved *saved);
void creds_leave(struct creds_saved *saved);

/* Makes `path` absolute against the user's home into `out`. Returns 0 or -ENAMETOOLONG. */
int creds_resolve_path(const struct creds *cr, const char *path, char *out, size_t size);

/* --- files.c / file_transfer.c / fswatch.c --- */
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
void files_write_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void files_read_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void fswatch_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
/* Encodes EntryInfo of `path` (lstat'ed already into *st) as a CBOR map. */
struct stat;
void files_encode_entry(struct cv_buf *b, const char *path, const struct stat *st);

/* Reads the `path` and `user` keys shared by file requests; answers the error itself.
 * Returns 0 with `abs` filled, or -1. */
int files_request_path(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body,
                       const char *key, struct creds *cr, char *abs, size_t size);

/* --- ports.c: tunnels to TCP ports on the guest's loopback (section 12) --- */
void ports_open_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
/* A tunnel on the guest connection `fd` (taken over), accepted by the egress
 * proxy, for request `id` of `c`: EGRESS_OPENED, then PORT_DATA as for PORT_OPEN. */
void ports_adopt(struct agent *a, struct conn *c, uint32_t id, int fd);

/* --- egress.c: the guest's egress proxy listener (section 13) --- */
/* Listens on ADDR ("tcp:127.0.0.1:PORT"); before the agent's filter. 0 or -errno. */
int egress_listen(struct agent *a, const char *addr);
void egress_accept_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void egress_close(struct agent *a);

/* --- commands.c --- */
void commands_start_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_list_request(struct agent *a, struct conn *c, uint32_t id);
void commands_kill_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_stdin_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_resize_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_connect_request(struct agent *a, struct conn *c, uint32_t id,
                              const cbor_item_t *body);
/* A child was reaped: true if it was a command. */
bool commands_reaped(struct agent *a, pid_t pid, int status);
void commands_timers(struct agent *a, uint64_t now, uint64_t *next);
void commands_kill_all(struct agent *a);

#endif
