/*
 * Pausing a running sandbox into the paused store and checking a record
 * before it resumes (docs/SNAPSHOTS.md, "Pause and resume"): the record is
 * exactly the one client/python/cellvm/pause.py writes and reads, so a
 * sandbox paused by either client resumes in the other.
 *
 * A record is <root>/<registry key>/{manifest,state}: the whole guest (device
 * state and RAM) in one QEMU migration stream, and a manifest of kind
 * `paused` naming the sandbox (its key), its template, metadata and envs,
 * and the VMM's argv (read back from /proc/PID/cmdline, paths as @DIR@)
 * with the RAM as an anonymous memory-backend-ram, so that a resume needs
 * no template. A Firecracker or Cloud Hypervisor record holds the VMM's own
 * snapshot files instead (state and memory; config.json, state.json and
 * memory-ranges) with the manifest of the template it was restored from,
 * so that it resumes as a template's clone does (pause_hybrid.c). The
 * registry side (reserving a slot, the entry under the same key, the
 * deadline) is cli_pause.h's.
 */
#ifndef CELLVM_CLIENT_PAUSE_H
#define CELLVM_CLIENT_PAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "manifest.h"
#include "registry.h"

/* The sandbox a pause saves. */
struct cpause_src {
        const struct creg_entry *e; /* its registry entry: key, VMM pid, temp dir, ... */
        const char *template_;      /* its template's name, "" for none */
        const char *metadata;       /* a JSON object's text on one line ("{}") */
        const char *envs;           /* likewise */
        /* A fork's snapshot (serve_fork.c): the record is made under this key
         * (its manifest's sandbox_id and registry_key) instead of the
         * sandbox's, and the guest runs on after the save. NULL: a pause. */
        const char *fork_key;
};

/* `key` has a registry key's form ([a-z0-9-], 1 to 64 characters), so that
 * it names a record directory and nothing else. */
bool cpause_is_key(const char *key);

/* <root>/<key> into `out`. 0, -EINVAL (not a key) or -ENAMETOOLONG. */
int cpause_record_dir(const char *root, const char *key, char *out, size_t outlen);

/* Stops the guest of `src` and saves it into a new record of the paused
 * store at `root` (created 0700 if missing), then tells its QEMU to quit
 * (Firecracker and Cloud Hypervisor: cpause_save_hybrid, pause_hybrid.c);
 * the caller kills what is left of the VMM and removes its registry entry.
 * With `fork_key` (QEMU only, else -EOPNOTSUPP) the guest runs on instead,
 * in the same VMM, and the record is a new sandbox's.
 * 0 with the record's directory in `recdir`; -EEXIST when the key has a
 * record already (paused); else a negative errno with `err` saying why, and
 * the guest running on as it was. */
int cpause_save(const char *root, const struct cpause_src *src, char *recdir, size_t reclen,
                char *err, size_t errlen);

/* cpause_save of a Firecracker or Cloud Hypervisor sandbox (one restored
 * from a template: its VMM has an API socket, and its temp dir the manifest
 * it was restored from): the VM paused and saved through its API into the
 * record (snapshot_hybrid.c's files: the template's manifest again, kind
 * paused, as pause.py's _pause_hybrid). -EOPNOTSUPP for a cold boot or a
 * temp dir without that manifest. */
int cpause_save_hybrid(const char *root, const struct cpause_src *src, char *recdir, size_t reclen,
                       char *err, size_t errlen);

/* What a copy's manifest takes other than its source's: each NULL keeps the
 * source's. metadata and envs are JSON objects' text; on_timeout is "pause"
 * or "". */
struct cpause_copy_manifest {
        const char *metadata, *envs, *on_timeout;
};

/* A copy of QEMU record `src_dir` as a new record of `root` under `key`
 * (another fork of the same snapshot, or a sandbox made from a kept snapshot):
 * its state hard-linked (copied when `root` is on another filesystem), its
 * manifest's sandbox_id and registry_key changed, and what `set` gives (NULL:
 * nothing else). 0 with its directory in `recdir`, or a negative errno with
 * `err` and no record. */
int cpause_copy(const char *root, const char *src_dir, const char *key,
                const struct cpause_copy_manifest *set, char *recdir, size_t reclen, char *err,
                size_t errlen);

/* `<final>.tmp` made anew (a crashed pause's leftover removed) under the
 * store's lock; -EEXIST when `final` exists (paused already). */
int cpause_new_tmp(const char *root, const char *final, char *tmp, size_t tmplen, char *err,
                   size_t errlen);
/* The finished `tmp` becomes `final`, under the store's lock. */
int cpause_publish(const char *root, const char *tmp, const char *final, char *err, size_t errlen);

/* A filesystem-only pause (E2B's pause with keepMemory false, pause_fs.c):
 * the record holds the guest's archive of the files it changed
 * (image-build/guest/fs-snapshot) as CPAUSE_FS_ARCHIVE, which its manifest's
 * `filesystem` names, and no VM state; it resumes as a fresh clone of its
 * template with those files put back (a new boot: no process, no memory). */
#define CPAUSE_FS_ARCHIVE "fs.tar"
/* Writes the archive to `path`, at most `max_bytes` (the guest's memory):
 * 0, or a negative errno with `err`. */
typedef int (*cpause_pack_fn)(void *ud, const char *path, uint64_t max_bytes, char *err,
                              size_t errlen);
/* A new record of `src` at `root` with the archive `pack` writes into it. 0
 * with its directory in `recdir`; -EEXIST (paused already) or another
 * negative errno with `err`, and no record. The caller stops the VM. */
int cpause_save_fs(const char *root, const struct cpause_src *src, cpause_pack_fn pack, void *ud,
                   char *recdir, size_t reclen, char *err, size_t errlen);
/* cpause_check of a filesystem-only record: its archive whole. */
int cpause_check_fs(const struct csm *m, const char *dir, char *err, size_t errlen);

/* The record in `dir` (its manifest in `m`) can be resumed here: a paused
 * sandbox's, its files whole (QEMU: its state a QEMU stream; Firecracker,
 * Cloud Hypervisor: csh_check_restorable), the VMM and the image's files
 * those it was paused with. 0, or a negative errno with `err`
 * saying what differs (-ESTALE: the image or the VMM changed). */
int cpause_check(const struct csm *m, const char *dir, char *err, size_t errlen);

/* The registry key a record resumes under: its manifest's registry_key, else
 * its directory's name; NULL when neither is a key. */
const char *cpause_key_of(const struct csm *m, const char *dir);

#endif
