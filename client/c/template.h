/*
 * The user's templates on disk (docs/SNAPSHOTS.md, "Layout" and
 * "Concurrency"):
 *
 *   $CELLVM_TEMPLATE_DIR, else $XDG_CACHE_HOME/cellvm/templates, else ~/.cache/cellvm/templates
 *     <name>/            one launch: <vmm>-<16 hex>, FNV-1a 64 of the launch
 *       lock             flock(LOCK_EX) by a builder for the whole build
 *       current -> t-ID  the complete snapshot in use (a symlink replaced by rename)
 *       t-ID/            one snapshot, never written once renamed into place
 *       t-ID.tmp/        a build in progress
 *
 * A restorer holds flock(LOCK_SH) on its t-ID directory until the VMM has its
 * files; old ones are removed only under flock(LOCK_EX|LOCK_NB).
 */
#ifndef CELLVM_CLIENT_TEMPLATE_H
#define CELLVM_CLIENT_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"

#define CTPL_ROOT_ENV "CELLVM_TEMPLATE_DIR"
#define CTPL_CURRENT "current"
#define CTPL_LOCK "lock"
/* In `arg` and `request` values: the VMM's temp dir, and the snapshot's dir. */
#define CTPL_DIR_PLACEHOLDER "@DIR@"
#define CTPL_SNAPSHOT_PLACEHOLDER "@SNAPSHOT@"
/* A t-ID.tmp this old is a dead builder's: the next builder removes it. */
#define CTPL_STALE_TMP_S 3600

/* FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3),
 * continuing from `h` (start with CTPL_FNV_BASIS). */
#define CTPL_FNV_BASIS 0xcbf29ce484222325ull
uint64_t ctpl_fnv1a64(uint64_t h, const void *data, size_t len);

/* A template's name, "<vmm>-<16 hex>": the FNV-1a 64 of these strings joined
 * by a NUL byte: every `arg`, every `request`, `cmdline`, `memory_mb` and
 * `vcpus` in decimal, the path of every `file` line (docs/SNAPSHOTS.md,
 * "Name"). -ENAMETOOLONG if `out` is too small. */
int ctpl_name(const struct csm *want, char *out, size_t outlen);

/* The template root (see above). 0, -ENAMETOOLONG or -ENOENT (no home). */
int ctpl_root(char *out, size_t outlen);

/* Creates `path` (0700, parents too) and refuses one that is not a directory
 * of this user writable only by it (a snapshot there is run). */
int ctpl_private_dir(const char *path, char *err, size_t errlen);

/* The complete snapshot `<tdir>/current` points to, in `out`: 1, 0 when
 * there is none (no link, or one to a removed snapshot), or a negative errno
 * with `err` saying why (a link that does not name a t-* directory of tdir). */
int ctpl_current(const char *tdir, char *out, size_t outlen, char *err, size_t errlen);

/* Takes `<tdir>/lock` (creating root and tdir as private dirs); says so on
 * stderr and waits when another builder holds it. `*fd` holds the lock
 * until closed. */
int ctpl_lock_build(const char *root, const char *tdir, int *fd, char *err, size_t errlen);

/* A fresh `<tdir>/t-<12 hex>.tmp` directory to build into. */
int ctpl_new_snapshot_dir(const char *tdir, char *out, size_t outlen, char *err, size_t errlen);

/* Renames a complete t-ID.tmp into place, points `current` at it (a new
 * symlink renamed over the old one) and prunes older snapshots; `final`
 * gets the published directory. */
int ctpl_publish(const char *tdir, const char *tmpdir, char *final, size_t finallen, char *err,
                 size_t errlen);

/* Removes tdir's snapshot directories other than `keep` and `current` that
 * no restore holds, and dead builders' leftovers. The number removed. */
int ctpl_prune(const char *tdir, const char *keep);

/* flock(LOCK_SH) on a snapshot directory while a VMM is given its files:
 * `*fd` holds it until closed. */
int ctpl_use(const char *snapdir, int *fd, char *err, size_t errlen);

/* Removes a snapshot directory unless a restore holds it. 1 removed, 0 held
 * (or gone), or a negative errno. */
int ctpl_remove_unused(const char *snapdir);

/* Removes `path` and everything below it (no symlink followed); -errno of
 * the first failure, 0 when it is gone. */
int ctpl_rmtree(const char *path);

#endif
