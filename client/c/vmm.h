/*
 * Booting a cellvm image from the CLI (`cellvm run`, `cellvm shell`) under
 * QEMU, Firecracker or Cloud Hypervisor. QEMU: the same `-M microvm` command
 * line of docs/VMM.md; the other two: vmm_hybrid.h. The
 * kernel command line comes from the image's launch.txt (written by `make
 * image` next to manifest.json).
 *
 * The channel to the agent is AF_VSOCK (guest CID, port 1024) when QEMU gets a
 * vhost-vsock device (/dev/vhost-vsock usable, or forced), else the
 * virtio-serial port `cellvm`, which stays in the command line as the fallback.
 */
#ifndef CELLVM_CLIENT_VMM_H
#define CELLVM_CLIENT_VMM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cellvm.h"

#define CVM_QEMU_DEFAULT "qemu-system-x86_64"
/* QEMU's second virtio-serial port, the guest's egress streams (docs/NETWORK.md):
 * its name in the guest (init listens on /dev/virtio-ports/<name> when the
 * port exists) and its socket in the VM's directory. */
#define CVM_EGRESS_PORT "cellvm.egress"
#define CVM_EGRESS_SOCKET "egress.sock"
/* The egress keeper's files beside it (egress_keeper.h): its rules (and,
 * while a replacement is written, egress.json.tmp.PID), its log, and the
 * lock that keeps it alone. */
#define CVM_EGRESS_RULES "egress.json"
#define CVM_EGRESS_RULES_TMP "egress.json.tmp"
#define CVM_EGRESS_LOG "egress.log"
#define CVM_EGRESS_LOCK "egress.lock"

/* Restarts of QEMU with another guest CID when the one tried was taken. */
#define CVM_MAX_CID_RETRIES 8

enum cvm_vsock_mode { CVM_VSOCK_AUTO, CVM_VSOCK_ON, CVM_VSOCK_OFF };

enum cvm_vmm { CVM_VMM_QEMU, CVM_VMM_FIRECRACKER, CVM_VMM_CLOUD_HYPERVISOR };

/* "qemu", "firecracker", "cloud-hypervisor": the names of the Python SDK's
 * vmm= and of the registry's vmm field. */
const char *cvm_vmm_name(enum cvm_vmm vmm);
/* The VMM named `name`: 0, or -EINVAL for an unknown name. */
int cvm_vmm_parse(const char *name, enum cvm_vmm *vmm);

struct cvm_opts {
        const char *image;  /* directory with vmlinuz, initramfs.cpio.gz, rootfs.ext4, launch.txt */
        unsigned memory_mb; /* guest RAM */
        unsigned vcpus;     /* guest CPUs */
        enum cvm_vmm vmm;   /* which VMM boots it */
        const char *qemu;   /* the VMM's binary; NULL: its default name on PATH */
        const char *extra;  /* appended to the kernel command line, or NULL */
        const char *kernel; /* NULL: the image's vmlinuz (e.g. build/kernel/bzImage) */
        const char *initramfs;     /* NULL: the image's initramfs.cpio.gz */
        bool no_initramfs;         /* boot without one: root=/dev/vda ro init=/sbin/cellvm-init */
        const char *rootfs;        /* NULL: the image's rootfs.ext4; ext4 or erofs */
        enum cvm_vsock_mode vsock; /* AUTO: a vhost-vsock device when /dev/vhost-vsock opens */
        bool qmp;                  /* a QMP socket: -qmp unix:DIR/qmp.sock (snapshots) */
        const char *mem_path;      /* guest RAM as this file (memory-backend-file ram0), or NULL */
        bool mem_share;            /* share=on: the file is the RAM; off: a private COW mapping */
        bool api;      /* Firecracker / Cloud Hypervisor: an API socket, DIR/api.sock (templates) */
        bool user_net; /* QEMU: a virtio-net NIC on QEMU's user-mode NAT; else none */
        const char *cmdline_extra; /* the user's kernel words, after `extra`, or NULL */
};

/* The memory of all user code together (cellvm.mem_limit, MB): the guest's
 * RAM minus a reserve of max(128 MiB, RAM/8) for the kernel, init and the
 * agent, at least 64 MB. The one rule of the CLI (and so of the Python
 * SDK's create()), `cellvm serve` and the paused store. */
unsigned cvm_user_memory_mb(unsigned memory_mb);

/* The guest's address on QEMU's user-mode NAT (its fixed 10.0.2.0/24), for
 * cellvm-init's static configuration (docs/INIT.md). */
#define CVM_USER_NET_CMDLINE                                                                       \
        "cellvm.net=static cellvm.ip=10.0.2.15/24 cellvm.gateway=10.0.2.2 cellvm.dns=10.0.2.3"
/* QEMU's arguments of that NIC (and the one a template's argv is known by). */
#define CVM_USER_NETDEV "user,id=net0"
#define CVM_USER_NET_DEVICE "virtio-net-device,netdev=net0"

#define CVM_CMDLINE_MAX 8192
#define CVM_MAX_ARGS 72

/* An argv whose strings live in one arena. */
struct cvm_argv {
        char *argv[CVM_MAX_ARGS + 1]; /* NULL-terminated */
        size_t argc;
        char arena[3 * CVM_CMDLINE_MAX];
        size_t used;
        bool overflow;
};

/* Appends one formatted argument (an overflow is remembered: check a->overflow). */
void cvm_argv_add(struct cvm_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What a launch of `cvm_opts` boots and runs: the boot files (absolute paths,
 * as docs/VMM.md's "Boot files" says), the kernel command
 * line, and QEMU's argv. */
struct cvm_launch {
        char kernel[PATH_MAX];
        char initramfs[PATH_MAX]; /* "" without one */
        char rootfs[PATH_MAX];
        const char *rootfstype;
        char cmdline[CVM_CMDLINE_MAX];
        struct cvm_argv args;
};

/* The boot files and kernel command line of `o` (no argv): the kernel
 * command line of o->vmm, with the TCG words when `tcg`. 0 or a negative
 * errno with `err` saying why. */
int cvm_boot_params(const struct cvm_opts *o, bool tcg, struct cvm_launch *l, char *err,
                    size_t errlen);

/* `path` for a QEMU option list (commas doubled) into `out`. 0 or -E2BIG. */
int cvm_opt_path(const char *path, char *out, size_t outlen);

/* Renders the launch of `o` under KVM or TCG with `dir` as the VMM's temp
 * directory (its sockets and console: a real one, or a placeholder) and
 * `vsock_cid` (0: no vhost-vsock device): the argv of docs/VMM.md. 0 or a
 * negative errno with `err` saying why. */
int cvm_render(const struct cvm_opts *o, bool kvm, unsigned vsock_cid, const char *dir,
               struct cvm_launch *l, char *err, size_t errlen);

struct cvm {
        pid_t pid; /* the VMM, leader of its own process group; 0 when not running */
        enum cvm_vmm vmm;
        bool kvm;
        unsigned vsock_cid; /* the guest's CID; 0: no vhost-vsock device */
        bool over_vsock;    /* the channel: vsock, else the serial port */
        bool user_net;      /* it has the user-mode NAT NIC (cvm_opts.user_net) */
        unsigned cid_retries;
        const struct cvm_opts *opts; /* kept for a restart with another CID: must outlive the VM */
        char dir[64];                /* mkdtemp directory: agent.sock, console.log, qemu.err */
        char sock[128];              /* QEMU: the serial socket; others: the hybrid vsock's */
        char console[128];
        char qemu_err[128]; /* QEMU: its stderr; others: their output (vmm.log) */
        char qmp[128];      /* qmp.sock, when the argv has -qmp */
        char config[128];   /* Firecracker's firecracker.json */
        char api[128];      /* Firecracker / Cloud Hypervisor API socket, when it has one */
        char restore[128];  /* Cloud Hypervisor's restore dir: config.json, links to the rest */
        char error[256];    /* why cvm_connect failed when no connection says it, or "" */
};

/* Starts QEMU and returns once its serial socket exists (the guest boots on).
 * `o` must stay valid until cvm_kill. On failure nothing is left running and
 * `err` says why. */
int cvm_start(const struct cvm_opts *o, struct cvm *vm, char *err, size_t errlen);

/* The first steps of cvm_start for another argv (a restore): clears `vm`,
 * makes its temp directory (cellvm-<vmm>-XXXXXX) and names its files. */
int cvm_make_dir(struct cvm *vm, enum cvm_vmm vmm, char *err, size_t errlen);

/* Forks and execs `argv` as the VMM of `vm` (its own process group; QEMU:
 * stderr to qemu.err; the others: stdout and stderr to vmm.log, working
 * directory vm->dir) with `keep_fd` (>= 0) inherited. Does not wait. */
int cvm_fork_exec(struct cvm *vm, char *const argv[], int keep_fd, char *err, size_t errlen);

/* Starts `argv` (QEMU's, its paths in vm->dir) with `keep_fd` (>= 0)
 * inherited, and returns once vm->sock exists. On failure QEMU is killed (the
 * directory stays for the caller's cvm_kill, qemu.err with it). */
int cvm_spawn(struct cvm *vm, char *const argv[], int keep_fd, char *err, size_t errlen);

/* Connects to the agent and completes HELLO, until the guest answers or
 * `timeout_ms` passes (or QEMU exits). Over vsock: connects are retried until
 * the agent listens; if vsock cannot reach the guest, the serial port is used
 * (vm->over_vsock turns false). Over the serial port: HELLO is re-sent until
 * answered. QEMU exiting because the guest CID is taken is answered by
 * starting it again with the next CID (CVM_MAX_CID_RETRIES). As
 * cvc_connect_ex; a failed restart returns its negative errno with *out NULL. */
int cvm_connect(struct cvm *vm, int timeout_ms, struct cvc **out);

/* True while QEMU runs (reaps it once it exited). */
bool cvm_alive(struct cvm *vm);

/* Prints the last `max` bytes of the guest console to `f` (for errors). */
void cvm_print_console_tail(const struct cvm *vm, FILE *f, size_t max);

/* SIGKILL to QEMU's process group, wait for it, remove the temp directory.
 * Idempotent. Only async-signal-safe calls: usable from a signal handler. */
void cvm_kill(struct cvm *vm);

/* VMMs started from now on outlive this process (cellvm serve: its VMs are
 * forked by threads that end, and a SIGKILLed server leaves them to their
 * deadlines), instead of dying with the thread that started them. */
void cvm_outlive_creator(bool on);

/* Whether KVM can run a stock guest here (vmx/svm, /dev/kvm opens, not kvm-pvm);
 * $CELLVM_ACCEL=kvm|tcg overrides. */
bool cvm_kvm_usable(void);

#endif
