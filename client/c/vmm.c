/* Booting a cellvm image under QEMU (-M microvm) for the CLI: see vmm.h. */
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

#define QEMU_DEFAULT "qemu-system-x86_64"
#define SOCKET_WAIT_MS 10000
#define LAUNCH_LINE_MAX 4096
#define CMDLINE_MAX 8192
#define MAX_ARGS 64
/* Guest CIDs 0-2 are reserved; derive ours from the pid so parallel VMs differ. */
#define VSOCK_CID_BASE 1000

/* The kernel command line pieces of launch.txt. */
struct launch {
        char base[LAUNCH_LINE_MAX];
        char qemu[LAUNCH_LINE_MAX];
        char tcg[LAUNCH_LINE_MAX];
};

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int read_launch(const char *image, struct launch *l, char *err, size_t errlen)
{
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
                else if (klen == 16 && strncmp(line, "cmdline_vmm_qemu", klen) == 0)
                        dst = l->qemu;
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

static bool vhost_vsock_usable(void)
{
        int fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

/* argv storage: strings formatted into one arena. */
struct argv_buf {
        char *argv[MAX_ARGS + 1];
        size_t argc;
        char arena[3 * CMDLINE_MAX];
        size_t used;
        bool overflow;
};

static void add_arg(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_arg(struct argv_buf *a, const char *fmt, ...)
{
        if (a->overflow || a->argc == MAX_ARGS) {
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
        a->used += (size_t)n + 1;
}

static int build_argv(const struct cvm_opts *o, const struct launch *l, struct cvm *vm,
                      struct argv_buf *a)
{
        const char *img = o->image;
        add_arg(a, "%s", o->qemu ? o->qemu : QEMU_DEFAULT);
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
        add_arg(a, "%s", vm->kvm ? "kvm" : "tcg");
        add_arg(a, "-cpu");
        add_arg(a, "%s", vm->kvm ? "host" : "max"); /* TCG's default CPU lacks what numpy uses */
        add_arg(a, "-kernel");
        add_arg(a, "%s/vmlinuz", img);
        add_arg(a, "-initrd");
        add_arg(a, "%s/initramfs.cpio.gz", img);
        add_arg(a, "-append");
        /* TSC calibration stalls TCG boots without tsc_early_khz. */
        add_arg(a, "%s%s%s%s%s%s%s", l->base, l->qemu[0] ? " " : "", l->qemu,
                !vm->kvm && l->tcg[0] ? " " : "", vm->kvm ? "" : l->tcg,
                o->extra && o->extra[0] ? " " : "", o->extra ? o->extra : "");
        add_arg(a, "-chardev");
        add_arg(a, "file,id=console,path=%s", vm->console);
        add_arg(a, "-serial");
        add_arg(a, "chardev:console");
        add_arg(a, "-drive");
        add_arg(a, "id=root,file=%s/rootfs.ext4,format=raw,if=none,readonly=on", img);
        add_arg(a, "-device");
        add_arg(a, "virtio-blk-device,drive=root");
        add_arg(a, "-device");
        add_arg(a, "virtio-rng-device");
        add_arg(a, "-device");
        add_arg(a, "virtio-serial-device");
        add_arg(a, "-chardev");
        add_arg(a, "socket,id=agent,path=%s,server=on,wait=off", vm->sock);
        add_arg(a, "-device");
        add_arg(a, "virtserialport,chardev=agent,name=cellvm");
        if (vhost_vsock_usable()) {
                add_arg(a, "-device");
                add_arg(a, "vhost-vsock-device,guest-cid=%d", VSOCK_CID_BASE + getpid() % 100000);
        }
        a->argv[a->argc] = NULL;
        return a->overflow ? -E2BIG : 0;
}

/* The forked child: own process group, dies with the CLI, stdio to files, exec. */
static void exec_qemu(struct argv_buf *a, const char *errpath, int report_fd)
{
        int e = 0;
        if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                e = errno;
        int null = e ? -1 : open("/dev/null", O_RDWR | O_CLOEXEC);
        int log = null < 0 ? -1 : open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (!e && (null < 0 || log < 0))
                e = errno;
        if (!e && (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0))
                e = errno;
        if (!e) {
                execvp(a->argv[0], a->argv);
                e = errno;
        }
        /* report_fd is CLOEXEC: the parent reads EOF on success, errno here. */
        ssize_t w = write(report_fd, &e, sizeof(e));
        (void)w; /* nothing more to do if the parent is gone */
        _exit(127);
}

int cvm_start(const struct cvm_opts *o, struct cvm *vm, char *err, size_t errlen)
{
        memset(vm, 0, sizeof(*vm));
        struct launch l;
        int rc = read_launch(o->image, &l, err, errlen);
        if (rc < 0)
                return rc;
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0] || strlen(tmp) > 32)
                tmp = "/tmp";
        snprintf(vm->dir, sizeof(vm->dir), "%s/cellvm-qemu-XXXXXX", tmp);
        if (!mkdtemp(vm->dir)) {
                rc = -errno;
                snprintf(err, errlen, "mkdtemp %s: %s", vm->dir, strerror(-rc));
                vm->dir[0] = '\0';
                return rc;
        }
        snprintf(vm->sock, sizeof(vm->sock), "%s/agent.sock", vm->dir);
        snprintf(vm->console, sizeof(vm->console), "%s/console.log", vm->dir);
        snprintf(vm->qemu_err, sizeof(vm->qemu_err), "%s/qemu.err", vm->dir);
        vm->kvm = cvm_kvm_usable();

        static struct argv_buf a; /* large; the CLI starts one VM */
        memset(&a, 0, sizeof(a));
        rc = build_argv(o, &l, vm, &a);
        if (rc < 0) {
                snprintf(err, errlen, "QEMU command line too long");
                cvm_kill(vm);
                return rc;
        }
        int report[2];
        if (pipe2(report, O_CLOEXEC) < 0) {
                rc = -errno;
                snprintf(err, errlen, "pipe2: %s", strerror(-rc));
                cvm_kill(vm);
                return rc;
        }
        pid_t pid = fork();
        if (pid < 0) {
                rc = -errno;
                snprintf(err, errlen, "fork: %s", strerror(-rc));
                close(report[0]);
                close(report[1]);
                cvm_kill(vm);
                return rc;
        }
        if (pid == 0) {
                close(report[0]);
                exec_qemu(&a, vm->qemu_err, report[1]);
        }
        vm->pid = pid;
        close(report[1]);
        int child_errno = 0;
        ssize_t n;
        while ((n = read(report[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
                ;
        close(report[0]);
        if (n > 0) {
                snprintf(err, errlen, "cannot run %s: %s", a.argv[0], strerror(child_errno));
                cvm_kill(vm);
                return -child_errno;
        }
        for (int waited = 0; access(vm->sock, F_OK) < 0; waited += 5) {
                if (!cvm_alive(vm)) {
                        snprintf(err, errlen, "%s exited before creating its socket", a.argv[0]);
                        return -ECHILD; /* the caller prints qemu.err via the console tail */
                }
                if (waited >= SOCKET_WAIT_MS) {
                        snprintf(err, errlen, "%s did not create %s within %d ms", a.argv[0],
                                 vm->sock, SOCKET_WAIT_MS);
                        cvm_kill(vm);
                        return -ETIMEDOUT;
                }
                sleep_ms(5);
        }
        return 0;
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

static int alive_cb(void *ud)
{
        return cvm_alive(ud);
}

int cvm_connect(struct cvm *vm, int timeout_ms, struct cvc **out)
{
        char addr[sizeof(vm->sock) + 8];
        snprintf(addr, sizeof(addr), "unix:%s", vm->sock);
        struct cvc_connect_opts o = {
            .timeout_ms = timeout_ms,
            .hello_resend_ms = CVC_HELLO_RESEND_MS,
            .still_alive = alive_cb,
            .ud = vm,
        };
        return cvc_connect_ex(addr, &o, out);
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
        fputs("--- qemu stderr ---\n", f);
        print_tail(vm->qemu_err, f, max);
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
                (void)rmdir(vm->dir);
                vm->dir[0] = '\0';
        }
}
