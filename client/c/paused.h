/*
 * The user's paused sandboxes as the CLI sees them: the Python SDK's paused
 * store (client/python/cellvm/pause.py, docs/SNAPSHOTS.md "Pause and
 * resume"), <root>/<registry key>/{manifest,state} with kind=paused. The CLI
 * lists them (`cellvm ps`) and drops them (`cellvm kill ID`, E2B's kill of a
 * paused sandbox); pause.h and cli_pause.h pause and resume them.
 */
#ifndef CELLVM_CLIENT_PAUSED_H
#define CELLVM_CLIENT_PAUSED_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

struct csm;

#define CPAUSED_ROOT_ENV "CELLVM_PAUSED_DIR"
#define CPAUSED_MAX 256

struct cpaused {
        char dir[PATH_MAX];
        char key[256];        /* the directory's name: the registry key it had */
        char sandbox_id[160]; /* "" when the manifest has none */
        char vmm[32];
        uint64_t memory_mb, started_ms;
};

/* $CELLVM_PAUSED_DIR, else $XDG_STATE_HOME/cellvm/paused, else
 * ~/.local/state/cellvm/paused (as the SDK). 0, -ENOENT (no home) or -ENAMETOOLONG. */
int cpaused_root(char *out, size_t outlen);
/* Calls `each` with every complete paused sandbox under `root` and its
 * manifest, parsed once, in the directory's order, until `each` returns
 * nonzero (returned, when negative); a manifest that does not read is
 * reported on `warn` and skipped, never removed. The count of records
 * visited (0 when `root` does not exist) or a negative errno. */
typedef int (*cpaused_fn)(const struct cpaused *p, const struct csm *m, void *ud);
int cpaused_each(const char *root, cpaused_fn each, void *ud, FILE *warn);
/* The complete paused sandboxes under `root`, at most `max`, by name
 * (cpaused_each). The count or a negative errno. */
int cpaused_list(const char *root, struct cpaused *out, int max, FILE *warn);
/* The store's lock (<root>/lock, the SDK's), held: its fd (close it to
 * release), or a negative errno. */
int cpaused_lock(const char *root);
/* Removes the record `p` under the store's lock (<root>/lock, the SDK's).
 * 1 removed, 0 already gone, or a negative errno. */
int cpaused_remove(const char *root, const struct cpaused *p);

#endif
