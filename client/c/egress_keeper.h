/*
 * The launcher's egress (docs/NETWORK.md): a sandbox made by `cellvm create`
 * (the Python SDK's) with egress rules gets an egress keeper, a process of
 * its own that connects to QEMU's second virtio-serial port (vmm.h,
 * CVM_EGRESS_PORT), keeps EGRESS_ACCEPTs waiting there and decides, dials and
 * relays each stream the guest's proxy opens, as `cellvm serve` does for its
 * sandboxes (serve_egress.c). The rules live in the VM's directory
 * (egress.json, {network, allow_internet_access}); `cellvm egress ID RULES`
 * replaces them, and the keeper reads them again before the next stream.
 * Refusals are logged to egress.log there. The keeper ends with the VM.
 */
#ifndef CELLVM_CLIENT_EGRESS_KEEPER_H
#define CELLVM_CLIENT_EGRESS_KEEPER_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "vmm.h" /* the files: CVM_EGRESS_* */

/* E2B's network object as JSON text (allowOut/allow_out, denyOut/deny_out,
 * and allow_internet_access beside them, as E2B's update body has it) into
 * the rules to keep, {network, allow_internet_access}: 0 with *rules (a new
 * reference), or -EINVAL with `why`. */
int cegress_rules_parse(const char *text, json_t **rules, char *why, size_t whylen);
/* Makes `rules` those of the VM in directory `vmdir` (written whole, then
 * renamed over the old): 0, or a negative errno with `why`. */
int cegress_rules_write(const char *vmdir, json_t *rules, char *why, size_t whylen);
/* The rules kept in directory `dir` (a VM's, or a paused record's), or NULL. */
json_t *cegress_rules_load(const char *dir);
/* Starts the egress keeper of sandbox `key` in `vmdir` (a process of its own
 * session running `cellvm egress-keep`); one already running stays the only
 * one. Its pid, or a negative errno. */
pid_t cegress_keeper_start(const char *key, const char *vmdir);
/* `cellvm egress-keep KEY VMDIR` (plumbing): the keeper itself, in this process,
 * until the VM's egress port closes. An exit status. */
int cmd_egress_keep(int argc, char **argv);
/* The lock a keeper of the VM in `vmdir` holds while it runs, opened to wait
 * on (cegress_keeper_wait), or a negative errno (-ENOENT: it never had one). */
int cegress_keeper_lock_open(const char *vmdir);
/* Waits until the keeper holding `lock` has ended, at most timeout_ms (it
 * ends within milliseconds of its VM), then closes `lock`: 0, or -ETIMEDOUT. */
int cegress_keeper_wait(int lock, int timeout_ms);

#endif
