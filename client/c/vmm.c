/* Booting a cellvm image for the CLI: launch.txt, the boot files, QEMU's
 * -M microvm argv, the VMM process and its temp directory (see vmm.h);
 * Firecracker and Cloud Hypervisor's own parts are in vmm_hybrid.c. */
#include "vmm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host_tsc.h"
#include "mono_clock.h"
#include "vmm_boot.h"
#include "vmm_hybrid.h"
#include "vmm_vsock.h"

#define SOCKET_WAIT_MS 10000
#define LAUNCH_LINE_MAX 4096

/* The kernel command line pieces of launch.txt. */
struct launch {
        char base[LAUNCH_LINE_MAX];
        char vmm[LAUNCH_LINE_MAX]; /* cmdline_vmm_<the VMM's name, '-' as '_'> */
        char tcg[LAUNCH_LINE_MAX];
};

static const char *const vmm_names[] = {"qemu", "firecracker", "cloud-hypervisor"};

const char *cvm_vmm_name(enum cvm_vmm vmm)
{
        return (unsigned)vmm < sizeof(vmm_names) / sizeof(vmm_names[0]) ? vmm_names[vmm] : "?";
}

int cvm_vmm_parse(const char *name, enum cvm_vmm *vmm)
{
        for (size_t i = 0; i < sizeof(vmm_names) / sizeof(vmm_names[0]); i++)
                if (strcmp(name, vmm_names[i]) == 0) {
                        *vmm = (enum cvm_vmm)i;
                        return 0;
                }
        return -EINVAL;
}

unsigned cvm_user_memory_mb(unsigned memory_mb)
{
        unsigned reserve = memory_mb / 8 > 128 ? memory_mb / 8 : 128;
        return memory_mb > reserve + 64 ? memory_mb - reserve : 64;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int read_launch(const char *image, enum cvm_vmm vmm, struct launch *l, char *err,
                       size_t errlen)
{
        char key[40];
        snprintf(key, sizeof(key), "cmdline_vmm_%s", cvm_vmm_name(vmm));
        for (char *p = key; *p; p++)
                if (*p == '-')
                        *p = '_';
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/launch.txt", image) >= sizeof(path)) {
                snprintf(err, errlen, "image path too long: %s", image);
                return -ENAMETOOLONG;
        }
        FILE *f = fopen(path, "re");
        if (!f) {
                int e = errno;
                snprintf(err, errlen, "%s: %s (build the image with `make image`)", path,
                         strerror(e));
                return -e;
        }
        memset(l, 0, sizeof(*l));
        bool have_base = false;
        char line[LAUNCH_LINE_MAX + 64];
        while (fgets(line, sizeof(line), f)) {
                size_t n = strlen(line);
                if (n && line[n - 1] == '\n')
                        line[--n] = '\0';
                else if (!feof(f)) {
                        fclose(f);
                        snprintf(err, errlen, "%s: line over %d bytes", path, LAUNCH_LINE_MAX);
                        return -E2BIG;
                }
                const char *eq = strchr(line, '=');
                if (line[0] == '#' || !eq)
                        continue;
                size_t klen = (size_t)(eq - line);
                char *dst = NULL;
                if (klen == 12 && strncmp(line, "cmdline_base", klen) == 0)
                        dst = l->base, have_base = true;
                else if (klen == 11 && strncmp(line, "cmdline_tcg", klen) == 0)
                        dst = l->tcg;
                else if (klen == strlen(key) && strncmp(line, key, klen) == 0)
                        dst = l->vmm;
                if (dst && strlen(eq + 1) < LAUNCH_LINE_MAX)
                        strcpy(dst, eq + 1);
        }
        int rc = ferror(f) ? -EIO : 0;
        fclose(f);
        if (rc < 0 || !have_base) {
                snprintf(err, errlen, "%s: %s", path,
                         rc < 0 ? "read error" : "no cmdline_base (rebuild with `make image`)");
                return rc < 0 ? rc : -EINVAL;
        }
        return 0;
}

static bool file_has_flag(const char *path, const char *const *flags)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        char line[8192];
        bool found = false;
        while (!found && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "flags", 5) != 0)
                        continue;
                for (char *tok = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \n");
                     tok && !found; tok = strtok(NULL, " \n"))
                        for (const char *const *fl = flags; *fl; fl++)
                                found = found || strcmp(tok, *fl) == 0;
                break; /* the first CPU says it */
        }
        fclose(f);
        return found;
}

bool cvm_kvm_usable(void)
{
        const char *forced = getenv("CELLVM_ACCEL");
        if (forced && (strcmp(forced, "kvm") == 0 || strcmp(forced, "tcg") == 0))
                return forced[0] == 'k';
        /* A paravirtual KVM (kvm-pvm) opens fine but runs only PVM-aware guests. */
        if (access("/sys/module/kvm_pvm", F_OK) == 0)
                return false;
        static const char *const hw[] = {"vmx", "svm", NULL};
        if (!file_has_flag("/proc/cpuinfo", hw))
                return false;
        int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

void cvm_argv_add(struct cvm_argv *a, const char *fmt, ...)
{
        if (a->overflow || a->argc == CVM_MAX_ARGS) {
                a->overflow = true;
                return;
        }
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(a->arena + a->used, sizeof(a->arena) - a->used, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= sizeof(a->arena) - a->used) {
                a->overflow = true;
                return;
        }
        a->argv[a->argc++] = a->arena + a->used;
        a->argv[a->argc] = NULL;
        a->used += (size_t)n + 1;
}

#define add_arg cvm_argv_add

/* A boot file: the one given, else the image's `name`; absolute (as
 * os.path.abspath makes it: no symlink resolved) and readable. */
static int pick_file(char *dst, const char *given, const char *image, const char *name,
                     const char *what, char *err, size_t errlen)
{
        char path[PATH_MAX];
        int n = given ? snprintf(path, sizeof(path), "%s", given)
                      : snprintf(path, sizeof(path), "%s/%s", image, name);
        if (n < 0 || n >= PATH_MAX || cvm_abspath(path, dst, PATH_MAX) < 0) {
                snprintf(err, errlen, "%s path too long", what);
                return -ENAMETOOLONG;
        }
        if (access(dst, R_OK) < 0) {
                int e = errno;
                snprintf(err, errlen, "%s %s: %s", what, dst, strerror(e));
                return -e;
        }
        return 0;
}

static int resolve_boot_files(const struct cvm_opts *o, struct cvm_launch *f, char *err,
                              size_t errlen)
{
        /* QEMU boots the bzImage; Firecracker and Cloud Hypervisor the ELF vmlinux. */
        const char *kernel = o->vmm == CVM_VMM_QEMU ? "vmlinuz" : "vmlinux";
        int rc = pick_file(f->kernel, o->kernel, o->image, kernel, "kernel", err, errlen);
        if (rc == 0 && !o->no_initramfs)
                rc = pick_file(f->initramfs, o->initramfs, o->image, "initramfs.cpio.gz",
                               "initramfs", err, errlen);
        else
                f->initramfs[0] = '\0';
        if (rc == 0)
                rc = pick_file(f->rootfs, o->rootfs, o->image, "rootfs.ext4", "root image", err,
                               errlen);
        if (rc == 0 && (rc = cvm_rootfs_type(f->rootfs, &f->rootfstype)) < 0)
                snprintf(err, errlen, "root image %s: %s", f->rootfs,
                         rc == -EINVAL ? "neither erofs nor ext4 (no superblock magic)"
                                       : strerror(-rc));
        return rc;
}

int cvm_opt_path(const char *path, char *out, size_t outlen)
{
        size_t k = 0;
        for (const char *p = path; *p; p++) {
                if (k + 3 > outlen)
                        return -E2BIG;
                if (*p == ',')
                        out[k++] = ',';
                out[k++] = *p;
        }
        if (k + 1 > outlen)
                return -E2BIG;
        out[k] = '\0';
        return 0;
}

static int build_argv(const struct cvm_opts *o, struct cvm_launch *f, bool kvm, unsigned vsock_cid,
                      const char *dir)
{
        struct cvm_argv *a = &f->args;
        memset(a, 0, sizeof(*a));
        add_arg(a, "%s", o->qemu ? o->qemu : CVM_QEMU_DEFAULT);
        add_arg(a, "-M");
        add_arg(a, "microvm,x-option-roms=off,acpi=on");
        add_arg(a, "-nodefaults");
        add_arg(a, "-no-user-config");
        add_arg(a, "-nographic");
        add_arg(a, "-no-reboot");
        add_arg(a, "-m");
        add_arg(a, "%u", o->memory_mb);
        add_arg(a, "-smp");
        add_arg(a, "%u", o->vcpus);
        add_arg(a, "-accel");
        add_arg(a, "%s", kvm ? "kvm" : "tcg");
        add_arg(a, "-cpu");
        add_arg(a, "%s", kvm ? "host" : "max"); /* TCG's default CPU lacks what numpy uses */
        add_arg(a, "-kernel");
        add_arg(a, "%s", f->kernel);
        if (f->initramfs[0]) {
                add_arg(a, "-initrd");
                add_arg(a, "%s", f->initramfs);
        }
        add_arg(a, "-append");
        add_arg(a, "%s", f->cmdline);
        add_arg(a, "-chardev");
        add_arg(a, "file,id=console,path=%s/console.log", dir);
        add_arg(a, "-serial");
        add_arg(a, "chardev:console");
        add_arg(a, "-drive");
        add_arg(a, "id=root,file=%s,format=raw,if=none,readonly=on", f->rootfs);
        add_arg(a, "-device");
        add_arg(a, "virtio-blk-device,drive=root");
        add_arg(a, "-device");
        add_arg(a, "virtio-rng-device");
        add_arg(a, "-device");
        add_arg(a, "virtio-serial-device");
        add_arg(a, "-chardev");
        add_arg(a, "socket,id=agent,path=%s/agent.sock,server=on,wait=off", dir);
        add_arg(a, "-device");
        add_arg(a, "virtserialport,chardev=agent,name=cellvm");
        /* The egress port: the launcher's egress keeper (egress_keeper.h) carries
         * the guest's proxy streams over it. Every VM has it, so that one
         * template serves sandboxes with and without egress rules. */
        add_arg(a, "-chardev");
        add_arg(a, "socket,id=egress,path=%s/" CVM_EGRESS_SOCKET ",server=on,wait=off", dir);
        add_arg(a, "-device");
        add_arg(a, "virtserialport,chardev=egress,name=" CVM_EGRESS_PORT);
        if (o->user_net) {
                add_arg(a, "-netdev");
                add_arg(a, CVM_USER_NETDEV);
                add_arg(a, "-device");
                add_arg(a, CVM_USER_NET_DEVICE);
        }
        if (vsock_cid) {
                add_arg(a, "-device");
                add_arg(a, "vhost-vsock-device,guest-cid=%u", vsock_cid);
        }
        if (o->qmp) {
                add_arg(a, "-qmp");
                add_arg(a, "unix:%s/qmp.sock,server=on,wait=off", dir);
        }
        if (o->mem_path) {
                /* The guest RAM as a file (snapshots): the id every clone repeats. */
                char mem[PATH_MAX * 2];
                if (cvm_opt_path(o->mem_path, mem, sizeof(mem)) < 0)
                        return -E2BIG;
                add_arg(a, "-object");
                add_arg(a, "memory-backend-file,id=ram0,size=%uM,mem-path=%s,share=%s",
                        o->memory_mb, mem, o->mem_share ? "on" : "off");
                add_arg(a, "-machine");
                add_arg(a, "memory-backend=ram0");
        }
        return a->overflow ? -E2BIG : 0;
}

static bool outlive_creator;

void cvm_outlive_creator(bool on)
{
        outlive_creator = on;
}

/* The forked child: own process group, dies with the CLI (unless
 * cvm_outlive_creator), stdio to files, `keep_fd` inherited, exec. `cwd`
 * (non-NULL: Firecracker and Cloud Hypervisor) is its working directory,
 * where Firecracker binds its relative vsock socket, and gets stdout too
 * (Firecracker writes the guest's serial console there). */
static void exec_vmm(char *const argv[], const char *errpath, const char *cwd, int keep_fd,
                     int report_fd)
{
        int e = 0;
        if (setsid() < 0 || (!outlive_creator && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0))
                e = errno;
        if (!e && cwd && chdir(cwd) < 0)
                e = errno;
        if (!e && keep_fd >= 0 && fcntl(keep_fd, F_SETFD, 0) < 0)
                e = errno;
        int null = e ? -1 : open("/dev/null", O_RDWR | O_CLOEXEC);
        int log = null < 0 ? -1 : open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (!e && (null < 0 || log < 0))
                e = errno;
        if (!e && (dup2(null, 0) < 0 || dup2(cwd ? log : null, 1) < 0 || dup2(log, 2) < 0))
                e = errno;
        if (!e) {
                execvp(argv[0], argv);
                e = errno;
        }
        /* report_fd is CLOEXEC: the parent reads EOF on success, errno here. */
        ssize_t w = write(report_fd, &e, sizeof(e));
        (void)w; /* nothing more to do if the parent is gone */
        _exit(127);
}

/* TCG: cmdline_tcg with tsc_early_khz= set to this host's TSC frequency, which the
 * guest's TSC (the host's, under TCG) runs at, and tsc=reliable (cvm_tcg_cmdline);
 * launch.txt's value is only the fallback for a host whose TSC cannot be read
 * (docs/VMM.md, "The guest's clock under TCG"). */
static int set_host_tsc(struct launch *l, char *err, size_t errlen)
{
        uint64_t khz;
        int rc = cvm_host_tsc_khz(&khz);
        if (rc == -EINVAL) {
                snprintf(err, errlen, "$CELLVM_TSC_KHZ must be a TSC frequency in kHz");
                return rc;
        }
        if (rc < 0) {
                fprintf(stderr,
                        "cellvm: cannot measure this host's TSC frequency (%s): the guest keeps "
                        "%s and its clock may run fast or slow\n",
                        strerror(-rc), l->tcg);
                khz = 0;
        }
        char words[LAUNCH_LINE_MAX];
        if (cvm_tcg_cmdline(l->tcg, khz, words, sizeof(words)) < 0) {
                snprintf(err, errlen, "cmdline_tcg of launch.txt is too long");
                return -E2BIG;
        }
        memcpy(l->tcg, words, sizeof(words));
        return 0;
}

int cvm_boot_params(const struct cvm_opts *o, bool tcg, struct cvm_launch *f, char *err,
                    size_t errlen)
{
        static struct launch l; /* large; the CLI renders one launch at a time */
        int rc = read_launch(o->image, o->vmm, &l, err, errlen);
        if (rc == 0)
                rc = resolve_boot_files(o, f, err, errlen);
        if (rc == 0 && tcg)
                rc = set_host_tsc(&l, err, errlen);
        if (rc < 0)
                return rc;
        /* TSC calibration stalls TCG boots without tsc_early_khz (cmdline_tcg, set to the
         * host's frequency by set_host_tsc). */
        const char *more[] = {l.vmm,
                              tcg ? l.tcg : "",
                              o->user_net ? CVM_USER_NET_CMDLINE : "",
                              o->extra ? o->extra : "",
                              o->cmdline_extra ? o->cmdline_extra : "",
                              NULL};
        if (cvm_compose_cmdline(f->cmdline, sizeof(f->cmdline), l.base, f->rootfstype,
                                o->no_initramfs, more) < 0) {
                snprintf(err, errlen, "kernel command line too long");
                return -E2BIG;
        }
        return 0;
}

int cvm_render(const struct cvm_opts *o, bool kvm, unsigned vsock_cid, const char *dir,
               struct cvm_launch *f, char *err, size_t errlen)
{
        int rc = cvm_boot_params(o, !kvm, f, err, errlen);
        if (rc < 0)
                return rc;
        if (build_argv(o, f, kvm, vsock_cid, dir) < 0) {
                snprintf(err, errlen, "QEMU command line too long");
                return -E2BIG;
        }
        return 0;
}

/* A socket left by an earlier attempt is removed first: its existence means
 * "the VMM is up". */
int cvm_fork_exec(struct cvm *vm, char *const argv[], int keep_fd, char *err, size_t errlen)
{
        int rc;
        if (unlink(vm->sock) < 0 && errno != ENOENT) {
                rc = -errno;
                snprintf(err, errlen, "unlink %s: %s", vm->sock, strerror(-rc));
                return rc;
        }
        int report[2];
        if (pipe2(report, O_CLOEXEC) < 0) {
                rc = -errno;
                snprintf(err, errlen, "pipe2: %s", strerror(-rc));
                return rc;
        }
        pid_t pid = fork();
        if (pid < 0) {
                rc = -errno;
                snprintf(err, errlen, "fork: %s", strerror(-rc));
                close(report[0]);
                close(report[1]);
                return rc;
        }
        if (pid == 0) {
                close(report[0]);
                exec_vmm(argv, vm->qemu_err, vm->vmm == CVM_VMM_QEMU ? NULL : vm->dir, keep_fd,
                         report[1]);
        }
        vm->pid = pid;
        close(report[1]);
        int child_errno = 0;
        ssize_t n;
        while ((n = read(report[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
                ;
        close(report[0]);
        if (n > 0) {
                if (child_errno == ENOENT && !strchr(argv[0], '/'))
                        snprintf(err, errlen, "the `%s` binary was not found on PATH", argv[0]);
                else
                        snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(child_errno));
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                vm->pid = 0;
                return -child_errno;
        }
        return 0;
}

/* Renders the launch of vm->opts into its temp dir, then forks and execs it. */
static int spawn(struct cvm *vm, char *err, size_t errlen)
{
        static struct cvm_launch l; /* large; the CLI starts one VM at a time */
        int rc = cvm_render(vm->opts, vm->kvm, vm->vsock_cid, vm->dir, &l, err, errlen);
        return rc < 0 ? rc : cvm_fork_exec(vm, l.args.argv, -1, err, errlen);
}

/* QEMU exited (cvm_alive said so): if because another VM holds the guest
 * CID, start it again with the next CID. 1 if restarted, 0 if not that
 * case, or the negative errno of the restart. */
static int restart_if_cid_in_use(struct cvm *vm, char *err, size_t errlen)
{
        if (!vm->opts || !vm->vsock_cid || vm->cid_retries >= CVM_MAX_CID_RETRIES ||
            !cvm_cid_in_use(vm->qemu_err))
                return 0;
        vm->cid_retries++;
        vm->vsock_cid = cvm_allocate_cid();
        int rc = spawn(vm, err, errlen);
        return rc < 0 ? rc : 1;
}

int cvm_make_dir(struct cvm *vm, enum cvm_vmm vmm, char *err, size_t errlen)
{
        memset(vm, 0, sizeof(*vm));
        vm->vmm = vmm;
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0] || strlen(tmp) > 32)
                tmp = "/tmp";
        snprintf(vm->dir, sizeof(vm->dir), "%s/cellvm-%s-XXXXXX", tmp, cvm_vmm_name(vmm));
        if (!mkdtemp(vm->dir)) {
                int rc = -errno;
                snprintf(err, errlen, "mkdtemp %s: %s", vm->dir, strerror(-rc));
                vm->dir[0] = '\0';
                return rc;
        }
        bool qemu = vmm == CVM_VMM_QEMU;
        snprintf(vm->sock, sizeof(vm->sock), "%s/%s", vm->dir,
                 qemu ? "agent.sock" : CVM_HYBRID_VSOCK_SOCKET);
        snprintf(vm->console, sizeof(vm->console), "%s/console.log", vm->dir);
        snprintf(vm->qemu_err, sizeof(vm->qemu_err), "%s/%s", vm->dir,
                 qemu ? "qemu.err" : "vmm.log");
        snprintf(vm->qmp, sizeof(vm->qmp), "%s/qmp.sock", vm->dir);
        snprintf(vm->config, sizeof(vm->config), "%s/firecracker.json", vm->dir);
        snprintf(vm->api, sizeof(vm->api), "%s/api.sock", vm->dir);
        snprintf(vm->restore, sizeof(vm->restore), "%s/restore", vm->dir);
        return 0;
}

/* Waits until QEMU created vm->sock: 0, -ECHILD (it exited; qemu.err says
 * why), -ETIMEDOUT, or a restart's error. */
static int wait_socket(struct cvm *vm, char *err, size_t errlen)
{
        int rc = 0;
        for (int waited = 0; rc == 0 && access(vm->sock, F_OK) < 0; waited += 5) {
                if (!cvm_alive(vm)) {
                        rc = restart_if_cid_in_use(vm, err, errlen);
                        if (rc == 0) {
                                snprintf(err, errlen, "QEMU exited before creating its socket");
                                return -ECHILD; /* the caller prints qemu.err via the console tail
                                                 */
                        }
                        rc = rc > 0 ? 0 : rc;
                        continue;
                }
                if (waited >= SOCKET_WAIT_MS) {
                        snprintf(err, errlen, "QEMU did not create %s within %d ms", vm->sock,
                                 SOCKET_WAIT_MS);
                        rc = -ETIMEDOUT;
                        break;
                }
                sleep_ms(5);
        }
        return rc;
}

int cvm_start(const struct cvm_opts *o, struct cvm *vm, char *err, size_t errlen)
{
        if (o->vmm != CVM_VMM_QEMU)
                return cvm_hybrid_start(o, vm, err, errlen);
        int rc = cvm_make_dir(vm, CVM_VMM_QEMU, err, errlen);
        if (rc < 0)
                return rc;
        vm->opts = o;
        vm->kvm = cvm_kvm_usable();
        vm->user_net = o->user_net;
        bool vsock =
            o->vsock == CVM_VSOCK_ON || (o->vsock == CVM_VSOCK_AUTO && cvm_vhost_vsock_usable());
        vm->vsock_cid = vsock ? cvm_allocate_cid() : 0;
        vm->over_vsock = vsock;

        rc = spawn(vm, err, errlen);
        if (rc == 0)
                rc = wait_socket(vm, err, errlen);
        if (rc < 0 && rc != -ECHILD)
                cvm_kill(vm);
        return rc;
}

int cvm_spawn(struct cvm *vm, char *const argv[], int keep_fd, char *err, size_t errlen)
{
        int rc = cvm_fork_exec(vm, argv, keep_fd, err, errlen);
        if (rc == 0)
                rc = wait_socket(vm, err, errlen);
        if (rc < 0 && vm->pid > 0) {
                (void)kill(-vm->pid, SIGKILL); /* it may be gone already: reaped next */
                while (waitpid(vm->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                vm->pid = 0;
        }
        return rc;
}

bool cvm_alive(struct cvm *vm)
{
        if (vm->pid <= 0)
                return false;
        int status;
        pid_t r = waitpid(vm->pid, &status, WNOHANG);
        if (r == vm->pid || (r < 0 && errno == ECHILD)) {
                vm->pid = 0;
                return false;
        }
        return true;
}

/* One connection attempt's state, for the callbacks of cvc_connect_ex. */
struct attempt {
        struct cvm *vm;
        uint64_t no_route_since; /* mono_ns() of the first "no VM has that CID"; 0: none */
        bool vsock_unusable;     /* vsock cannot reach the guest: use the serial port */
};

static int alive_cb(void *ud)
{
        return cvm_alive(((struct attempt *)ud)->vm);
}

static int vsock_retry_cb(int err, void *ud)
{
        struct attempt *at = ud;
        switch (cvm_vsock_classify(err)) {
        case CVM_VSOCK_RETRY:
                at->no_route_since = 0;
                return 1;
        case CVM_VSOCK_NO_ROUTE: {
                uint64_t now = mono_ns();
                if (!at->no_route_since)
                        at->no_route_since = now;
                if (now - at->no_route_since < CVM_VSOCK_NO_ROUTE_GRACE_MS * 1000000ull)
                        return 1; /* QEMU may not have set its devices up yet */
                at->vsock_unusable = true;
                return 0;
        }
        case CVM_VSOCK_UNAVAILABLE:
        default:
                at->vsock_unusable = true;
                return 0;
        }
}

int cvm_connect(struct cvm *vm, int timeout_ms, struct cvc **out)
{
        if (vm->vmm != CVM_VMM_QEMU)
                return cvm_hybrid_connect(vm, timeout_ms, out);
        uint64_t deadline = mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1) * 1000000u;
        *out = NULL;
        for (;;) {
                uint64_t now = mono_ns();
                int left = now >= deadline ? 1 : (int)((deadline - now) / 1000000u) + 1;
                struct attempt at = {.vm = vm};
                struct cvc_connect_opts o = {
                    .timeout_ms = left,
                    .hello_resend_ms = CVC_HELLO_RESEND_MS,
                    .still_alive = alive_cb,
                    .retry_connect = vm->over_vsock ? vsock_retry_cb : NULL,
                    .ud = &at,
                };
                char addr[sizeof(vm->sock) + 8];
                if (vm->over_vsock)
                        snprintf(addr, sizeof(addr), "vsock:%u:%d", vm->vsock_cid,
                                 CVM_AGENT_VSOCK_PORT);
                else
                        snprintf(addr, sizeof(addr), "unix:%s", vm->sock);
                int rc = cvc_connect_ex(addr, &o, out);
                if (rc == 0)
                        return 0;
                bool retry = false;
                if (vm->over_vsock && at.vsock_unusable && cvm_alive(vm)) {
                        vm->over_vsock = false; /* the serial port is the fallback */
                        retry = true;
                } else if (!cvm_alive(vm)) {
                        char err[256]; /* spawn's detail; the errno is what the caller gets */
                        int r = restart_if_cid_in_use(vm, err, sizeof(err));
                        if (r < 0) {
                                cvc_close(*out);
                                *out = NULL;
                                return r;
                        }
                        retry = r > 0;
                }
                if (!retry)
                        return rc;
                cvc_close(*out);
                *out = NULL;
        }
}

static void print_tail(const char *path, FILE *f, size_t max)
{
        FILE *in = fopen(path, "re");
        if (!in)
                return;
        if (fseek(in, 0, SEEK_END) == 0) {
                long size = ftell(in);
                if (size > (long)max && fseek(in, size - (long)max, SEEK_SET) < 0)
                        rewind(in);
                else if (size <= (long)max)
                        rewind(in);
        }
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
                fwrite(buf, 1, n, f);
        fclose(in);
}

void cvm_print_console_tail(const struct cvm *vm, FILE *f, size_t max)
{
        if (!vm->dir[0])
                return;
        fputs("--- guest console (tail) ---\n", f);
        print_tail(vm->console, f, max);
        fprintf(f, "--- %s %s ---\n", cvm_vmm_name(vm->vmm),
                vm->vmm == CVM_VMM_QEMU ? "stderr" : "output");
        print_tail(vm->qemu_err, f, max);
}

/* `dir`/`name` into `out` (strlen and memcpy: async-signal-safe); "" if too long. */
static void join(char *out, size_t outlen, const char *dir, const char *name)
{
        size_t a = strlen(dir), b = strlen(name);
        out[0] = '\0';
        if (a + 1 + b + 1 > outlen)
                return;
        memcpy(out, dir, a);
        out[a] = '/';
        memcpy(out + a + 1, name, b + 1);
}

void cvm_kill(struct cvm *vm)
{
        if (vm->pid > 0) {
                /* SIGKILL: the root disk is read-only, nothing to flush. */
                if (kill(-vm->pid, SIGKILL) < 0 && errno == ESRCH)
                        (void)kill(vm->pid, SIGKILL);
                while (waitpid(vm->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                vm->pid = 0;
        }
        if (vm->dir[0]) {
                /* The files QEMU and we made; unlink ignores the missing ones. */
                (void)unlink(vm->sock);
                (void)unlink(vm->console);
                (void)unlink(vm->qemu_err);
                (void)unlink(vm->qmp);
                (void)unlink(vm->config);
                (void)unlink(vm->api);
                if (vm->vmm == CVM_VMM_QEMU) { /* the egress port's, and its keeper's */
                        static const char *const files[] = {CVM_EGRESS_SOCKET, CVM_EGRESS_RULES,
                                                            CVM_EGRESS_LOG, CVM_EGRESS_LOCK};
                        char path[sizeof(vm->dir) + 32];
                        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                                join(path, sizeof(path), vm->dir, files[i]);
                                (void)unlink(path);
                        }
                }
                if (vm->vmm != CVM_VMM_QEMU) { /* a restored clone's (snapshot_hybrid.c) */
                        char path[sizeof(vm->dir) + 16];
                        join(path, sizeof(path), vm->dir, "manifest");
                        (void)unlink(path);
                }
                if (vm->vmm == CVM_VMM_CLOUD_HYPERVISOR && vm->restore[0]) {
                        static const char *const files[] = {"config.json", "state.json",
                                                            "memory-ranges"};
                        char path[sizeof(vm->restore) + 32];
                        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                                join(path, sizeof(path), vm->restore, files[i]);
                                (void)unlink(path);
                        }
                        (void)rmdir(vm->restore);
                }
                (void)rmdir(vm->dir);
                vm->dir[0] = '\0';
        }
}
