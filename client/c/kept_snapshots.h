/* E2B's snapshots kept on this host (docs/SNAPSHOTS.md, "Kept snapshots"):
 * a running sandbox's state saved as a fork's is (pause.h, with a fork key)
 * into a store of its own, never resumed itself. Each sandbox made of one is
 * a copy of its record in the paused store, resumed as a fork is (a new
 * generation). cellvm serve (serve_snapshots.c) and the CLI (cli_snapshots.c,
 * for the Python SDK) share it. */
#ifndef CELLVM_CLIENT_KEPT_SNAPSHOTS_H
#define CELLVM_CLIENT_KEPT_SNAPSHOTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKEPT_NAME_MAX 128

struct ckept {
        char key[72];                  /* its record's directory in the store */
        char name[CKEPT_NAME_MAX + 1]; /* "" when it was given none */
        char sandbox[72];              /* the sandbox it was taken from */
        int64_t created_ms;
};

/* $CELLVM_SNAPSHOTS_DIR, else $XDG_STATE_HOME/cellvm/snapshots, else
 * ~/.local/state/cellvm/snapshots. 0 or a negative errno. */
int ckept_root(char *out, size_t outlen);
/* The names E2B's SDKs give the image's own template (base,
 * code-interpreter-v1, ...): never a snapshot's. */
bool ckept_image_name(const char *t);
/* A name E2B would take for a snapshot: 1 to CKEPT_NAME_MAX letters,
 * digits, '-', '_' or '.', not '.' first. */
bool ckept_name_ok(const char *n);
/* The store's snapshots, newest first: 0 with *out (free it) and *n (no
 * store: none), or a negative errno. */
int ckept_list(struct ckept **out, size_t *n);
/* What `ref` names (an id or a name, with E2B's ":default" tag or none, after
 * a "team/" namespace if any) into `bare`: false when it names none (another
 * tag: each snapshot here has one build; a path). */
bool ckept_bare_ref(const char *ref, char *bare, size_t barelen);
/* Whether `sn` is what bare reference `bare` names (its key or name). */
bool ckept_is(const struct ckept *sn, const char *bare);
/* The snapshot `ref` names, newest first: 0 with `sn`, or -ENOENT. */
int ckept_find(const char *ref, struct ckept *sn);
/* E2B's SnapshotInfo {snapshotID, names} of `sn`: the id a create names it
 * by ("<name or key>:default"), and its full names (none without a name). */
json_t *ckept_info(const struct ckept *sn);
/* Record `dir`, just saved into the store under sn->key, made a snapshot:
 * its snapshot.json written, then an older snapshot of the same name dropped
 * (a name names its newest, as E2B gives the name's template a new build).
 * 0, or a negative errno with `err` (the record is then removed). */
int ckept_publish(const char *dir, const struct ckept *sn, char *err, size_t errlen);
/* What a create asks of the sandbox it makes from a snapshot. */
struct ckept_create {
        const char *metadata;  /* a JSON object's text; NULL: the snapshot's */
        json_t *envs;          /* over the snapshot's; NULL: none */
        bool pause_at_timeout; /* E2B's onTimeout "pause" (its resume carries it) */
};

/* A new record of the paused store (its directory in `dir`) under a new key
 * (`key`) copied from snapshot `sn` (ckept_find's) as `c` asks: its state
 * hard-linked. 0, -ENOENT (the snapshot was dropped meanwhile), or a
 * negative errno with `err`. */
int ckept_copy(const struct ckept *sn, const struct ckept_create *c, char *key, size_t keylen,
               char *dir, size_t dirlen, char *err, size_t errlen);
/* Snapshot `ref` removed (sandboxes made of it run on): 0 or -ENOENT, or a
 * negative errno. */
int ckept_drop(const char *ref);

#endif
