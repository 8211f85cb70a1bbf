/*
 * Firecracker and Cloud Hypervisor templates for the CLI (docs/VMM.md,
 * "Snapshots"): the launch, manifest, name, API calls and file layout
 * docs/SNAPSHOTS.md describes. The launch and template records
 * are snapshot_qemu.h's (struct csq_launch, csq_usable, csq_stages).
 *
 * A template is the launch booted with an API socket, the zygote's preloads
 * done, the guest prepared, then paused and saved through the API
 * (Firecracker: PATCH /vm Paused, PUT /snapshot/create Full -> state,
 * memory; Cloud Hypervisor: vm.pause, vm.snapshot -> config.json,
 * state.json, memory-ranges). A clone is the VMM started with its API alone
 * in a temp dir of its own, the manifest's `request` lines sent (Firecracker:
 * /snapshot/load with a File memory backend, then Resumed; Cloud Hypervisor:
 * vm.restore of DIR/restore, config.json with the template's temp dir
 * replaced by the clone's, then vm.resume), the agent reached over the
 * hybrid vsock, then HELLO and NEW_GENERATION.
 */
#ifndef CELLVM_CLIENT_SNAPSHOT_HYBRID_H
#define CELLVM_CLIENT_SNAPSHOT_HYBRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cellvm.h"
#include "manifest.h"
#include "snapshot_qemu.h"
#include "vmm.h"

/* As csq_launch_init, for run->vmm Firecracker or Cloud Hypervisor (its
 * binary must be on PATH). */
int csh_launch_init(struct csq_launch *l, const struct cvm_opts *run, unsigned user_mb, char *err,
                    size_t errlen);

/* As csq_build. */
int csh_build(const struct csq_launch *l, struct cvm *vm, char *snapdir, size_t snaplen,
              struct csm *m, char *err, size_t errlen);

/* The snapshot's files are whole and, for Cloud Hypervisor, config.json is there. */
int csh_check_restorable(const struct csm *m, const char *snapdir, char *err, size_t errlen);

/* Pauses the VM whose API socket is `api` and saves it into `dir` (the
 * names m->state, m->memory): Firecracker PATCH /vm Paused, PUT
 * /snapshot/create Full; Cloud Hypervisor vm.pause, vm.snapshot (and its
 * config.json checked). 0 or a negative errno with `err` saying why (the VM
 * may be left paused). */
int csh_save_into(enum cvm_vmm vmm, const char *api, const char *dir, const struct csm *m,
                  char *err, size_t errlen);

/* The size of `dir`/`name`, fsynced first when `sync`. */
int csh_file_size(const char *dir, const char *name, uint64_t *size, bool sync, char *err,
                  size_t errlen);

/* Starts the clone's VMM with its API alone (the manifest's `arg`), a copy
 * of `m` kept as `manifest` in its temp dir (what a pause records again). */
int csh_spawn(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
              char *err, size_t errlen);

/* Sends the manifest's requests, connects over the hybrid vsock, HELLO,
 * NEW_GENERATION. As csq_load. */
int csh_load(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
             struct cvc **c, bool *bad_snapshot, char *err, size_t errlen);
/* csh_load of a paused record: the same guest again (csq_refresh_resumed),
 * no new generation. */
int csh_load_paused(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
                    struct cvc **c, bool *bad_snapshot, char *err, size_t errlen);

#endif
