/* Pausing a QEMU sandbox into the paused store, and checking any record (see pause.h). */
#include "pause.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mono_clock.h"
#include "paused.h"
#include "qmp.h"
#include "snapshot_hybrid.h"
#include "snapshot_qemu.h"
#include "template.h"
#include "vmm.h"

#define CMDLINE_MAX (64 * 1024) /* a QEMU argv is ~4 KiB */
#define QUIT_WAIT_MS 10000

bool cpause_is_key(const char *key)
{
        size_t n = strlen(key);
        if (n < 1 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') ||
                      key[i] == '-'))
                        return false;
        return true;
}

int cpause_record_dir(const char *root, const char *key, char *out, size_t outlen)
{
        if (!cpause_is_key(key))
                return -EINVAL;
        int n = snprintf(out, outlen, "%s/%s", root, key);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

const char *cpause_key_of(const struct csm *m, const char *dir)
{
        if (cpause_is_key(m->registry_key))
                return m->registry_key;
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        return cpause_is_key(base) ? base : NULL;
}

/* --- the VMM's argv, as a record keeps it -------------------------------- */

struct argv_buf {
        char text[CMDLINE_MAX + 1];
        char *v[CVM_MAX_ARGS * 2];
        size_t n;
};

/* /proc/PID/cmdline split into `a`. 0 or a negative errno. */
static int read_argv(pid_t pid, struct argv_buf *a, char *err, size_t errlen)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        size_t len = 0;
        for (;;) {
                ssize_t r = read(fd, a->text + len, CMDLINE_MAX - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        int e = errno;
                        close(fd);
                        snprintf(err, errlen, "%s: %s", path, strerror(e));
                        return -e;
                }
                if (r == 0)
                        break;
                len += (size_t)r;
                if (len == CMDLINE_MAX) {
                        close(fd);
                        snprintf(err, errlen, "%s: longer than %d bytes", path, CMDLINE_MAX);
                        return -E2BIG;
                }
        }
        close(fd);
        a->text[len] = '\0';
        a->n = 0;
        for (size_t i = 0; i < len; i += strlen(a->text + i) + 1) {
                if (a->n == sizeof(a->v) / sizeof(a->v[0])) {
                        snprintf(err, errlen, "%s: too many arguments", path);
                        return -E2BIG;
                }
                a->v[a->n++] = a->text + i;
        }
        if (a->n == 0) {
                snprintf(err, errlen, "%s is empty (the VMM exited)", path);
                return -ESRCH;
        }
        return 0;
}

/* The value of the last `opt` in the argv, or NULL. */
static const char *opt_value(const struct argv_buf *a, const char *opt)
{
        const char *v = NULL;
        for (size_t i = 1; i + 1 < a->n; i++)
                if (strcmp(a->v[i], opt) == 0)
                        v = a->v[i + 1];
        return v;
}

/* The value of `name=` in a QEMU option list (commas doubled in values),
 * undoubled into `out`; false when absent or too long. */
static bool list_value(const char *list, const char *name, char *out, size_t outlen)
{
        size_t nl = strlen(name);
        for (const char *p = list; *p;) {
                bool hit = strncmp(p, name, nl) == 0 && p[nl] == '=';
                const char *q = hit ? p + nl + 1 : p;
                size_t k = 0;
                while (*q && !(q[0] == ',' && q[1] != ',')) {
                        if (q[0] == ',' && q[1] == ',')
                                q++;
                        if (hit && k + 1 < outlen)
                                out[k] = *q;
                        k++;
                        q++;
                }
                if (hit) {
                        if (k >= outlen)
                                return false;
                        out[k] = '\0';
                        return true;
                }
                p = *q ? q + 1 : q;
        }
        return false;
}

/* Appends `arg` with every `from` replaced by `to` as an `arg` line. */
static int add_replaced(struct csm *m, const char *arg, const char *from, const char *to)
{
        char out[3 * CVM_CMDLINE_MAX];
        size_t k = 0, fl = strlen(from), tl = strlen(to);
        for (const char *p = arg; *p;) {
                bool hit = fl && strncmp(p, from, fl) == 0;
                size_t n = hit ? tl : 1;
                if (k + n >= sizeof(out))
                        return -E2BIG;
                memcpy(out + k, hit ? to : p, n);
                k += n;
                p += hit ? fl : 1;
        }
        out[k] = '\0';
        return csm_set(m, "arg", out);
}

/* The argv that resumes the VM from a stream holding its RAM (pause.py's
 * paused_args): its paths as @DIR@, no -incoming, the RAM an anonymous
 * backend of the same id and size. */
static int add_args(struct csm *m, const struct argv_buf *a, const char *dir, char *err,
                    size_t errlen)
{
        char d[PATH_MAX * 2];
        if (cvm_opt_path(dir, d, sizeof(d)) < 0)
                return -E2BIG;
        int rc = 0;
        for (size_t i = 0; i < a->n && rc == 0; i++) {
                if (strcmp(a->v[i], "-incoming") == 0) {
                        i++;
                        continue;
                }
                const char *file_backend = "memory-backend-file,";
                if (strcmp(a->v[i], "-object") == 0 && i + 1 < a->n &&
                    strncmp(a->v[i + 1], file_backend, strlen(file_backend)) == 0) {
                        char id[64], size[32], ram[128];
                        const char *opts = a->v[i + 1] + strlen(file_backend);
                        if (!list_value(opts, "id", id, sizeof(id)) ||
                            !list_value(opts, "size", size, sizeof(size))) {
                                snprintf(err, errlen, "the VMM's RAM backend has no id or size: %s",
                                         a->v[i + 1]);
                                return -EINVAL;
                        }
                        snprintf(ram, sizeof(ram), "memory-backend-ram,id=%s,size=%s", id, size);
                        rc = csm_set(m, "arg", "-object");
                        if (rc == 0)
                                rc = csm_set(m, "arg", ram);
                        i++;
                        continue;
                }
                rc = add_replaced(m, a->v[i], d, CTPL_DIR_PLACEHOLDER);
        }
        if (rc < 0)
                snprintf(err, errlen, "the VMM's argv does not fit a manifest: %s", strerror(-rc));
        return rc;
}

/* The boot files' `file` lines, from the argv (as pause.py's _ForeignQemu). */
static int add_files(struct csm *m, const struct argv_buf *a, char *err, size_t errlen)
{
        const char *kernel = opt_value(a, "-kernel"), *initrd = opt_value(a, "-initrd");
        const char *drive = opt_value(a, "-drive");
        char rootfs[PATH_MAX];
        if (!kernel || !drive || !list_value(drive, "file", rootfs, sizeof(rootfs))) {
                snprintf(err, errlen, "the VMM's argv has no -kernel or -drive file=");
                return -EINVAL;
        }
        int rc = csm_add_file(m, "kernel", kernel, err, errlen);
        if (rc == 0 && initrd)
                rc = csm_add_file(m, "initramfs", initrd, err, errlen);
        if (rc == 0)
                rc = csm_add_file(m, "rootfs", rootfs, err, errlen);
        return rc;
}

/* The record's manifest, but for the state's size and the times. */
static int describe(struct csm *m, const struct cpause_src *src, const struct argv_buf *a,
                    char *err, size_t errlen)
{
        const struct creg_entry *e = src->e;
        const char *key = src->fork_key ? src->fork_key : e->key;
        char version[512];
        int rc = csq_vmm_version(a->v[0], version, sizeof(version), err, errlen);
        if (rc < 0)
                return rc;
        const char *append = opt_value(a, "-append");
        const char *const strs[][2] = {
            {"kind", "paused"},
            {"vmm", "qemu"},
            {"vmm_version", version},
            {"vmm_binary", a->v[0]},
            {"accel", e->accel},
            {"image", e->image},
            {"cmdline", append ? append : ""},
            {"state", "state"},
            {"instance_dir", e->dir},
            {"sandbox_id", key},
            {"registry_key", key},
            {"template", src->template_},
            {"metadata", src->metadata},
            {"envs", src->envs},
            {"fork_of", src->fork_key ? e->key : ""},
            /* A fork has the default lifecycle; a pause keeps the sandbox's. */
            {"on_timeout", !src->fork_key && creg_pauses_at_timeout(e) ? "pause" : ""},
        };
        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && rc == 0; i++)
                rc = csm_set(m, strs[i][0], strs[i][1]);
        if (rc == 0)
                rc = csm_set_u64(m, "memory_mb", e->memory_mb);
        if (rc == 0)
                rc = csm_set_u64(m, "vcpus", e->vcpus);
        if (rc == 0)
                rc = csm_set_u64(m, "started_ms", (uint64_t)e->started_ms);
        if (rc < 0) {
                snprintf(err, errlen, "the manifest: %s", strerror(-rc));
                return rc;
        }
        rc = add_files(m, a, err, errlen);
        if (rc == 0)
                rc = add_args(m, a, e->dir, err, errlen);
        return rc;
}

/* --- pause ---------------------------------------------------------------- */

static int entry_alive(void *ud)
{
        const struct creg_entry *e = ud;
        return e->pid > 0 && creg_proc_start(e->pid) == e->pid_start;
}

int cpause_new_tmp(const char *root, const char *final, char *tmp, size_t tmplen, char *err,
                   size_t errlen)
{
        int n = snprintf(tmp, tmplen, "%s.tmp", final);
        if (n < 0 || (size_t)n >= tmplen)
                return -ENAMETOOLONG;
        int lock = cpaused_lock(root);
        if (lock < 0) {
                snprintf(err, errlen, "locking %s/lock: %s", root, strerror(-lock));
                return lock;
        }
        struct stat st;
        int rc = 0;
        if (lstat(final, &st) == 0) {
                snprintf(err, errlen, "%s exists: the sandbox is paused already", final);
                rc = -EEXIST;
        } else if ((rc = ctpl_rmtree(tmp)) < 0 && rc != -ENOENT) {
                snprintf(err, errlen, "removing %s: %s", tmp, strerror(-rc));
        } else if (mkdir(tmp, 0700) < 0) {
                rc = -errno;
                snprintf(err, errlen, "mkdir %s: %s", tmp, strerror(errno));
        } else {
                rc = 0;
        }
        close(lock);
        return rc;
}

int cpause_publish(const char *root, const char *tmp, const char *final, char *err, size_t errlen)
{
        int lock = cpaused_lock(root);
        if (lock < 0) {
                snprintf(err, errlen, "locking %s/lock: %s", root, strerror(-lock));
                return lock;
        }
        int rc = rename(tmp, final) < 0 ? -errno : 0;
        if (rc < 0)
                snprintf(err, errlen, "rename %s to %s: %s", tmp, final, strerror(-rc));
        close(lock);
        return rc;
}

int cpause_save(const char *root, const struct cpause_src *src, char *recdir, size_t reclen,
                char *err, size_t errlen)
{
        const struct creg_entry *e = src->e;
        int64_t t0 = mono_ms();
        if (strcmp(e->vmm, "qemu") != 0 && src->fork_key) {
                snprintf(err, errlen, "only a QEMU sandbox can be forked (this one runs under %s)",
                         e->vmm);
                return -EOPNOTSUPP;
        }
        if (strcmp(e->vmm, "qemu") != 0)
                return cpause_save_hybrid(root, src, recdir, reclen, err, errlen);
        char qmp[sizeof(e->dir) + 16];
        snprintf(qmp, sizeof(qmp), "%s/qmp.sock", e->dir);
        if (access(qmp, F_OK) < 0) {
                snprintf(err, errlen,
                         "its VMM has no QMP socket (a cold boot, or started by an older cellvm): "
                         "only a sandbox restored from a template can be paused");
                return -EOPNOTSUPP;
        }
        int rc = ctpl_private_dir(root, err, errlen);
        if (rc < 0)
                return rc;
        char tmp[PATH_MAX + 8];
        const char *key = src->fork_key ? src->fork_key : e->key;
        if ((rc = cpause_record_dir(root, key, recdir, reclen)) < 0) {
                snprintf(err, errlen, "the paused store's path for %s: %s", key, strerror(-rc));
                return rc;
        }
        if ((rc = cpause_new_tmp(root, recdir, tmp, sizeof(tmp), err, errlen)) < 0)
                return rc;
        static struct argv_buf a; /* large; pauses are one at a time (the caller's lock) */
        struct csm m;
        if (csm_init(&m) < 0) {
                (void)ctpl_rmtree(tmp);
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        if (!entry_alive((void *)e)) {
                snprintf(err, errlen, "its VMM (pid %d) is gone", (int)e->pid);
                rc = -ESRCH;
        } else if ((rc = read_argv(e->pid, &a, err, errlen)) == 0) {
                rc = describe(&m, src, &a, err, errlen);
        }
        static struct cqmp q; /* large */
        q.fd = -1;
        char state[PATH_MAX + 16];
        snprintf(state, sizeof(state), "%s/state", tmp);
        uint64_t size = 0;
        if (rc == 0) {
                rc = csq_save_state(qmp, entry_alive, (void *)e, state, true, &size, &q, err,
                                    errlen);
                if (rc < 0 && q.fd >= 0)
                        (void)cqmp_execute(&q, "cont", NULL, -1, 10000, NULL); /* runs on */
        }
        if (rc == 0) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                uint64_t created = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
                rc = csm_set_u64(&m, "state_size", size);
                if (rc == 0)
                        rc = csm_set_u64(&m, "created_ms", created);
                if (rc == 0)
                        rc = csm_set_u64(&m, "build_ms", (uint64_t)(mono_ms() - t0));
                if (rc == 0)
                        rc = csm_write(tmp, &m, err, errlen);
                else
                        snprintf(err, errlen, "the manifest: %s", strerror(-rc));
                if (rc == 0)
                        rc = cpause_publish(root, tmp, recdir, err, errlen);
                if (rc < 0)
                        (void)cqmp_execute(&q, "cont", NULL, -1, 10000, NULL);
        }
        csm_free(&m);
        if (rc < 0) {
                cqmp_close(&q);
                (void)ctpl_rmtree(tmp);
                return rc;
        }
        if (src->fork_key) {
                /* The source runs on: `cont` takes its disks back from the finished
                 * migration and starts its vCPUs. */
                rc = cqmp_execute(&q, "cont", NULL, -1, 10000, NULL);
                if (rc < 0) {
                        snprintf(err, errlen, "the sandbox was saved but did not run on: %s",
                                 q.err);
                        (void)ctpl_rmtree(recdir);
                }
                cqmp_close(&q);
                return rc;
        }
        /* QEMU closes the connection as it goes: no answer is no error here. */
        (void)cqmp_execute(&q, "quit", NULL, -1, QUIT_WAIT_MS, NULL);
        cqmp_close(&q);
        return 0;
}

/* File `from` copied to new file `to` (0600): 0 or a negative errno. */
static int copy_file(const char *from, const char *to)
{
        int in = open(from, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return -errno;
        int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        int rc = out < 0 ? -errno : 0;
        while (rc == 0) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
                if (n < 0 && errno != EINTR)
                        rc = -errno;
                else if (n == 0)
                        break;
        }
        if (out >= 0 && close(out) < 0 && rc == 0)
                rc = -errno;
        close(in);
        return rc;
}

int cpause_copy(const char *root, const char *src_dir, const char *key,
                const struct cpause_copy_manifest *set, char *recdir, size_t reclen, char *err,
                size_t errlen)
{
        static const struct cpause_copy_manifest none;
        if (!set)
                set = &none;
        char tmp[PATH_MAX + 8], from[PATH_MAX + 16], to[PATH_MAX + 32];
        int rc = cpause_record_dir(root, key, recdir, reclen);
        if (rc < 0) {
                snprintf(err, errlen, "the paused store's path for %s: %s", key, strerror(-rc));
                return rc;
        }
        struct csm m;
        if (csm_init(&m) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        if ((rc = csm_read(src_dir, &m, err, errlen)) < 0) {
                csm_free(&m);
                return rc;
        }
        if ((rc = cpause_new_tmp(root, recdir, tmp, sizeof(tmp), err, errlen)) < 0) {
                csm_free(&m);
                return rc;
        }
        snprintf(from, sizeof(from), "%s/%s", src_dir, m.state);
        snprintf(to, sizeof(to), "%s/%s", tmp, m.state);
        /* One state on disk for every fork: a restore only reads it. */
        if (strchr(m.state, '/')) {
                rc = -EINVAL;
                snprintf(err, errlen, "state %s: not a file of the record", m.state);
        } else if (link(from, to) < 0) {
                rc = errno == EXDEV ? copy_file(from, to) : -errno;
                if (rc < 0)
                        snprintf(err, errlen, "linking %s to %s: %s", from, to, strerror(-rc));
        }
        if (rc == 0 && ((rc = csm_set(&m, "sandbox_id", key)) < 0 ||
                        (rc = csm_set(&m, "registry_key", key)) < 0 ||
                        (set->metadata && (rc = csm_set(&m, "metadata", set->metadata)) < 0) ||
                        (set->envs && (rc = csm_set(&m, "envs", set->envs)) < 0) ||
                        (set->on_timeout && (rc = csm_set(&m, "on_timeout", set->on_timeout)) < 0)))
                snprintf(err, errlen, "the manifest: %s", strerror(-rc));
        if (rc == 0)
                rc = csm_write(tmp, &m, err, errlen);
        if (rc == 0)
                rc = cpause_publish(root, tmp, recdir, err, errlen);
        csm_free(&m);
        if (rc < 0)
                (void)ctpl_rmtree(tmp);
        return rc;
}

/* --- resume checks -------------------------------------------------------- */

int cpause_check(const struct csm *m, const char *dir, char *err, size_t errlen)
{
        if (strcmp(m->kind, "paused") != 0) {
                snprintf(err, errlen, "%s/%s: not a paused sandbox (kind %s)", dir, CSM_FILE,
                         m->kind);
                return -EINVAL;
        }
        if (m->filesystem[0])
                return cpause_check_fs(m, dir, err, errlen);
        bool qemu = strcmp(m->vmm, "qemu") == 0;
        /* Firecracker's and Cloud Hypervisor's: snapshot_hybrid.c's files. */
        int rc = qemu ? csq_check_restorable(m, dir, err, errlen)
                      : csh_check_restorable(m, dir, err, errlen);
        if (rc < 0)
                return rc;
        if (!qemu && !m->vmm_binary[0]) {
                snprintf(err, errlen, "%s/%s names no vmm_binary", dir, CSM_FILE);
                return -EINVAL;
        }
        char version[512];
        rc = csq_vmm_version(m->vmm_binary[0] ? m->vmm_binary : CVM_QEMU_DEFAULT, version,
                             sizeof(version), err, errlen);
        if (rc < 0)
                return rc;
        if (strcmp(version, m->vmm_version) != 0) {
                snprintf(err, errlen, "%s/%s: paused under '%s', the VMM is now '%s'", dir,
                         CSM_FILE, m->vmm_version, version);
                return -ESTALE;
        }
        struct csm now;
        if (csm_init(&now) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->file.n && rc == 0; i++) {
                /* "<role> <size> <mtime_ns> <path>": the path may hold blanks. */
                const char *line = m->file.v[i];
                char role[32];
                const char *sp = strchr(line, ' ');
                const char *path = sp ? strchr(sp + 1, ' ') : NULL;
                path = path ? strchr(path + 1, ' ') : NULL;
                if (!sp || !path || (size_t)(sp - line) >= sizeof(role)) {
                        snprintf(err, errlen, "%s/%s: a malformed file line", dir, CSM_FILE);
                        rc = -EINVAL;
                        break;
                }
                memcpy(role, line, (size_t)(sp - line));
                role[sp - line] = '\0';
                char why[256];
                size_t before = now.file.n;
                bool same = csm_add_file(&now, role, path + 1, why, sizeof(why)) == 0 &&
                            now.file.n == before + 1 && strcmp(now.file.v[before], line) == 0;
                if (!same) {
                        snprintf(err, errlen,
                                 "sandbox %s was paused with the %s '%s' (size mtime_ns path); it "
                                 "is now %s: the image changed, so the paused guest cannot run on "
                                 "it",
                                 m->sandbox_id, role, sp + 1,
                                 now.file.n > before ? now.file.v[before] + strlen(role) + 1
                                                     : "missing");
                        rc = -ESTALE;
                }
        }
        csm_free(&now);
        return rc;
}
