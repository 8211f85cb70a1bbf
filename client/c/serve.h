/*
 * cellvm serve: E2B's protocols (control plane, envd, code interpreter) on
 * one HTTP/1.1 listener, in front of micro-VMs this process owns
 * (docs/SERVE.md). Every byte a client sends is hostile until parsed within
 * bounds; every request carries the API key (control plane) or its sandbox's
 * access token (envd, /execute).
 *
 * Threads: libmicrohttpd runs one thread per connection; each sandbox has one
 * agent connection, shared through serve_mux.h; lifecycle changes (restore,
 * kill) take `serve.life`; a reaper thread ends sandboxes at their deadline.
 */
#ifndef CELLVM_CLIENT_SERVE_H
#define CELLVM_CLIENT_SERVE_H

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli_sandboxes.h"
#include "serve_mux.h"
#include "vmm.h"

/* E2B's ports: envd and the code interpreter (E2b-Sandbox-Port). */
#define SERVE_ENVD_PORT 49983
#define SERVE_JUPYTER_PORT 49999
/* The envd version the SDKs gate features on (PROTOCOL_NOTES.md section 5). */
#define SERVE_ENVD_VERSION "0.6.13"
#define SERVE_DEFAULT_TIMEOUT_S 300
#define SERVE_TOKEN_LEN 32 /* hex characters of an envdAccessToken */

struct proc;
struct watcher;
struct serve_metrics;
struct serve_egress;
struct sandbox;
/* Ends the watchers of a sandbox being freed (serve_watch.c). */
void serve_watchers_free(struct sandbox *s);

struct sandbox {
        char id[72]; /* the registry key: short, lowercase, DNS-label safe */
        char token[SERVE_TOKEN_LEN + 1];
        char template_id[64];
        json_t *metadata; /* object of strings */
        json_t *envs;     /* object of strings: the sandbox-wide environment */
        int refs;         /* under serve.life; the table holds one */
        bool dead;        /* killed or expired: no longer in the table */
        /* network.allowPublicTraffic=false: its other ports need the traffic token
         * (serve_port.c). Set once at create, read with __atomic loads. */
        bool private_traffic;
        bool auto_pause;            /* E2B's lifecycle onTimeout "pause": paused at its deadline */
        bool auto_pause_files_only; /* ... with keepMemory false (autoPauseMemory) */
        /* E2B's autoResume: a request routed to it while it is paused resumes
         * it (serve_wake), with a deadline `resume_timeout_s` (its create's). */
        bool auto_resume;
        double resume_timeout_s;
        struct cvm vm;
        struct cvm_opts opts;
        struct sbx_rec rec;
        struct mux mux;
        int64_t started_ms, deadline_ms;
        unsigned memory_mb, vcpus;
        pthread_mutex_t procs_lock;    /* procs and watchers */
        struct proc *procs;            /* commands started through envd (serve_process.c) */
        struct watcher *watchers;      /* envd's polled watchers (serve_watch.c) */
        json_t *file_meta;             /* path -> {key: value}: envd's file metadata */
        struct serve_metrics *metrics; /* samples of its use (serve_metrics.c) */
        struct serve_egress *egress;   /* its egress proxy, if it has one (serve_egress.c) */
        unsigned next_watcher;
        struct sandbox *next;
};

struct serve {
        pthread_mutex_t life;
        struct sandbox *sandboxes;
        char api_key[128];
        const char *image;
        /* The SDKs' sandbox domain: getHost(port) is "<port>-<id>.<domain>",
         * which the Host routing reads back. */
        char domain[160];
        unsigned memory_mb, vcpus;
        unsigned listen_port; /* its TCP port (0 on a Unix socket): egress never dials it */
        bool ready;
        volatile int stopping;
};

extern struct serve serve;

/* --- options and signals shared by cellvm serve and cellvm mcp (serve_main.c) --- */

/* --memory ('m') or --vcpus ('n') into serve's settings; -EINVAL (said on
 * stderr, as `cellvm CMD`) when out of range. */
int serve_vm_option(const char *cmd, int opt, const char *arg);
/* Blocks SIGTERM, SIGINT and SIGHUP (in `set`, for sigwait) in this thread
 * and the ones it starts; ignores SIGPIPE. */
void serve_block_signals(sigset_t *set);

/* --- sandboxes (serve_sandbox.c) --- */

/* A new sandbox from the template: 0 with *out referenced (serve_put it), or
 * a negative errno with `err` saying why (-EAGAIN: the sandbox limit). */
int serve_create(const char *template_id, double timeout_s, json_t *metadata, json_t *envs,
                 struct sandbox **out, char *err, size_t errlen);
/* A clone of the template with its agent connection, in no table (the pool's
 * and serve_create's): 0 with *out referenced once, or a negative errno. */
int serve_restore(double timeout_s, struct sandbox **out, char *err, size_t errlen);
/* serve_restore under registry key `key` (a filesystem-only pause's resume:
 * the sandbox keeps its id); NULL: a new key. */
int serve_restore_as(const char *key, double timeout_s, struct sandbox **out, char *err,
                     size_t errlen);
/* The environment of `s`'s commands and code contexts, a new object (NULL:
 * no memory): E2B's default variables, E2B_SANDBOX=true, E2B_SANDBOX_ID (its
 * id) and E2B_TEMPLATE_ID (its templateID; no E2B_TEAM_ID: no teams here),
 * then its envVars over them. */
json_t *serve_sandbox_envs(const struct sandbox *s);
/* A JSON object of texts (envs, sandbox_envs) as the CBOR map an agent request
 * carries; -EINVAL when a value is not a text (serve_interp.c). */
struct cv_buf;
int serve_enc_string_map(struct cv_buf *b, json_t *obj);
/* Stops `s`'s VM, connection and registry record. Call with serve.life held. */
void serve_stop_vm(struct sandbox *s);
/* The live sandbox `id`, referenced; NULL when there is none. */
struct sandbox *serve_get(const char *id);
/* One more reference to `s` (a stream that outlives its request's). */
struct sandbox *serve_ref(struct sandbox *s);
void serve_put(struct sandbox *s);
/* Ends `s` (VM killed, registry record removed); false if it was gone. */
bool serve_kill(struct sandbox *s);
/* `nhex` random hex digits and a NUL into `out` (an access token). 0 or a negative errno. */
int serve_random_hex(char *out, size_t nhex);
/* Takes `s` out of the table, its VM left running and the table's
 * reference kept for the caller (a pause); false if it was not there. */
bool serve_unlink(struct sandbox *s);
/* Puts `s` (with the table's reference) into the table. */
void serve_insert(struct sandbox *s);
/* Moves the deadline to `timeout_s` from now, in the registry and the guest. */
int serve_set_timeout(struct sandbox *s, double timeout_s, char *err, size_t errlen);
/* Every live sandbox, referenced (serve_put each, free the array). */
int serve_list(struct sandbox ***out, size_t *n);
/* Kills every sandbox (SIGTERM). */
void serve_kill_all(void);
/* `nhex` random lowercase hex digits and a NUL (tokens, session ids). */
int serve_random_hex(char *out, size_t nhex);
/* The reaper: ends sandboxes whose deadline passed or whose VM exited. */
void *serve_reaper(void *arg);

/* --- pause and resume (serve_pause.c) ---
 * E2B's pause keeps a sandbox's whole state until it is resumed (connect) or
 * killed: here a record of the user's paused store (pause.h), the same the
 * CLI and the Python SDK use, with the envd access token kept beside it so
 * that the SDK's Sandbox object keeps working after a resume. Pauses and
 * resumes run one at a time. */
struct serve_paused {
        char id[72];
        char template_id[64];
        json_t *metadata; /* owned */
        int64_t started_ms;
        unsigned memory_mb, vcpus;
};
/* Pauses live sandbox `s` (referenced by the caller): 0 (it is no longer
 * in the table), -ENOENT (ended meanwhile), or a negative errno with `err`
 * (it runs on). Without `keep_memory` only its files are kept (E2B's
 * filesystem-only pause: pause.h, serve_fs.c), and its resume is a new boot. */
int serve_pause(struct sandbox *s, bool keep_memory, char *err, size_t errlen);
/* Sandbox `id` running: 1 when it was paused and is resumed now with a
 * deadline `timeout_s` from now, 0 when it was running already (its
 * deadline untouched), both with *out referenced; -ENOENT when it is
 * neither, -EAGAIN (the limit), or another negative errno with `err`. */
int serve_resume(const char *id, double timeout_s, struct sandbox **out, char *err, size_t errlen);
/* The paused sandboxes (oldest first): 0 with *out (serve_paused_free it). */
/* E2B's fork: `s` (referenced by the caller) saved whole with its guest
 * running on (briefly stopped, its clock set again after), and `count` new
 * sandboxes resumed from that one save, each a copy with its own id, token,
 * generation (fresh entropy, random generators reseeded) and deadline
 * `timeout_s` from now; its metadata, envs, egress rules and traffic rule
 * too, not its lifecycle. 0 with one result per fork in `out` (`count`
 * entries), -ENOENT (`s` ended), or another negative errno with `err` before
 * any fork was made. */
struct serve_fork_result {
        struct sandbox *s; /* the fork, referenced (serve_put it); NULL when rc < 0 */
        int rc;            /* 0, or why it did not start (-EAGAIN: the sandbox limit) */
        char err[512];
};
int serve_fork(struct sandbox *s, double timeout_s, unsigned count, struct serve_fork_result *out,
               char *err, size_t errlen);
/* `s` saved, with its guest running on, into a new record of the store at
 * `root` under `key` (a kept snapshot, serve_snapshots.c): 0 with its
 * directory in `dir`, -ENOENT (`s` ended), or a negative errno with `err`. */
int serve_snapshot_save(struct sandbox *s, const char *root, const char *key, char *dir,
                        size_t dirlen, char *err, size_t errlen);
/* A new sandbox from kept snapshot `ref`: its record copied into the paused
 * store with `metadata` and the snapshot's envs plus `envs`, then resumed as
 * a copy of its own (a new generation) with `timeout_s`. 0 with *out
 * referenced, -ENOENT (no such snapshot), -EAGAIN (the sandbox limit), or
 * another negative errno with `err`. */
int serve_snapshot_instantiate(const char *ref, double timeout_s, json_t *metadata, json_t *envs,
                               struct sandbox **out, char *err, size_t errlen);
/* The paused sandbox `id` resumed for a request routed to it, if it was
 * created with autoResume (and paused with its memory): it, referenced; NULL
 * when it is not such a sandbox or its resume failed (said on stderr). */
struct sandbox *serve_wake(const char *id);
int serve_paused_list(struct serve_paused **out, size_t *n);
void serve_paused_free(struct serve_paused *v, size_t n);
/* Paused sandbox `id`: 0 with *out (serve_paused_free(out, 1)) or -ENOENT. */
int serve_paused_get(const char *id, struct serve_paused *out);
/* Drops paused sandbox `id` (E2B's kill): 1, 0 when there is none, or a negative errno. */
int serve_paused_kill(const char *id);
/* A filesystem-only pause's guest side (serve_fs.c): the archive of the files
 * sandbox `ud` changed, written to `path` (a cpause_pack_fn); and such an
 * archive put back into `s`, a fresh clone. 0 or a negative errno with `err`. */
int serve_fs_pack(void *ud, const char *path, uint64_t max_bytes, char *err, size_t errlen);
int serve_fs_unpack(struct sandbox *s, const char *path, char *err, size_t errlen);

/* --- file metadata (serve_meta.c) ---
 * envd keeps X-Metadata-* of an upload with the file (xattrs) and shows it in
 * its entries; the guest's file systems keep no user xattrs, so the server
 * keeps it, per sandbox, by path: set by an upload (an upload without any
 * clears it), moved by Move, dropped by Remove. */
void serve_meta_set(struct sandbox *s, const char *path, json_t *meta); /* borrows meta */
/* Adds `metadata` to an EntryInfo (with its `path`) when the file has any. */
void serve_meta_attach(struct sandbox *s, json_t *entry);
void serve_meta_move(struct sandbox *s, const char *from, const char *to);
void serve_meta_remove(struct sandbox *s, const char *path);

/* --- metrics (serve_metrics.c) --- */

/* E2B collects a sample every 5 s; 120 of them keep the last 10 minutes. */
#define SERVE_METRICS_PERIOD_S 5
#define SERVE_METRICS_KEEP 120
/* The sampler thread: SYS_STATS of every live sandbox each period. */
void *serve_metrics_sampler(void *arg);
/* The samples of `s` with start_s <= timestampUnix <= end_s (< 0: no bound),
 * as E2B's SandboxMetric array; NULL when out of memory. */
json_t *serve_metrics_json(struct sandbox *s, int64_t start_s, int64_t end_s);
void serve_metrics_free(struct sandbox *s);

/* --- the warm pool (serve_pool.c) --- */

/* Keeps `n` clones restored, given their own generation and warmed in a
 * throwaway context, refilled in the background. */
int serve_pool_start(unsigned n);
/* A pooled clone (referenced, in no table), or NULL when the pool is empty. */
struct sandbox *serve_pool_take(void);
/* Wakes the pool's filler: after a take, once the taken clone is handed out
 * (a restore holds the registry's lock, which the handout's deadline needs). */
void serve_pool_refill(void);
/* How many clones wait in the pool now. */
unsigned serve_pool_size(void);
/* Kills the pooled clones and stops refilling. */
void serve_pool_stop(void);

/* --- one sandbox, a pod's (serve_single.c, --single) --- */

void serve_single_enable(void);
bool serve_single_enabled(void);
/* 0 when a create may make the server's one sandbox; -EAGAIN once it was
 * handed out (or is being made). Without --single, always 0. */
int serve_single_claim(void);
/* A claimed create failed: the next may try. */
void serve_single_unclaim(void);
/* The claimed create succeeded: its sandbox is in the table. */
void serve_single_handed_out(void);
/* Waits until the pool holds the warm sandbox: 0, or -ECANCELED with the
 * signal of `signals` that came first in *sig. */
int serve_single_wait_warm(const sigset_t *signals, int *sig);
/* A thread: /health turns 503 once the handed-out sandbox ended. */
void *serve_single_watch(void *arg);

/* --- the agent-sandbox backend (serve_kube.c, --backend agent-sandbox) --- */

/* --backend ('b'), --namespace ('N'), --warm-pool ('w'), --router ('r'),
 * --pod-port ('P'): 0, or -EINVAL said on stderr. */
int serve_kube_option(int opt, const char *arg);
bool serve_kube_enabled(void);
/* Loads the cluster's credentials: 0, or a negative errno with `err`. */
int serve_kube_start(char *err, size_t errlen);
void serve_kube_stop(void);
/* The metadata filter of E2B's list ("k=v&k2=v2", URL-encoded) against an
 * object of strings (serve_api.c). */
bool serve_metadata_matches(const json_t *metadata, const char *filter);
/* The checks create makes of its body (serve_api.c), before any sandbox is
 * made: 0 with the timeout (1: its network rules ask for egress), -ENOENT (a
 * template that is neither one of the image's names nor, when
 * `keeps_snapshots`, a reference that could name a kept snapshot: whether
 * one does, the create finds) or -EINVAL, with `why`. */
int serve_check_create(json_t *body, bool keeps_snapshots, double *timeout, char *why,
                       size_t whylen);

/* --- the API key (serve_key.c) --- */

/* $CELLVM_API_KEY, else the key in the user's config directory, made (0600)
 * and printed on first start. */
int serve_load_key(char *out, size_t outlen, char *err, size_t errlen);

#endif
