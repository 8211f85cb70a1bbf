/*
 * Booting a cellvm image under QEMU from the CLI (`cellvm run`, `cellvm shell`):
 * the same `-M microvm` command line as client/python/cellvm/vmm_qemu.py, with
 * the kernel command line from the image's launch.txt (written by `make image`
 * next to manifest.json).
 */
#ifndef CELLVM_CLIENT_VMM_H
#define CELLVM_CLIENT_VMM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cellvm.h"

struct cvm_opts {
        const char *image;  /* directory with vmlinuz, initramfs.cpio.gz, rootfs.ext4, launch.txt */
        unsigned memory_mb; /* guest RAM */
        unsigned vcpus;     /* guest CPUs */
        const char *qemu;   /* binary; NULL: qemu-system-x86_64 from PATH */
        const char *extra;  /* appended to the kernel command line, or NULL */
};

struct cvm {
        pid_t pid; /* QEMU, leader of its own process group; 0 when not running */
        bool kvm;
        char dir[64]; /* mkdtemp directory: agent.sock, console.log, qemu.err */
        char sock[128];
        char console[128];
        char qemu_err[128];
};

/* Starts QEMU and returns once its serial socket exists (the guest boots on).
 * On failure nothing is left running and `err` says why. */
int cvm_start(const struct cvm_opts *o, struct cvm *vm, char *err, size_t errlen);

/* Connects to the agent over the serial socket, re-sending HELLO until the
 * guest answers or `timeout_ms` passes (or QEMU exits). As cvc_connect_ex. */
int cvm_connect(struct cvm *vm, int timeout_ms, struct cvc **out);

/* True while QEMU runs (reaps it once it exited). */
bool cvm_alive(struct cvm *vm);

/* Prints the last `max` bytes of the guest console to `f` (for errors). */
void cvm_print_console_tail(const struct cvm *vm, FILE *f, size_t max);

/* SIGKILL to QEMU's process group, wait for it, remove the temp directory.
 * Idempotent. Only async-signal-safe calls: usable from a signal handler. */
void cvm_kill(struct cvm *vm);

/* Whether KVM can run a stock guest here (vmx/svm, /dev/kvm opens, not kvm-pvm);
 * $CELLVM_ACCEL=kvm|tcg overrides. Same rule as vmm_qemu.kvm_usable(). */
bool cvm_kvm_usable(void);

#endif
