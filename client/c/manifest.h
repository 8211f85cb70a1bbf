/*
 * A snapshot's manifest (docs/SNAPSHOTS.md, "Manifest"): the text file that
 * says what a template or paused sandbox was made of and how to restore it,
 * (tests/snapshot_format.py is the tests' own reader of the same format,
 * tests/c/test_client_manifest.c compares the two).
 *
 * UTF-8 text of at most CSM_MAX_BYTES: the line CSM_FORMAT, then `name=value`
 * lines (the first `=` splits; unknown names are ignored; `arg`, `file` and
 * `request` repeat and keep their order). Everything read is bounded and
 * checked: a manifest is outside input (a file anyone with the user's rights
 * may have replaced).
 */
#ifndef CELLVM_CLIENT_MANIFEST_H
#define CELLVM_CLIENT_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CSM_FORMAT "cellvm-snapshot 1"
#define CSM_FILE "manifest"
#define CSM_MAX_BYTES (256u * 1024u)
/* Most lines of one repeated name (a QEMU argv has ~50 `arg` lines). */
#define CSM_MAX_LIST 512

struct csm_list {
        char **v;
        size_t n;
};

/* The fields of docs/SNAPSHOTS.md's table; strings are owned (never NULL
 * after csm_init), numbers are 0 when absent. */
struct csm {
        char *kind, *vmm, *vmm_version, *vmm_binary, *accel, *image, *cmdline;
        uint64_t memory_mb, vcpus;
        struct csm_list file; /* "<role> <size> <mtime_ns> <path>" */
        char *state, *memory;
        uint64_t state_size, memory_size;
        char *instance_dir;
        uint64_t generation, created_ms, build_ms, started_ms;
        char *sandbox_id, *registry_key, *template_, *timeout_s;
        char *metadata, *envs; /* one line of JSON each, kept as text ("{}" by default) */
        char *filesystem;      /* a filesystem-only pause's archive (its file's name), or "" */
        char *fork_of;         /* a fork's record: its source's id (resumed as a copy), or "" */
        char *on_timeout;      /* a paused sandbox's onTimeout, "pause" or "" (kill) */
        struct csm_list request, arg;
};

/* The defaults (state "state", metadata and envs "{}", the rest empty). 0 or -ENOMEM. */
int csm_init(struct csm *m);
void csm_free(struct csm *m);

/* Sets field `name` from its text (a list field: appends). 0, -ENOENT (no
 * such field), -EINVAL (a number field given no decimal number below 2^64,
 * or a value holding a line break), -E2BIG (CSM_MAX_LIST reached), -ENOMEM. */
int csm_set(struct csm *m, const char *name, const char *value);
/* csm_set of a number. */
int csm_set_u64(struct csm *m, const char *name, uint64_t v);

/* Parses manifest text (`len` bytes, any content) into `m` (csm_init'ed).
 * 0, or -EINVAL with `why` saying what is wrong (without the file's name). */
int csm_parse(const char *text, size_t len, struct csm *m, char *why, size_t whylen);

/* `dst` (uninitialised) becomes a copy of `src`. 0 or a negative errno. */
int csm_copy(struct csm *dst, const struct csm *src);

/* Reads `<dir>/manifest` into `m` (csm_init'ed). 0 or a negative errno with
 * `err` naming the file and what is wrong. */
int csm_read(const char *dir, struct csm *m, char *err, size_t errlen);

/* The manifest's text (malloc'd, NUL-terminated, *len bytes), fields in the
 * Python writer's order. -EINVAL when a value holds a line break, -ENOMEM. */
int csm_format(const struct csm *m, char **text, size_t *len);

/* Writes `<dir>/manifest` (a temporary file fsynced, then renamed). 0 or a
 * negative errno with `err` saying which step failed. */
int csm_write(const char *dir, const struct csm *m, char *err, size_t errlen);

/* Appends the `file` line of a boot file: "<role> <size> <mtime_ns> <path>"
 * from stat(2). 0 or a negative errno with `err` naming the file. */
int csm_add_file(struct csm *m, const char *role, const char *path, char *err, size_t errlen);

/* The snapshot's own files (`state`, and `memory` when named) are in `snapdir`
 * with the recorded sizes. 0, or a negative errno with `err` naming the file
 * that is missing, truncated or replaced. */
int csm_check_files(const struct csm *m, const char *snapdir, char *err, size_t errlen);

/* What differs between a stored manifest and the one a launch would write
 * now, in words joined by "; " (as snapshot.differences()); the kernel's
 * tsc_early_khz is compared within CTSC_TOLERANCE_PPM (tsc_word.h). Returns
 * how many differences there are (0: the snapshot fits) or -ENOMEM; `out`
 * is always terminated. */
int csm_differences(const struct csm *have, const struct csm *want, char *out, size_t outlen);

#endif
