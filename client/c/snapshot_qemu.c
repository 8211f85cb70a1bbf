/* QEMU templates for the CLI: see snapshot_qemu.h and docs/SNAPSHOTS.md. */
#include "snapshot_qemu.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "connect.h"
#include "mono_clock.h"
#include "msgtypes.h"
#include "qmp.h"
#include "registry.h"
#include "template.h"
#include "vmm_boot.h"
#include "vmm_idle.h"

#define STATE_FDNAME "cellvm-state"
#define READY_POLL_MS 500
#define QUIT_WAIT_MS 10000
#define VERSION_MAX 4096
#define ENTROPY_BYTES 64

static int64_t realtime_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int left_ms(uint64_t deadline)
{
        uint64_t now = mono_ns();
        return now >= deadline ? 1 : (int)((deadline - now) / 1000000u) + 1;
}

/* --- the VMM's version ------------------------------------------------------ */

void csq_which(const char *binary, char *out, size_t outlen)
{
        snprintf(out, outlen, "%s", binary);
        if (strchr(binary, '/'))
                return;
        const char *path = getenv("PATH");
        for (const char *p = path; p && *p;) {
                size_t n = strcspn(p, ":");
                char cand[PATH_MAX];
                int k =
                    snprintf(cand, sizeof(cand), "%.*s/%s", (int)(n ? n : 1), n ? p : ".", binary);
                struct stat st;
                if (k > 0 && (size_t)k < sizeof(cand) && stat(cand, &st) == 0 &&
                    S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
                        snprintf(out, outlen, "%s", cand);
                        return;
                }
                p += n;
                p += *p == ':';
        }
}

/* `path --version`'s first line, by running it. */
static int run_version(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                int e = errno;
                snprintf(err, errlen, "pipe2: %s", strerror(e));
                return -e;
        }
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close(pipefd[0]);
                close(pipefd[1]);
                snprintf(err, errlen, "fork: %s", strerror(e));
                return -e;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(pipefd[1], 1) < 0 || dup2(null, 2) < 0)
                        _exit(127);
                execl(path, path, "--version", (char *)NULL);
                _exit(127);
        }
        close(pipefd[1]);
        char buf[VERSION_MAX + 1];
        size_t len = 0;
        uint64_t deadline = mono_ns() + 30000000000ull;
        for (;;) {
                struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
                int rc = poll(&p, 1, left_ms(deadline));
                if (rc < 0 && errno == EINTR)
                        continue;
                if (rc <= 0)
                        break; /* a hung --version: what it printed so far */
                ssize_t n = read(pipefd[0], buf + len, VERSION_MAX - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                if (len == VERSION_MAX)
                        break;
        }
        close(pipefd[0]);
        (void)kill(pid, SIGKILL); /* it has exited, or is cut short: reaped below */
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        buf[len] = '\0';
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && len == 0) {
                snprintf(err, errlen, "cannot run %s --version", path);
                return -ENOENT;
        }
        /* (out.strip().splitlines() or [""])[0] */
        const char *s = buf;
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
                s++;
        size_t n = strcspn(s, "\r\n\v\f");
        bool last = s[n] == '\0';
        while (last && n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
        snprintf(out, outlen, "%.*s", (int)n, s);
        return 0;
}

/* The version of a VMM binary is cached in the registry's directory (per
 * host boot: a tmpfs), keyed by the binary's path and checked against its
 * device, inode, size, mtime and ctime: running `qemu --version` costs
 * ~70 ms under load, and `cellvm create` is one process per sandbox. */
#define VERSION_CACHE_FORMAT "cellvm-vmm-version 1"

static int version_cache_path(const char *path, char *out, size_t outlen)
{
        struct creg r = {.lock_fd = -1};
        char err[600];
        if (creg_open(&r, err, sizeof(err)) < 0)
                return -ENOENT;
        uint64_t h = ctpl_fnv1a64(CTPL_FNV_BASIS, path, strlen(path));
        int n = snprintf(out, outlen, "%s/vmm-version-%016llx", r.dir, (unsigned long long)h);
        return n > 0 && (size_t)n < outlen ? 0 : -ENAMETOOLONG;
}

static void version_key(const struct stat *st, char *out, size_t outlen)
{
        snprintf(out, outlen, "%llu %llu %lld %lld.%09ld %lld.%09ld",
                 (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
                 (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
                 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

int csq_vmm_version(const char *binary, char *out, size_t outlen, char *err, size_t errlen)
{
        char path[PATH_MAX], cache[PATH_MAX], key[160], text[VERSION_MAX + 256];
        csq_which(binary, path, sizeof(path));
        struct stat st;
        bool cacheable = path[0] == '/' && stat(path, &st) == 0 &&
                         version_cache_path(path, cache, sizeof(cache)) == 0;
        if (cacheable) {
                version_key(&st, key, sizeof(key));
                int fd = open(cache, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
                if (fd >= 0)
                        close(fd);
                if (n > 0) {
                        text[n] = '\0';
                        char *l1 = strchr(text, '\n'), *l2 = l1 ? strchr(l1 + 1, '\n') : NULL;
                        char *end = l2 ? strchr(l2 + 1, '\n') : NULL;
                        if (end && (size_t)(l1 - text) == strlen(VERSION_CACHE_FORMAT) &&
                            strncmp(text, VERSION_CACHE_FORMAT, (size_t)(l1 - text)) == 0 &&
                            (size_t)(l2 - l1 - 1) == strlen(key) &&
                            strncmp(l1 + 1, key, strlen(key)) == 0 &&
                            (size_t)(end - l2 - 1) < outlen) {
                                snprintf(out, outlen, "%.*s", (int)(end - l2 - 1), l2 + 1);
                                return 0;
                        }
                }
        }
        int rc = run_version(path, out, outlen, err, errlen);
        if (rc < 0 || !cacheable || strchr(out, '\n'))
                return rc;
        char tmp[PATH_MAX + 32];
        snprintf(tmp, sizeof(tmp), "%s.tmp-%d", cache, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return 0; /* not cached: the next call runs it again */
        int len = snprintf(text, sizeof(text), VERSION_CACHE_FORMAT "\n%s\n%s\n", key, out);
        bool ok = len > 0 && (size_t)len < sizeof(text) && write(fd, text, (size_t)len) == len;
        if (close(fd) < 0 || !ok || rename(tmp, cache) < 0)
                (void)unlink(tmp);
        return 0;
}

/* --- the launch ------------------------------------------------------------- */

int csq_launch_begin(struct csq_launch *l, const struct cvm_opts *run, unsigned user_mb, char *err,
                     size_t errlen)
{
        memset(l, 0, sizeof(*l));
        int rc = csm_init(&l->want);
        if (rc < 0) {
                snprintf(err, errlen, "out of memory");
                return rc;
        }
        if ((rc = cvm_abspath(run->image, l->image, sizeof(l->image))) < 0) {
                snprintf(err, errlen, "image %s: %s", run->image, strerror(-rc));
                return rc;
        }
        l->opts = *run;
        l->opts.image = l->image;
        snprintf(l->extra, sizeof(l->extra), "cellvm.mem_limit=%uM cellvm.deadline_ms=%d", user_mb,
                 CSQ_BUILD_DEADLINE_MS);
        l->opts.extra = l->extra;
        l->want.memory_mb = run->memory_mb;
        l->want.vcpus = run->vcpus;
        return 0;
}

int csq_launch_finish(struct csq_launch *l, const struct cvm_launch *r, int rc, char *err,
                      size_t errlen)
{
        struct csm *w = &l->want;
        if (rc == 0)
                rc = csm_add_file(w, "kernel", r->kernel, err, errlen);
        if (rc == 0 && r->initramfs[0])
                rc = csm_add_file(w, "initramfs", r->initramfs, err, errlen);
        if (rc == 0)
                rc = csm_add_file(w, "rootfs", r->rootfs, err, errlen);
        if (rc == 0 && (rc = ctpl_name(w, l->name, sizeof(l->name))) == 0 &&
            (rc = ctpl_root(l->root, sizeof(l->root))) == 0 &&
            (size_t)snprintf(l->tdir, sizeof(l->tdir), "%s/%s", l->root, l->name) >=
                sizeof(l->tdir))
                rc = -ENAMETOOLONG;
        if (rc < 0 && !err[0])
                snprintf(err, errlen, "the template's manifest: %s",
                         rc == -ENOENT ? "no home directory for the template root" : strerror(-rc));
        return rc;
}

int csq_launch_init(struct csq_launch *l, const struct cvm_opts *run, unsigned user_mb, char *err,
                    size_t errlen)
{
        int rc = csq_launch_begin(l, run, user_mb, err, errlen);
        if (rc < 0)
                return rc;
        l->opts.qmp = true;
        l->opts.vsock = CVM_VSOCK_OFF; /* a guest CID is per VM: templates use the serial port */
        l->opts.mem_path = CTPL_SNAPSHOT_PLACEHOLDER "/memory";
        l->opts.mem_share = false;
        bool kvm = cvm_kvm_usable();
        static struct cvm_launch r; /* large */
        if ((rc = cvm_render(&l->opts, kvm, 0, CTPL_DIR_PLACEHOLDER, &r, err, errlen)) < 0)
                return rc;
        const char *binary = run->qemu ? run->qemu : CVM_QEMU_DEFAULT;
        char version[512];
        if ((rc = csq_vmm_version(binary, version, sizeof(version), err, errlen)) < 0)
                return rc;
        struct csm *w = &l->want;
        const char *strs[][2] = {{"kind", "template"},           {"vmm", "qemu"},
                                 {"vmm_version", version},       {"vmm_binary", binary},
                                 {"accel", kvm ? "kvm" : "tcg"}, {"image", l->image},
                                 {"cmdline", r.cmdline},         {"memory", "memory"}};
        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && rc == 0; i++)
                rc = csm_set(w, strs[i][0], strs[i][1]);
        w->memory_size = (uint64_t)run->memory_mb << 20;
        for (size_t i = 0; i < r.args.argc && rc == 0; i++)
                rc = csm_set(w, "arg", r.args.argv[i]);
        return csq_launch_finish(l, &r, rc, err, errlen);
}

void csq_launch_free(struct csq_launch *l)
{
        csm_free(&l->want);
}

int csq_usable(const struct csq_launch *l, char *snapdir, size_t snaplen, struct csm *m, char *why,
               size_t whylen)
{
        why[0] = '\0';
        /* A snapshot is run: only from directories of this user that others cannot write. */
        const char *const dirs[] = {l->root, l->tdir};
        for (size_t i = 0; i < 2; i++) {
                struct stat st;
                if (lstat(dirs[i], &st) < 0)
                        return 0; /* none yet */
                if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
                        snprintf(why, whylen,
                                 "%s is not a directory of this user writable only by it", dirs[i]);
                        return 0;
                }
        }
        int rc = ctpl_current(l->tdir, snapdir, snaplen, why, whylen);
        if (rc <= 0)
                return 0;
        if (csm_init(m) < 0) {
                snprintf(why, whylen, "out of memory");
                return 0;
        }
        if (csm_read(snapdir, m, why, whylen) == 0 &&
            csm_check_files(m, snapdir, why, whylen) == 0 &&
            csm_differences(m, &l->want, why, whylen) == 0)
                return 1;
        csm_free(m);
        return 0;
}

/* --- building a template ---------------------------------------------------- */

/* The half-written snapshot of a build in progress, for csq_abort_build. */
static char abort_dir[PATH_MAX], abort_state[PATH_MAX + 8], abort_memory[PATH_MAX + 8];
static volatile sig_atomic_t building;

void csq_abort_build(void)
{
        if (!building)
                return;
        (void)unlink(abort_memory); /* best effort in a signal handler: the next */
        (void)unlink(abort_state);  /* builder prunes what is left after an hour */
        (void)rmdir(abort_dir);
}

static int alive_cb(void *ud)
{
        return cvm_alive(ud);
}

/* A call whose body was encoded into `b` (freed here). */
static int call(struct cvc *c, uint16_t type, struct cv_buf *b, int timeout_ms, cbor_item_t **reply)
{
        int rc =
            b->err
                ? cvc_fail(c, b->err, "encode %s: %s", cv_msg_type_name(type), strerror(-b->err))
                : cvc_call_timeout(c, type, cv_buf_head(b), cv_buf_pending(b), timeout_ms, reply);
        cv_buf_free(b);
        return rc;
}

/* The agent's error code is `code` (cvc_errmsg is "code: message"). */
static bool agent_said(struct cvc *c, int rc, const char *code)
{
        size_t n = strlen(code);
        return rc == -EREMOTEIO && strncmp(cvc_errmsg(c), code, n) == 0 && cvc_errmsg(c)[n] == ':';
}

static bool executor_ready(const cbor_item_t *hello)
{
        cbor_item_t *boot;
        return hello && cv_map_get_map(hello, "boot", &boot) == 0 &&
               cv_map_get(boot, "executor_ready") != NULL;
}

bool csq_under_init(struct cvc *c)
{
        cbor_item_t *boot;
        return cv_map_get_map(cvc_hello(c), "boot", &boot) == 0 &&
               (cv_map_get(boot, "init_start") || cv_map_get(boot, "kernel_to_init"));
}

int csq_wait_executor_ready(struct cvm *vm, struct cvc *c, uint64_t deadline, char *err,
                            size_t errlen)
{
        bool ready = executor_ready(cvc_hello(c));
        while (!ready) {
                if (mono_ns() >= deadline) {
                        snprintf(err, errlen,
                                 "the agent answered but its executor (zygote "
                                 "preloads) was not ready in time");
                        return -ETIMEDOUT;
                }
                if (!cvm_alive(vm)) {
                        snprintf(err, errlen, "%s exited while the executor started",
                                 cvm_vmm_name(vm->vmm));
                        return -ECHILD;
                }
                sleep_ms(READY_POLL_MS);
                int rc = cvc_rehello(c, left_ms(deadline));
                if (rc == -ETIMEDOUT)
                        continue;
                if (rc < 0) {
                        snprintf(err, errlen, "HELLO: %s", cvc_errmsg(c));
                        return rc;
                }
                ready = executor_ready(cvc_hello(c));
        }
        return 0;
}

/* The guest's background work (the next spare executor's warm-up, above all)
 * ended, or a warning: what still runs at the save runs again in every clone. */
static int settle(const struct cvm *vm, char *err, size_t errlen)
{
        uint64_t t0 = mono_ns();
        int rc = cvi_wait_settled(vm->pid, CSQ_SETTLE_TIMEOUT_MS, CVI_IDLE_PERCENT, CVI_WINDOWS,
                                  CVI_WINDOW_MS);
        if (rc < 0) {
                snprintf(err, errlen, "watching the VMM's CPU time (pid %d): %s", (int)vm->pid,
                         strerror(-rc));
                return rc;
        }
        if (rc == 0)
                fprintf(stderr,
                        "cellvm: the template's guest was still busy after %d s; saving it anyway: "
                        "its clones will finish that work in their first cell\n",
                        CSQ_SETTLE_TIMEOUT_MS / 1000);
        else
                fprintf(stderr, "cellvm: the template's guest settled in %.1f s\n",
                        (double)(mono_ns() - t0) / 1e9);
        return 0;
}

/* SET_DEADLINE 0 (a template carries no deadline), an empty cell (the default
 * context's executor spawned now, not in every clone's first cell; an empty
 * cell is not counted), the guest settled, SNAPSHOT_PREPARE: the generation
 * that ends. */
int csq_prepare_guest(const struct cvm *vm, struct cvc *c, uint64_t *generation, char *err,
                      size_t errlen)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "timeout_ms");
        cv_enc_uint(&b, 0);
        int rc = call(c, CV_MSG_SET_DEADLINE, &b, 30000, NULL);
        if (rc < 0 && !agent_said(c, rc, "unsupported")) {
                snprintf(err, errlen, "SET_DEADLINE: %s", cvc_errmsg(c));
                return rc;
        }
        struct cvc_exec_opts eo = {.code = "", .timeout_ms = 120000};
        struct cvc_exec_status st;
        if ((rc = cvc_execute(c, &eo, NULL, NULL, &st)) < 0 || st.timed_out) {
                snprintf(err, errlen, "the template's default context did not start: %s",
                         rc < 0 ? cvc_errmsg(c) : "timed out");
                return rc < 0 ? rc : -ETIMEDOUT;
        }
        if ((rc = settle(vm, err, errlen)) < 0)
                return rc;
        *generation = 0;
        if (!csq_under_init(c)) { /* its clock and entropy are this host's: nothing to prepare */
                fprintf(stderr, "cellvm: the agent is not under cellvm-init (a VMM stand-in or dev "
                                "mode): no SNAPSHOT_PREPARE\n");
                return 0;
        }
        cv_buf_init(&b);
        cv_enc_map(&b, 0);
        cbor_item_t *reply = NULL;
        rc = call(c, CV_MSG_SNAPSHOT_PREPARE, &b, 30000, &reply);
        if (rc == 0) {
                (void)cv_map_get_uint(reply, "generation", generation); /* 0 when absent */
                cbor_decref(&reply);
        } else if (agent_said(c, rc, "unknown_type") || agent_said(c, rc, "unsupported")) {
                fprintf(stderr,
                        "cellvm: the guest's agent has no SNAPSHOT_PREPARE (%s): its clones will "
                        "be refreshed with SET_TIME and ADD_ENTROPY only, and their Python random "
                        "generators will start alike\n",
                        cvc_errmsg(c));
        } else {
                snprintf(err, errlen, "SNAPSHOT_PREPARE: %s", cvc_errmsg(c));
                return rc;
        }
        return 0;
}

/* Waits up to `ms` for QEMU to exit by itself. */
static void wait_exit(struct cvm *vm, int ms)
{
        for (int waited = 0; waited < ms && cvm_alive(vm); waited += 10)
                sleep_ms(10);
}

static const char x_ignore_shared_on[] =
    "{\"capabilities\": [{\"capability\": \"x-ignore-shared\", \"state\": true}]}";
static const char x_ignore_shared_off[] =
    "{\"capabilities\": [{\"capability\": \"x-ignore-shared\", \"state\": false}]}";

int csq_save_state(const char *qmp, int (*alive)(void *), void *ud, const char *path, bool with_ram,
                   uint64_t *size, struct cqmp *q, char *err, size_t errlen)
{
        int rc = cqmp_connect(q, qmp, 10000, alive, ud);
        if (rc == 0)
                rc = cqmp_execute(q, "stop", NULL, -1, 10000, NULL);
        if (rc == 0)
                rc = cqmp_execute(q, "migrate-set-capabilities",
                                  with_ram ? x_ignore_shared_off : x_ignore_shared_on, -1, 10000,
                                  NULL);
        if (rc < 0) {
                snprintf(err, errlen, "%s", q->err);
                return rc;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
                rc = -errno;
                snprintf(err, errlen, "creating %s: %s", path, strerror(errno));
                return rc;
        }
        rc = cqmp_execute(q, "getfd", "{\"fdname\": \"" STATE_FDNAME "\"}", fd, 10000, NULL);
        if (rc == 0)
                rc = cqmp_execute(q, "migrate", "{\"uri\": \"fd:" STATE_FDNAME "\"}", -1, 10000,
                                  NULL);
        if (rc == 0)
                rc = cqmp_wait_migration(q, CSQ_MIGRATE_TIMEOUT_MS);
        if (rc < 0)
                snprintf(err, errlen, "saving %s: %s", path, q->err);
        struct stat st;
        if (rc == 0 && (fsync(fd) < 0 || fstat(fd, &st) < 0)) {
                rc = -errno;
                snprintf(err, errlen, "fsync of %s: %s", path, strerror(errno));
        }
        if (close(fd) < 0 && rc == 0) {
                rc = -errno;
                snprintf(err, errlen, "closing %s: %s", path, strerror(errno));
        }
        if (rc == 0)
                *size = (uint64_t)st.st_size;
        return rc;
}

/* With the guest prepared: stop, the device state (RAM excluded) into `path`
 * (fsynced), quit. The state's size in *size. */
static int save_state(struct cvm *vm, const char *path, uint64_t *size, char *err, size_t errlen)
{
        static struct cqmp q; /* large */
        int rc = csq_save_state(vm->qmp, alive_cb, vm, path, false, size, &q, err, errlen);
        if (rc == 0) {
                /* QEMU closes the connection as it goes: no answer is no error here. */
                (void)cqmp_execute(&q, "quit", NULL, -1, QUIT_WAIT_MS, NULL);
                wait_exit(vm, QUIT_WAIT_MS);
        }
        cqmp_close(&q);
        return rc;
}

int csq_boot_prepared(const struct csq_launch *l, const struct cvm_opts *o, struct cvm *vm,
                      uint64_t t0, struct cvc **c, uint64_t *generation, char *err, size_t errlen)
{
        *c = NULL;
        int rc = cvm_start(o, vm, err, errlen);
        if (rc == -ECHILD)
                cvm_print_console_tail(vm, stderr, 3000);
        if (rc == 0 && (rc = cvm_connect(vm, CSQ_BUILD_TIMEOUT_MS, c)) < 0) {
                snprintf(err, errlen, "the agent in the VM did not answer: %s",
                         *c             ? cvc_errmsg(*c)
                         : vm->error[0] ? vm->error
                                        : strerror(-rc));
                cvm_print_console_tail(vm, stderr, 3000);
        }
        if (rc == 0 && (rc = csq_wait_executor_ready(vm, *c, t0 + CSQ_BUILD_TIMEOUT_MS * 1000000ull,
                                                     err, errlen)) < 0)
                cvm_print_console_tail(vm, stderr, 3000);
        if (rc == 0) {
                fprintf(stderr, "cellvm: template %s: the guest is ready after %.1f s; saving it\n",
                        l->tdir, (double)(mono_ns() - t0) / 1e9);
                rc = csq_prepare_guest(vm, *c, generation, err, errlen);
        }
        return rc;
}

int csq_build(const struct csq_launch *l, struct cvm *vm, char *snapdir, size_t snaplen,
              struct csm *m, char *err, size_t errlen)
{
        uint64_t t0 = mono_ns();
        fprintf(stderr,
                "cellvm: building the template %s (qemu, %" PRIu64 " MiB): booting the image and "
                "waiting for its preloads, ~20 s under TCG; later runs restore it in well under "
                "a second\n",
                l->tdir, l->want.memory_mb);
        char tmp[PATH_MAX];
        int rc = ctpl_new_snapshot_dir(l->tdir, tmp, sizeof(tmp), err, errlen);
        if (rc < 0)
                return rc;
        snprintf(abort_dir, sizeof(abort_dir), "%s", tmp);
        snprintf(abort_state, sizeof(abort_state), "%s/state", tmp);
        snprintf(abort_memory, sizeof(abort_memory), "%s/memory", tmp);
        building = 1;
        struct cvm_opts o = l->opts;
        o.mem_path = abort_memory;
        o.mem_share = true; /* the guest's RAM is the file */
        struct cvc *c = NULL;
        uint64_t generation = 0, state_size = 0;
        bool have_m = false;
        rc = csq_boot_prepared(l, &o, vm, t0, &c, &generation, err, errlen);
        /* The channel stays connected while the state is saved: a clone then
         * connects before its state is loaded and the port's "host connected"
         * state never changes (load() below). */
        if (rc == 0)
                rc = save_state(vm, abort_state, &state_size, err, errlen);
        cvc_close(c);
        cvm_kill(vm);
        if (rc == 0 && (rc = csm_copy(m, &l->want)) < 0)
                snprintf(err, errlen, "out of memory");
        have_m = rc == 0;
        if (rc == 0) {
                m->generation = generation;
                m->state_size = state_size;
                m->created_ms = (uint64_t)(realtime_ns() / 1000000);
                m->build_ms = (mono_ns() - t0) / 1000000u;
                rc = csm_check_files(m, tmp, err, errlen);
        }
        if (rc == 0)
                rc = csm_write(tmp, m, err, errlen);
        if (rc == 0)
                rc = ctpl_publish(l->tdir, tmp, snapdir, snaplen, err, errlen);
        building = 0;
        if (rc < 0) {
                if (have_m)
                        csm_free(m);
                int r = ctpl_remove_unused(tmp);
                if (r < 0)
                        fprintf(stderr, "cellvm: removing %s: %s\n", tmp, strerror(-r));
                return rc;
        }
        struct stat st;
        char mem[PATH_MAX + 8];
        snprintf(mem, sizeof(mem), "%s/%s", snapdir, m->memory);
        uint64_t used = stat(mem, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
        fprintf(stderr,
                "cellvm: template %s ready in %.1f s: device state %" PRIu64 " KiB, memory %" PRIu64
                " MiB allocated of %" PRIu64 " MiB\n",
                snapdir, (double)(mono_ns() - t0) / 1e9, m->state_size >> 10, used >> 20,
                m->memory_size >> 20);
        return 1;
}

/* --- restoring a clone ------------------------------------------------------ */

/* The snapshot's state file, open for reading (its path in `path`). */
static int open_state(const struct csm *m, const char *snapdir, char *path, size_t pathlen,
                      char *err, size_t errlen)
{
        snprintf(path, pathlen, "%s/%s", snapdir, m->state);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        return fd;
}

int csq_check_restorable(const struct csm *m, const char *snapdir, char *err, size_t errlen)
{
        int rc = csm_check_files(m, snapdir, err, errlen);
        if (rc < 0)
                return rc;
        char path[PATH_MAX + 8];
        int fd = open_state(m, snapdir, path, sizeof(path), err, errlen);
        if (fd < 0)
                return fd;
        unsigned char head[8] = {0};
        ssize_t n = pread(fd, head, sizeof(head), 0);
        int e = errno;
        close(fd);
        if (n < 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        /* QEMU_VM_FILE_MAGIC "QEVM", then the version, 3, as a be32. */
        static const unsigned char qevm3[8] = {'Q', 'E', 'V', 'M', 0, 0, 0, 3};
        if (n != sizeof(head) || memcmp(head, qevm3, sizeof(head)) != 0) {
                char shown[40] = "";
                for (ssize_t i = 0; i < n; i++)
                        snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "%02x",
                                 head[i]);
                snprintf(err, errlen,
                         "%s is not a QEMU migration stream (no QEVM v3 header: starts with %s%s): "
                         "a foreign or damaged snapshot",
                         path, n ? "0x" : "nothing", shown);
                return -EINVAL;
        }
        return 0;
}

/* The last line QEMU wrote to its stderr, for errors. */
static void qemu_says(const struct cvm *vm, char *out, size_t outlen)
{
        snprintf(out, outlen, "(no message)");
        int fd = open(vm->qemu_err, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        char buf[2048];
        struct stat stt;
        off_t at = fstat(fd, &stt) == 0 && stt.st_size > (off_t)sizeof(buf) - 1
                       ? stt.st_size - (off_t)sizeof(buf) + 1
                       : 0;
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, at);
        close(fd);
        if (n <= 0)
                return;
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        const char *last = strrchr(buf, '\n');
        last = last ? last + 1 : buf;
        size_t len = strlen(last);
        if (n > 0 && outlen) {
                len = len < outlen ? len : outlen - 1;
                memcpy(out, last, len);
                out[len] = '\0';
        }
}

/* `arg` with @DIR@ and @SNAPSHOT@ replaced by the paths (commas doubled). */
static int substitute(const char *arg, const char *dir, const char *snapdir, char *out,
                      size_t outlen)
{
        char d[PATH_MAX * 2], s[PATH_MAX * 2];
        if (cvm_opt_path(dir, d, sizeof(d)) < 0 || cvm_opt_path(snapdir, s, sizeof(s)) < 0)
                return -E2BIG;
        size_t k = 0;
        for (const char *p = arg; *p;) {
                const char *with = NULL;
                size_t skip = 0;
                if (strncmp(p, CTPL_DIR_PLACEHOLDER, strlen(CTPL_DIR_PLACEHOLDER)) == 0)
                        with = d, skip = strlen(CTPL_DIR_PLACEHOLDER);
                else if (strncmp(p, CTPL_SNAPSHOT_PLACEHOLDER, strlen(CTPL_SNAPSHOT_PLACEHOLDER)) ==
                         0)
                        with = s, skip = strlen(CTPL_SNAPSHOT_PLACEHOLDER);
                size_t n = with ? strlen(with) : 1;
                if (k + n >= outlen)
                        return -E2BIG;
                memcpy(out + k, with ? with : p, n);
                k += n;
                p += with ? skip : 1;
        }
        out[k] = '\0';
        return 0;
}

int csq_spawn(const struct csm *m, const char *snapdir, struct cvm *vm, int *state_fd,
              struct csq_stages *st, char *err, size_t errlen)
{
        static struct cvm_argv a; /* large */
        static char arg[3 * CVM_CMDLINE_MAX];
        *state_fd = -1;
        int rc = cvm_make_dir(vm, CVM_VMM_QEMU, err, errlen);
        if (rc < 0)
                return rc;
        vm->kvm = strcmp(m->accel, "kvm") == 0;
        memset(&a, 0, sizeof(a));
        if (m->arg.n == 0) {
                snprintf(err, errlen, "%s/%s has no arg lines: no VMM command line", snapdir,
                         CSM_FILE);
                return -EINVAL;
        }
        for (size_t i = 0; i < m->arg.n; i++) {
                if (substitute(m->arg.v[i], vm->dir, snapdir, arg, sizeof(arg)) < 0) {
                        snprintf(err, errlen, "%s/%s: an arg line is too long", snapdir, CSM_FILE);
                        return -E2BIG;
                }
                cvm_argv_add(&a, "%s", arg);
                vm->user_net = vm->user_net || strcmp(arg, CVM_USER_NETDEV) == 0;
        }
        cvm_argv_add(&a, "-incoming");
        cvm_argv_add(&a, "defer");
        if (a.overflow) {
                snprintf(err, errlen, "%s/%s: more than %d arguments", snapdir, CSM_FILE,
                         CVM_MAX_ARGS);
                return -E2BIG;
        }
        char path[PATH_MAX + 8];
        int fd = open_state(m, snapdir, path, sizeof(path), err, errlen);
        if (fd < 0)
                return fd;
        st->t0 = mono_ns();
        rc = cvm_spawn(vm, a.argv, fd, err, errlen);
        if (rc < 0) {
                close(fd);
                if (rc == -ECHILD) {
                        char says[512];
                        qemu_says(vm, says, sizeof(says));
                        size_t n = strlen(err);
                        snprintf(err + n, errlen - n, ": %s", says);
                }
                return rc;
        }
        *state_fd = fd;
        return 0;
}

static uint64_t stamp(const struct csq_stages *st)
{
        return mono_ns() - st->t0;
}

/* A stream connected to the clone's serial socket (QEMU listens a moment
 * after it creates the file: refusals are retried while it runs). */
static int connect_channel(struct cvm *vm, uint64_t deadline, char *err, size_t errlen)
{
        char addr[sizeof(vm->sock) + 8];
        snprintf(addr, sizeof(addr), "unix:%s", vm->sock);
        for (;;) {
                int fd = cvc_open_stream(addr, err, errlen);
                if (fd >= 0 || (fd != -ECONNREFUSED && fd != -ENOENT))
                        return fd;
                if (!cvm_alive(vm)) {
                        snprintf(err, errlen, "QEMU exited before its channel was connected");
                        return -ECHILD;
                }
                if (mono_ns() >= deadline)
                        return fd;
                sleep_ms(10);
        }
}

void csq_enc_set_time(struct cv_buf *b)
{
        cv_enc_map(b, 1);
        cv_enc_cstr(b, "realtime_ns");
        cv_enc_uint(b, (uint64_t)realtime_ns());
}

/* The same guest again (a resumed pause): this host's entropy and clock,
 * its generation and Python random generators left as they were (E2B's
 * resume leaves them too). */
static int refresh(struct cvc *c, int timeout_ms, char *err, size_t errlen)
{
        uint8_t entropy[ENTROPY_BYTES];
        if (getrandom(entropy, sizeof(entropy), 0) != (ssize_t)sizeof(entropy)) {
                int e = errno;
                snprintf(err, errlen, "getrandom: %s", strerror(e));
                return -e;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "seed");
        cv_enc_bytes(&b, entropy, sizeof(entropy));
        int rc = call(c, CV_MSG_ADD_ENTROPY, &b, timeout_ms, NULL);
        if (rc < 0) {
                snprintf(err, errlen, "ADD_ENTROPY: %s", cvc_errmsg(c));
                return rc;
        }
        cv_buf_init(&b);
        csq_enc_set_time(&b);
        rc = call(c, CV_MSG_SET_TIME, &b, timeout_ms, NULL);
        if (rc < 0)
                snprintf(err, errlen, "SET_TIME: %s", cvc_errmsg(c));
        return rc;
}

/* NEW_GENERATION: 64 bytes of this host's entropy, its clock (taken right
 * before sending) and a generation of its own (the snapshot's, HELLO says it,
 * + 1 + 32 random bits); an agent without it gets ADD_ENTROPY and SET_TIME. */
int csq_new_generation(struct cvc *c, int timeout_ms, char *err, size_t errlen)
{
        if (!csq_under_init(c)) {
                fprintf(stderr,
                        "cellvm: the agent is not under cellvm-init (a VMM stand-in or dev "
                        "mode): no NEW_GENERATION (its clock and entropy are this host's)\n");
                return 0;
        }
        uint64_t g0 = 0;
        if (cv_map_get_uint(cvc_hello(c), "generation", &g0) < 0 || g0 == 0)
                g0 = 1;
        uint8_t entropy[ENTROPY_BYTES];
        uint32_t r32;
        if (getrandom(entropy, sizeof(entropy), 0) != (ssize_t)sizeof(entropy) ||
            getrandom(&r32, sizeof(r32), 0) != (ssize_t)sizeof(r32)) {
                int e = errno;
                snprintf(err, errlen, "getrandom: %s", strerror(e));
                return -e;
        }
        uint64_t gen = g0 <= UINT64_MAX - 1 - r32 ? g0 + 1 + r32 : g0;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 3);
        cv_enc_cstr(&b, "generation");
        cv_enc_uint(&b, gen);
        cv_enc_cstr(&b, "entropy");
        cv_enc_bytes(&b, entropy, sizeof(entropy));
        cv_enc_cstr(&b, "realtime_ns");
        cv_enc_uint(&b, (uint64_t)realtime_ns());
        int rc = call(c, CV_MSG_NEW_GENERATION, &b, timeout_ms, NULL);
        if (rc == 0 || !(agent_said(c, rc, "unknown_type") || agent_said(c, rc, "unsupported"))) {
                if (rc < 0)
                        snprintf(err, errlen, "NEW_GENERATION: %s", cvc_errmsg(c));
                return rc;
        }
        /* An older agent: what it has. */
        if (refresh(c, timeout_ms, err, errlen) < 0)
                fprintf(stderr,
                        "cellvm: the restored guest has no NEW_GENERATION and refused "
                        "ADD_ENTROPY/SET_TIME (%s)\n",
                        cvc_errmsg(c));
        return 0;
}

int csq_refresh_resumed(struct cvc *c, int timeout_ms, char *err, size_t errlen)
{
        if (!csq_under_init(c)) {
                fprintf(stderr, "cellvm: the agent is not under cellvm-init (a VMM stand-in or dev "
                                "mode): no ADD_ENTROPY/SET_TIME (its clock is this host's)\n");
                return 0;
        }
        /* Paused between SNAPSHOT_PREPARE and NEW_GENERATION: user work waits
         * for a generation. */
        bool awaiting = false;
        if (cv_map_get_bool(cvc_hello(c), "awaiting_generation", &awaiting) == 0 && awaiting)
                return csq_new_generation(c, timeout_ms, err, errlen);
        return refresh(c, timeout_ms, err, errlen);
}

/* Loads the state and runs the guest; `fresh`: a clone (NEW_GENERATION),
 * else the same guest again (a resumed pause: csq_refresh_resumed). */
static int load(const struct csm *m, const char *snapdir, struct cvm *vm, int state_fd,
                struct csq_stages *st, bool fresh, struct cvc **c, bool *bad_snapshot, char *err,
                size_t errlen)
{
        uint64_t deadline = st->t0 + CSQ_RESTORE_TIMEOUT_MS * 1000000ull;
        char state[PATH_MAX + 8];
        snprintf(state, sizeof(state), "%s/%s", snapdir, m->state);
        *c = NULL;
        *bad_snapshot = false;
        /* Connected before the state is loaded: the template was saved with its
         * builder connected, so the restored port's "host connected" state
         * does not change and the agent reads the first HELLO at once (a
         * change would make it hang up and reopen the port). */
        int chan = connect_channel(vm, deadline, err, errlen);
        if (chan < 0) {
                close(state_fd);
                return chan;
        }
        static struct cqmp q; /* large */
        char args[64];
        snprintf(args, sizeof(args), "{\"uri\": \"fd:%d\"}", state_fd);
        int rc = cqmp_connect(&q, vm->qmp, left_ms(deadline), alive_cb, vm);
        if (rc == 0)
                rc = cqmp_execute(&q, "migrate-set-capabilities",
                                  m->memory[0] ? x_ignore_shared_on : x_ignore_shared_off, -1,
                                  left_ms(deadline), NULL);
        if (rc == 0)
                rc = cqmp_execute(&q, "migrate-incoming", args, -1, left_ms(deadline), NULL);
        if (rc == 0)
                rc = cqmp_wait_migration(&q, left_ms(deadline));
        if (rc == 0) {
                st->state_loaded = stamp(st);
                rc = cqmp_execute(&q, "cont", NULL, -1, left_ms(deadline), NULL);
                st->running = stamp(st);
        }
        close(state_fd);
        if (rc < 0) {
                char why[sizeof(q.err)], says[512];
                memcpy(why, q.err, sizeof(why));
                cqmp_close(&q);
                close(chan);
                wait_exit(vm, 1000); /* QEMU says why as it exits */
                qemu_says(vm, says, sizeof(says));
                snprintf(err, errlen, "%s: QEMU could not restore it: %s (%s)", state, says, why);
                *bad_snapshot = true;
                return rc;
        }
        cqmp_close(&q);
        struct cvc_connect_opts o = {.timeout_ms = left_ms(deadline),
                                     .hello_resend_ms = CVC_HELLO_RESEND_MS,
                                     .still_alive = alive_cb,
                                     .ud = vm};
        rc = cvc_connect_fd(chan, &o, c);
        if (rc < 0) {
                if (rc == -ETIMEDOUT)
                        snprintf(err, errlen, "the restored guest did not answer HELLO within %d s",
                                 CSQ_RESTORE_TIMEOUT_MS / 1000);
                else
                        snprintf(err, errlen,
                                 "the restored guest's channel closed during HELLO: %s",
                                 *c ? cvc_errmsg(*c) : strerror(-rc));
                *bad_snapshot = true;
                cvc_close(*c);
                *c = NULL;
                return rc;
        }
        st->handshake = stamp(st);
        rc = fresh ? csq_new_generation(*c, left_ms(deadline), err, errlen)
                   : csq_refresh_resumed(*c, left_ms(deadline), err, errlen);
        if (rc < 0) {
                cvc_close(*c);
                *c = NULL;
                return rc;
        }
        st->new_generation = stamp(st);
        return 0;
}

int csq_load(const struct csm *m, const char *snapdir, struct cvm *vm, int state_fd,
             struct csq_stages *st, struct cvc **c, bool *bad_snapshot, char *err, size_t errlen)
{
        return load(m, snapdir, vm, state_fd, st, true, c, bad_snapshot, err, errlen);
}

int csq_load_paused(const struct csm *m, const char *snapdir, struct cvm *vm, int state_fd,
                    struct csq_stages *st, struct cvc **c, bool *bad_snapshot, char *err,
                    size_t errlen)
{
        return load(m, snapdir, vm, state_fd, st, false, c, bad_snapshot, err, errlen);
}
