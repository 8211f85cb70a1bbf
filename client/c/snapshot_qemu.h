/*
 * QEMU templates for the CLI (docs/SNAPSHOTS.md, "Building a template
 * (QEMU)" and "Restoring a clone"): the launch, manifest, name and
 * procedure that document describes.
 *
 * A template is the launch booted with its RAM in a file (share=on), a QMP
 * socket and the serial channel only, the zygote's preloads done, the
 * default context's executor spawned (an empty cell), SNAPSHOT_PREPARE, then
 * `stop` and the device state migrated (x-ignore-shared: the RAM file is
 * left out) into `state`. A clone is that argv with the RAM file mapped
 * privately (share=off) and `-incoming defer`, the state loaded over QMP
 * from an inherited fd, then HELLO and NEW_GENERATION.
 */
#ifndef CELLVM_CLIENT_SNAPSHOT_QEMU_H
#define CELLVM_CLIENT_SNAPSHOT_QEMU_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "cellvm.h"
#include "manifest.h"
#include "vmm.h"

#define CSQ_BUILD_TIMEOUT_MS 300000   /* boot + preloads (~25 s under TCG here) */
#define CSQ_SETTLE_TIMEOUT_MS 30000   /* the template's guest settling (~1 s here) */
#define CSQ_RESTORE_TIMEOUT_MS 30000  /* spawn to NEW_GENERATION's answer (~0.3 s) */
#define CSQ_BUILD_DEADLINE_MS 900000  /* the guest's deadline while a template boots */
#define CSQ_MIGRATE_TIMEOUT_MS 120000 /* saving or loading the state */

/* One launch as a template sees it. */
struct csq_launch {
        struct cvm_opts opts; /* the CLI's options, made a template's: QMP, serial only */
        char extra[128];      /* cellvm.mem_limit=...M cellvm.deadline_ms=900000 */
        char image[PATH_MAX]; /* absolute */
        struct csm want;      /* the manifest a template of it has (sizes of state unknown) */
        char name[96];        /* qemu-<16 hex> */
        char root[PATH_MAX];  /* the template root */
        char tdir[PATH_MAX];  /* root/name */
};

/* The launch of `run` (its VM options) with `user_mb` for cellvm.mem_limit.
 * 0 or a negative errno with `err` saying why. */
int csq_launch_init(struct csq_launch *l, const struct cvm_opts *run, unsigned user_mb, char *err,
                    size_t errlen);
void csq_launch_free(struct csq_launch *l);

/* The parts of a launch every VMM's template shares (snapshot_hybrid.c too):
 * begin clears `l`, sets its image, options, extra kernel words, memory and
 * vCPUs; finish (after the VMM's own fields, given its `rc` so far) adds the
 * boot files of `r`, the name and the directories. */
int csq_launch_begin(struct csq_launch *l, const struct cvm_opts *run, unsigned user_mb, char *err,
                     size_t errlen);
int csq_launch_finish(struct csq_launch *l, const struct cvm_launch *r, int rc, char *err,
                      size_t errlen);

/* The template's current snapshot, if it fits the launch: 1 with `snapdir`
 * and `m` (csm_free it) set; 0 when there is none (`why` "") or it does not
 * fit or is damaged (`why` says what differs or is wrong). */
int csq_usable(const struct csq_launch *l, char *snapdir, size_t snaplen, struct csm *m, char *why,
               size_t whylen);

/* Boots the launch, waits for its preloads, prepares and saves it, publishes
 * it as the template's current snapshot; `vm` is the builder's VM (so that
 * a signal handler can kill it). Call with ctpl_lock_build held. Progress
 * goes to stderr. 1 with `snapdir` and `m` set, or a negative errno with
 * `err` saying why (nothing is left: VM, temp files, half snapshot). */
int csq_build(const struct csq_launch *l, struct cvm *vm, char *snapdir, size_t snaplen,
              struct csm *m, char *err, size_t errlen);

/* Removes the half-written files of a build in progress (after its VM was
 * killed: cvm_kill of csq_build's `vm`). Async-signal-safe. */
void csq_abort_build(void);

/* The stages of a restore, in ns since the VMM was spawned. */
struct csq_stages {
        uint64_t t0;
        uint64_t state_loaded, running, handshake, new_generation;
};

/* The snapshot's files are whole and its state is QEMU's (a QEVM v3 stream). */
int csq_check_restorable(const struct csm *m, const char *snapdir, char *err, size_t errlen);

/* Starts the clone's QEMU, waiting for its state (the state file open on an
 * inherited fd, `*state_fd`), and returns once its sockets exist. `vm` gets
 * the clone (cvm_kill stops it). */
int csq_spawn(const struct csm *m, const char *snapdir, struct cvm *vm, int *state_fd,
              struct csq_stages *st, char *err, size_t errlen);

/* Connects the agent's channel, loads the state (closing `state_fd`), runs
 * the guest, then HELLO and NEW_GENERATION (fresh entropy, this host's
 * clock, a generation of its own). 0 with *c connected, or a negative errno
 * with `err` saying why; `*bad_snapshot` tells whether the snapshot itself
 * is at fault (QEMU refused the state, the guest did not answer). */
int csq_load(const struct csm *m, const char *snapdir, struct cvm *vm, int state_fd,
             struct csq_stages *st, struct cvc **c, bool *bad_snapshot, char *err, size_t errlen);

/* As csq_load for a paused sandbox's record (docs/SNAPSHOTS.md, "Pause and
 * resume"): its RAM is in the stream, and the guest is the same one again,
 * so it gets ADD_ENTROPY and SET_TIME instead of a generation of its own. */
int csq_load_paused(const struct csm *m, const char *snapdir, struct cvm *vm, int state_fd,
                    struct csq_stages *st, struct cvc **c, bool *bad_snapshot, char *err,
                    size_t errlen);

struct cqmp;
/* Over QMP socket `qmp` (`alive(ud)` says QEMU runs): `stop`, then the
 * device state, and the RAM too when `with_ram`, into a new file `path`
 * (fsynced; its size in *size). `q` stays connected for the caller (quit or
 * cont, then cqmp_close it, also on failure). 0 or a negative errno with
 * `err` saying why. */
int csq_save_state(const char *qmp, int (*alive)(void *), void *ud, const char *path, bool with_ram,
                   uint64_t *size, struct cqmp *q, char *err, size_t errlen);

/* `binary` as shutil.which finds it (PATH), or as given. */
void csq_which(const char *binary, char *out, size_t outlen);

/* --- the guest's side, shared with snapshot_hybrid.c --- */

/* The agent runs under cellvm-init (its HELLO has init's boot stamps); not so
 * for a dev-mode agent behind a VMM stand-in, whose clock and entropy are
 * this host's: it gets no SNAPSHOT_PREPARE or NEW_GENERATION. */
bool csq_under_init(struct cvc *c);

/* HELLO again until its boot stamps include executor_ready (the zygote has
 * its preloads), as launch.wait_executor_ready; `deadline` in CLOCK_MONOTONIC ns. */
int csq_wait_executor_ready(struct cvm *vm, struct cvc *c, uint64_t deadline, char *err,
                            size_t errlen);

/* SET_DEADLINE 0 (a template carries no deadline), an empty cell (the default
 * context's executor spawned now, not in every clone's first cell), the guest
 * settled, SNAPSHOT_PREPARE: the generation that ends (0 without one). */
int csq_prepare_guest(const struct cvm *vm, struct cvc *c, uint64_t *generation, char *err,
                      size_t errlen);

/* A template's VM of launch `l` with options `o` started (t0: when the build
 * began), connected (*c, to cvc_close even on failure), its executor ready
 * and the guest prepared (csq_prepare_guest). On failure `err` says why; the
 * caller kills `vm`. */
int csq_boot_prepared(const struct csq_launch *l, const struct cvm_opts *o, struct cvm *vm,
                      uint64_t t0, struct cvc **c, uint64_t *generation, char *err, size_t errlen);

/* NEW_GENERATION (fresh entropy, this host's clock, a generation of its own);
 * an agent without it gets ADD_ENTROPY and SET_TIME. */
int csq_new_generation(struct cvc *c, int timeout_ms, char *err, size_t errlen);

/* The same guest again after a pause (not a clone of a template):
 * ADD_ENTROPY and SET_TIME, its generation and random generators left as
 * they were; NEW_GENERATION when HELLO says awaiting_generation (paused
 * between SNAPSHOT_PREPARE and its generation); nothing for an agent not
 * under cellvm-init (a VMM stand-in, dev mode: its clock is this host's). */
int csq_refresh_resumed(struct cvc *c, int timeout_ms, char *err, size_t errlen);

/* SET_TIME's body into `b` (cv_buf_init'ed): this host's clock, taken now. */
struct cv_buf;
void csq_enc_set_time(struct cv_buf *b);

/* The first line of `<binary> --version` (the binary found on PATH). */
int csq_vmm_version(const char *binary, char *out, size_t outlen, char *err, size_t errlen);

#endif
