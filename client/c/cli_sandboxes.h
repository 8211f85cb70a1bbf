/* The CLI's side of the sandbox registry (registry.h): `cellvm ps`,
 * `cellvm kill`, and the record of the VM that `run`/`shell` boot. */
#ifndef CELLVM_CLIENT_CLI_SANDBOXES_H
#define CELLVM_CLIENT_CLI_SANDBOXES_H

#include <jansson.h>
#include <stdbool.h>

#include "cellvm.h"
#include "registry.h"
#include "vmm.h"

/* One sandbox's registry record (run/shell have one, cellvm serve one per VM). */
struct sbx_rec {
        struct creg_entry e;
        char path[sizeof(((struct creg *)0)->dir) + sizeof(((struct creg_entry *)0)->key) + 16];
};

int cmd_ps(int argc, char **argv);
struct cpaused;
struct csm;
/* The paused sandbox `p` with manifest `m` as `cellvm ps --json` lists it:
 * a new object, or NULL when out of memory. */
json_t *sbx_paused_json(const struct cpaused *p, const struct csm *m);
/* Every other command looks too: ends what is past deadline + grace,
 * reporting only what it does; a missing or unusable registry is skipped. */
void sbx_sweep(void);
int cmd_kill(int argc, char **argv);

/* Before booting: the limits (live sandboxes, `lifetime_s` against the
 * maximum) checked under the registry's lock, which stays held until
 * sbx_record. Prints why and returns a negative errno when refused. */
int sbx_reserve(double lifetime_s);
/* Releases sbx_reserve's lock without a record (the VM did not start). */
void sbx_release(void);
/* After cvm_start: records the VM (deadline: boot budget + lifetime) and
 * releases the lock. Errors are reported, not fatal: the VM still runs. */
void sbx_record(struct sbx_rec *rec, const struct cvm *vm, const char *image, unsigned memory_mb,
                unsigned vcpus, double boot_budget_s, double lifetime_s);
/* sbx_record under registry key `key` (a resumed sandbox keeps its own;
 * NULL: a new one) and template name `template_` (NULL: none). 0, or
 * -EEXIST when a live sandbox has the key, or another negative errno (said
 * on stderr); the lock is released either way. */
int sbx_record_as(struct sbx_rec *rec, const char *key, const char *template_, const struct cvm *vm,
                  const char *image, unsigned memory_mb, unsigned vcpus, double boot_budget_s,
                  double lifetime_s);
/* One request `type` with body `b` to the agent of `e` (its address) over a
 * connection of our own: 0, or a negative errno with `err`. */
struct cv_buf;
int sbx_guest_call(const struct creg_entry *e, uint16_t type, struct cv_buf *b, char *err,
                   size_t errlen);
/* A --envs argument: a JSON object on one line (said on stderr when not). */
bool sbx_envs_arg_ok(const char *arg);
/* E2B's default lifetime ($CELLVM_DEFAULT_TIMEOUT, else 300 s) into *t: 0,
 * or -EINVAL (said on stderr) when the variable is no number of seconds > 0. */
int sbx_default_timeout(double *t);
/* A new registry key "<vmm>-<8 hex>" that no live or paused sandbox has (a
 * fork's). 0, or a negative errno (said on stderr). */
int sbx_new_key(const char *vmm, char *key, size_t keylen);
/* The live sandbox `ident` (its key or id) after a sweep, with its entry's
 * `metadata` line (JSON text; "{}" when it has none). 0, -ENOENT, or a
 * negative errno (said on stderr). */
int sbx_find(const char *ident, struct creg_entry *out, char *metadata, size_t mlen);
/* Kills what is left of `e`'s VMM and removes its entry and temp directory. */
void sbx_remove(const struct creg_entry *e);
/* The agent answered: the lifetime starts now; recorded and sent to the
 * guest (SET_DEADLINE, with the TCG clock slack when not under KVM). */
void sbx_start_clock(struct sbx_rec *rec, struct cvc *c, const struct cvm *vm, double lifetime_s);
/* A new deadline for a recorded sandbox, `lifetime_s` from now (the registry
 * only: the caller tells the guest). */
void sbx_set_deadline(struct sbx_rec *rec, double lifetime_s);
/* Removes the record (async-signal-safe: a signal handler may call it). */
void sbx_forget(struct sbx_rec *rec);
/* Records the E2B template name and the metadata (JSON object text, kept
 * by pointer: it must outlive `rec`'s writes) in the entry. */
void sbx_describe(struct sbx_rec *rec, const char *template_, const char *metadata);
struct snap_report;
/* `rec`'s entry as one line of JSON on stdout (cellvm create --json), with
 * the restore's stages as "restore" when `report` is not NULL. 0 or 3. */
int sbx_print_json(const struct sbx_rec *rec, const struct snap_report *report);
/* `cellvm set-timeout [--registry-only] [--json] ID S`. */
int cmd_set_timeout(int argc, char **argv);
/* `cellvm hold [--release] ID PID`: the holder of a sandbox's channel. */
int cmd_hold(int argc, char **argv);
/* Records `pid` (with its start time) as the holder of `rec`'s channel; the
 * next write of the entry (sbx_describe) stores it. create/resume --holder. */
void sbx_hold(struct sbx_rec *rec, pid_t pid);
/* A pid > 1 in decimal: 0 or -EINVAL. */
int sbx_parse_pid(const char *s, pid_t *pid);
/* The guest's own deadline for a sandbox ending in `s` seconds (docs/SDK.md). */
double sbx_guest_timeout_s(double s, bool kvm);

/* The process holding `e`'s agent channel (cellvm hold) still runs. */
bool sbx_held(const struct creg_entry *e);

#endif
