/* `cellvm pause ID` and `cellvm resume ID`, and the resume that cellvm serve
 * shares with them (docs/SNAPSHOTS.md, "Pause and resume"): the record of
 * pause.h brought back under the registry key it had, with the limits, the
 * registry entry and a fresh deadline of cli_sandboxes.h. */
#ifndef CELLVM_CLIENT_CLI_PAUSE_H
#define CELLVM_CLIENT_CLI_PAUSE_H

#include <limits.h>
#include <stddef.h>

#include "cli_sandboxes.h"
#include "snapshot_qemu.h"
#include "manifest.h"

/* The exit statuses of cellvm pause, resume and fork (1: no such sandbox). */
#define SBX_EXIT_USAGE 2
#define SBX_EXIT_FAILED 3
/* The most of a sandbox's metadata (JSON) that a record carries. */
#define SBX_METADATA_MAX (64 * 1024)

/* The record of paused sandbox `ident` (its id or key) in the paused store:
 * its directory in `dir` (and the store's in `root`). 0, -ENOENT when there
 * is none, or another negative errno. */
int sbx_paused_find(const char *ident, char *root, size_t rootlen, char *dir, size_t dirlen);

/* Record `dir` claimed for a resume: locked (its directory's flock, held on
 * *fd until closed), its manifest read into `m` (csm_free it) and checked
 * (cpause_check), *key the registry key it resumes under. 0, or a negative
 * errno with `err` (-EBUSY: another resume holds it; -ENOENT: gone). */
int sbx_paused_claim(const char *dir, struct csm *m, int *fd, const char **key, char *err,
                     size_t errlen);

/* Resumes the record in `dir` (of the store at `root`): checked, the limits
 * reserved, QEMU started with it under the sandbox's own key, the state
 * loaded, HELLO, ADD_ENTROPY and SET_TIME, a deadline `timeout_s` from now
 * (the registry and SET_DEADLINE), then the record removed. 0 with *c
 * connected, `vm` running and `m` the record's manifest (csm_free it);
 * -EBUSY (another process resumes it), -ENOENT (resumed or killed
 * meanwhile), -EAGAIN (the sandbox limit), -ESTALE (the image or VMM
 * changed), or another negative errno; `err` says why. Nothing is left
 * running on failure and the record stays. */
int sbx_resume(const char *root, const char *dir, double timeout_s, struct sbx_rec *rec,
               struct cvm *vm, struct cvc **c, struct csm *m, char *err, size_t errlen);
/* sbx_resume, with its stages (ns after QEMU's spawn: state_loaded,
 * running, handshake) in `*st` when not NULL. */
int sbx_resume_staged(const char *root, const char *dir, double timeout_s, struct sbx_rec *rec,
                      struct cvm *vm, struct cvc **c, struct csm *m, struct csq_stages *st,
                      char *err, size_t errlen);

/* sbx_resume of a record already claimed (sbx_paused_claim: `m` and `key`
 * are its, its lock held by the caller). A fork's record (its manifest's
 * fork_of: another copy of a guest that runs on) gets a NEW_GENERATION of its
 * own instead of ADD_ENTROPY and SET_TIME (docs/SNAPSHOTS.md). */
int sbx_resume_claimed(const char *root, const char *dir, struct csm *m, const char *key,
                       double timeout_s, struct sbx_rec *rec, struct cvm *vm, struct cvc **c,
                       struct csq_stages *st, char *err, size_t errlen);
/* The record in `dir` (of the store at `root`) of sandbox `key`, resumed, is
 * removed; a failure is said on stderr (the sandbox runs). */
void sbx_paused_drop(const char *root, const char *dir, const char *key);

/* `cellvm resume`'s work once record `dir` (of the store at `root`) of
 * sandbox `id` is found: resumed (sbx_resume_staged) with its egress rules
 * and keeper, its connection sent over `pass_fd` (0: none), held by
 * `holder` (0: none), its entry printed (`json`: as JSON) or why not on
 * stderr. The exit status: 0, 1 (gone meanwhile) or 3. */
int sbx_resume_print(const char *root, const char *dir, const char *id, double timeout_s, bool json,
                     int pass_fd, pid_t holder);

int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);

#endif
