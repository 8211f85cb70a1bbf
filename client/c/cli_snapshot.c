/* The CLI's templates: see cli_snapshot.h and docs/SNAPSHOTS.md. */
#include "cli_snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_sandboxes.h"
#include "manifest.h"
#include "mono_clock.h"
#include "snapshot_hybrid.h"
#include "snapshot_qemu.h"
#include "template.h"

#define ERR_MAX 2048

/* A message into `err`, cut short if need be. */
static void say(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
}

int snap_env_mode(enum snap_mode *mode)
{
        static const char *const off[] = {"0", "off", "no", "false", "cold"};
        static const char *const on[] = {"", "1", "on", "yes", "true", "auto"};
        const char *env = getenv("CELLVM_SNAPSHOT");
        char v[16];
        size_t n = 0;
        if (env) { /* stripped and lower-cased, as clone.mode() reads it */
                env += strspn(env, " \t");
                n = strlen(env);
                while (n && (env[n - 1] == ' ' || env[n - 1] == '\t'))
                        n--;
        }
        *mode = SNAP_AUTO;
        if (!env || n == 0)
                return 0;
        if (n < sizeof(v)) {
                for (size_t i = 0; i < n; i++)
                        v[i] = (char)(env[i] >= 'A' && env[i] <= 'Z' ? env[i] - 'A' + 'a' : env[i]);
                v[n] = '\0';
                for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
                        if (strcmp(v, off[i]) == 0) {
                                *mode = SNAP_OFF;
                                return 0;
                        }
                for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
                        if (strcmp(v, on[i]) == 0)
                                return 0;
        }
        fprintf(stderr, "cellvm: $CELLVM_SNAPSHOT=%.40s: expected 0/off or 1/on\n", env);
        return -EINVAL;
}

/* The launch as a template sees it: QEMU's (snapshot_qemu.c) or Firecracker's
 * and Cloud Hypervisor's (snapshot_hybrid.c). */
static int launch_init(struct csq_launch *l, const struct cvm_opts *o, unsigned user_mb, char *err,
                       size_t errlen)
{
        return o->vmm == CVM_VMM_QEMU ? csq_launch_init(l, o, user_mb, err, errlen)
                                      : csh_launch_init(l, o, user_mb, err, errlen);
}

static int build(const struct csq_launch *l, struct cvm *vm, char *snapdir, size_t snaplen,
                 struct csm *m, char *err, size_t errlen)
{
        return l->opts.vmm == CVM_VMM_QEMU ? csq_build(l, vm, snapdir, snaplen, m, err, errlen)
                                           : csh_build(l, vm, snapdir, snaplen, m, err, errlen);
}

/* The template to restore in SNAP_AUTO: the current one if it fits, else
 * built now (under the build lock, looking again first: another process may
 * have built it meanwhile). */
static int resolve(const struct csq_launch *l, struct cvm *vm, char *snapdir, size_t snaplen,
                   struct csm *m, char *err, size_t errlen)
{
        char why[ERR_MAX];
        if (csq_usable(l, snapdir, snaplen, m, why, sizeof(why)) == 1)
                return 0;
        int lock;
        int rc = ctpl_lock_build(l->root, l->tdir, &lock, err, errlen);
        if (rc < 0)
                return rc;
        if (csq_usable(l, snapdir, snaplen, m, why, sizeof(why)) == 1) {
                close(lock);
                return 0;
        }
        if (why[0])
                fprintf(stderr, "cellvm: template %s is stale: %s: building it anew\n", l->tdir,
                        why);
        rc = build(l, vm, snapdir, snaplen, m, err, errlen);
        close(lock);
        return rc < 0 ? rc : 0;
}

/* `--snapshot DIR`: that template (a launch's directory, or one t-ID snapshot
 * directory), which must fit the launch. */
static int explicit_template(const struct csq_launch *l, const char *dir, char *snapdir,
                             size_t snaplen, struct csm *m, char *err, size_t errlen)
{
        char link[PATH_MAX];
        struct stat st;
        snprintf(link, sizeof(link), "%s/%s", dir, CTPL_CURRENT);
        if (lstat(link, &st) == 0) {
                int rc = ctpl_current(dir, snapdir, snaplen, err, errlen);
                if (rc <= 0) {
                        if (rc == 0)
                                say(err, errlen, "%s: no complete snapshot", dir);
                        return rc < 0 ? rc : -ENOENT;
                }
        } else if ((size_t)snprintf(snapdir, snaplen, "%s", dir) >= snaplen) {
                say(err, errlen, "%s: path too long", dir);
                return -ENAMETOOLONG;
        }
        if (stat(snapdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                say(err, errlen, "%s: no such snapshot directory", dir);
                return -ENOENT;
        }
        int rc = csm_init(m);
        if (rc < 0)
                return rc;
        if ((rc = csm_read(snapdir, m, err, errlen)) < 0)
                goto fail;
        if (strcmp(m->kind, "template") != 0) {
                say(err, errlen, "%s/%s: a %s snapshot, not a template", snapdir, CSM_FILE,
                    m->kind[0] ? m->kind : "untyped");
                rc = -EINVAL;
                goto fail;
        }
        if ((rc = csm_check_files(m, snapdir, err, errlen)) < 0)
                goto fail;
        char why[ERR_MAX];
        if (csm_differences(m, &l->want, why, sizeof(why)) > 0) {
                say(err, errlen, "%s/%s: this template does not fit this launch: %s", snapdir,
                    CSM_FILE, why);
                rc = -EINVAL;
                goto fail;
        }
        return 0;
fail:
        csm_free(m);
        return rc;
}

enum outcome { RESTORED, COLD, FATAL, KEY_IN_USE };

/* Restores the clone of `snapdir`; on failure nothing runs and `err` says why,
 * `*bad` whether the snapshot is at fault. */
static enum outcome restore(const struct snap_run *r, const char *snapdir, const struct csm *m,
                            struct sbx_rec *rec, struct cvm *vm, struct cvc **c,
                            struct csq_stages *st, bool *bad, char *err, size_t errlen)
{
        int lock, state_fd = -1;
        bool qemu = r->vm->vmm == CVM_VMM_QEMU;
        *bad = false;
        if (ctpl_use(snapdir, &lock, err, errlen) < 0)
                return COLD;
        /* Held until the VMM has read the state and mapped the memory. */
        if ((qemu ? csq_check_restorable(m, snapdir, err, errlen)
                  : csh_check_restorable(m, snapdir, err, errlen)) < 0) {
                close(lock);
                *bad = true;
                return COLD;
        }
        if (sbx_reserve(r->lifetime_s) < 0) {
                close(lock);
                return FATAL;
        }
        if ((qemu ? csq_spawn(m, snapdir, vm, &state_fd, st, err, errlen)
                  : csh_spawn(m, snapdir, vm, st, err, errlen)) < 0) {
                sbx_release();
                cvm_kill(vm);
                close(lock);
                return COLD;
        }
        if (sbx_record_as(rec, r->key, r->template_, vm, r->vm->image, r->vm->memory_mb,
                          r->vm->vcpus, CSQ_RESTORE_TIMEOUT_MS / 1000.0, r->lifetime_s) < 0 &&
            r->key) {
                /* Said on stderr; a key in use is another sandbox's. */
                if (state_fd >= 0)
                        close(state_fd);
                cvm_kill(vm);
                close(lock);
                return KEY_IN_USE;
        }
        int rc = qemu ? csq_load(m, snapdir, vm, state_fd, st, c, bad, err, errlen)
                      : csh_load(m, snapdir, vm, st, c, bad, err, errlen);
        close(lock);
        if (rc < 0) {
                cvm_kill(vm);
                sbx_forget(rec);
                return COLD;
        }
        sbx_start_clock(rec, *c, vm, r->lifetime_s);
        return RESTORED;
}

int snap_restore_vm(const struct snap_run *r, struct sbx_rec *rec, struct cvm *vm, struct cvc **c)
{
        static struct csq_launch l; /* large */
        char err[ERR_MAX] = "", snapdir[PATH_MAX];
        struct csm m;
        bool explicit = r->mode == SNAP_DIR;
        *c = NULL;
        int rc = launch_init(&l, r->vm, r->user_mb, err, sizeof(err));
        if (rc < 0 && !explicit && r->cold_why) {
                /* The launch itself has no template (a boot file, the VMM): the
                 * caller says so once the cold boot started, or only the cold
                 * boot's error when that fails for the same reason. */
                csq_launch_free(&l);
                snprintf(r->cold_why, r->cold_why_len, "%s", err);
                return 1;
        }
        if (rc == 0)
                rc = explicit ? explicit_template(&l, r->dir, snapdir, sizeof(snapdir), &m, err,
                                                  sizeof(err))
                              : resolve(&l, vm, snapdir, sizeof(snapdir), &m, err, sizeof(err));
        csq_launch_free(&l);
        if (rc < 0) {
                if (explicit) {
                        fprintf(stderr, "cellvm: snapshot %s: %s\n", r->dir, err);
                        return rc;
                }
                fprintf(stderr, "cellvm: no usable template (%s): booting cold\n", err);
                return 1;
        }
        struct csq_stages st = {0};
        bool bad;
        double t0 = mono_s();
        enum outcome o = restore(r, snapdir, &m, rec, vm, c, &st, &bad, err, sizeof(err));
        csm_free(&m);
        if (o == FATAL)
                return -EAGAIN;
        if (o == KEY_IN_USE)
                return -EEXIST;
        if (o == COLD) {
                if (explicit) {
                        fprintf(stderr, "cellvm: snapshot %s: %s\n", r->dir, err);
                        return -EINVAL;
                }
                int removed = bad ? ctpl_remove_unused(snapdir) : 0;
                fprintf(stderr, "cellvm: the template %s did not restore (%s)%s: booting cold\n",
                        snapdir, err, removed == 1 ? "; removed, the next run builds it anew" : "");
                return 1;
        }
        if (r->report) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                r->report->restored = true;
                r->report->st = st;
                r->report->deadline =
                    (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - st.t0;
                snprintf(r->report->snapdir, sizeof(r->report->snapdir), "%s", snapdir);
        }
        if (r->verbose)
                fprintf(stderr,
                        "[cellvm: VM restored in %.2f s from %s (%s, %s pid %d, over %s; state "
                        "loaded %.0f ms, running %.0f ms, HELLO %.0f ms, NEW_GENERATION %.0f ms "
                        "after the VMM started)]\n",
                        mono_s() - t0, snapdir, vm->kvm ? "KVM" : "TCG", cvm_vmm_name(vm->vmm),
                        (int)vm->pid, vm->vmm == CVM_VMM_QEMU ? "the serial port" : "hybrid vsock",
                        (double)st.state_loaded / 1e6, (double)st.running / 1e6,
                        (double)st.handshake / 1e6, (double)st.new_generation / 1e6);
        return 0;
}

/* --- cellvm snapshot ... ---------------------------------------------------- */

int snap_cmd_create(const struct cvm_opts *o, unsigned user_mb, bool force, const char *force_hint,
                    struct cvm *vm)
{
        static struct csq_launch l;
        char err[ERR_MAX] = "", snapdir[PATH_MAX], why[ERR_MAX] = "";
        struct csm m;
        if (launch_init(&l, o, user_mb, err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm: %s\n", err);
                csq_launch_free(&l);
                return 1;
        }
        int lock = -1, rc = 0;
        /* Looked at again under the lock: another process may have built it meanwhile. */
        for (int pass = 0; pass < 2 && !force && rc == 0; pass++) {
                if (csq_usable(&l, snapdir, sizeof(snapdir), &m, why, sizeof(why)) == 1) {
                        printf("%s: up to date%s\n", snapdir, force_hint);
                        csm_free(&m);
                        csq_launch_free(&l);
                        if (lock >= 0)
                                close(lock);
                        return 0;
                }
                if (pass == 0)
                        rc = ctpl_lock_build(l.root, l.tdir, &lock, err, sizeof(err));
        }
        if (rc == 0 && force)
                rc = ctpl_lock_build(l.root, l.tdir, &lock, err, sizeof(err));
        if (rc == 0) {
                if (why[0] && !force)
                        fprintf(stderr, "cellvm: template %s is stale: %s: building it anew\n",
                                l.tdir, why);
                rc = build(&l, vm, snapdir, sizeof(snapdir), &m, err, sizeof(err));
                close(lock);
        }
        csq_launch_free(&l);
        if (rc < 0) {
                fprintf(stderr, "cellvm: %s\n", err);
                return 1;
        }
        printf("%s: built in %.1f s, state %" PRIu64 " KiB, memory %" PRIu64 " MiB\n", snapdir,
               (double)m.build_ms / 1000.0, m.state_size >> 10, m.memory_size >> 20);
        csm_free(&m);
        return 0;
}

int snap_cmd_check(const struct cvm_opts *o, unsigned user_mb)
{
        static struct csq_launch l;
        char err[ERR_MAX] = "", snapdir[PATH_MAX], why[ERR_MAX];
        struct csm m;
        if (launch_init(&l, o, user_mb, err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm: %s\n", err);
                csq_launch_free(&l);
                return 1;
        }
        int rc = csq_usable(&l, snapdir, sizeof(snapdir), &m, why, sizeof(why));
        if (rc == 1) {
                printf("%s: fits this launch\n", snapdir);
                csm_free(&m);
        } else {
                printf("%s: %s\n", l.tdir,
                       why[0] ? why : "no template built yet (create builds one)");
        }
        csq_launch_free(&l);
        return rc == 1 ? 0 : 1;
}

int snap_cmd_manifest(const struct cvm_opts *o, unsigned user_mb)
{
        static struct csq_launch l;
        char err[ERR_MAX] = "", *text;
        size_t len;
        int rc = launch_init(&l, o, user_mb, err, sizeof(err));
        if (rc == 0 && (rc = csm_format(&l.want, &text, &len)) < 0)
                snprintf(err, sizeof(err), "%s", strerror(-rc));
        if (rc < 0) {
                fprintf(stderr, "cellvm: %s\n", err);
                csq_launch_free(&l);
                return 1;
        }
        printf("# %s\n", l.tdir);
        fwrite(text, 1, len, stdout);
        free(text);
        csq_launch_free(&l);
        return 0;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The template names in `root` (malloc'd, sorted); their number or -errno. */
static int list_names(const char *root, char ***out)
{
        *out = NULL;
        DIR *d = opendir(root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        char **names = NULL;
        int n = 0, cap = 0, rc = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char p[PATH_MAX];
                struct stat st;
                snprintf(p, sizeof(p), "%s/%s", root, de->d_name);
                if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 16;
                        char **nn = realloc(names, (size_t)cap * sizeof(*nn));
                        if (!nn) {
                                rc = -ENOMEM;
                                break;
                        }
                        names = nn;
                }
                if (!(names[n] = strdup(de->d_name))) {
                        rc = -ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);
        if (rc < 0) {
                for (int i = 0; i < n; i++)
                        free(names[i]);
                free(names);
                return rc;
        }
        if (n)
                qsort(names, (size_t)n, sizeof(*names), cmp_names);
        *out = names;
        return n;
}

static void free_names(char **names, int n)
{
        for (int i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

int snap_cmd_list(void)
{
        char root[PATH_MAX];
        if (ctpl_root(root, sizeof(root)) < 0) {
                fputs("cellvm: no template root (set $CELLVM_TEMPLATE_DIR)\n", stderr);
                return 1;
        }
        char **names;
        int n = list_names(root, &names);
        if (n < 0) {
                fprintf(stderr, "cellvm: %s: %s\n", root, strerror(-n));
                return 1;
        }
        if (n == 0)
                printf("no templates in %s\n", root);
        for (int i = 0; i < n; i++) {
                char tdir[PATH_MAX], cur[PATH_MAX], err[ERR_MAX];
                int rc = -ENAMETOOLONG;
                if ((size_t)snprintf(tdir, sizeof(tdir), "%s/%s", root, names[i]) < sizeof(tdir))
                        rc = ctpl_current(tdir, cur, sizeof(cur), err, sizeof(err));
                else
                        say(err, sizeof(err), "path too long");
                struct csm m;
                if (rc == 0) {
                        printf("%s  (no complete snapshot)\n", names[i]);
                        continue;
                }
                if (rc > 0 && (rc = csm_init(&m)) == 0 &&
                    (rc = csm_read(cur, &m, err, sizeof(err))) < 0)
                        csm_free(&m);
                if (rc < 0) {
                        printf("%s  damaged: %s\n", names[i], err);
                        continue;
                }
                char mem[PATH_MAX + 8];
                struct stat st;
                snprintf(mem, sizeof(mem), "%s/%s", cur, m.memory);
                uint64_t used =
                    m.memory[0] && stat(mem, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
                const char *base = strrchr(cur, '/') ? strrchr(cur, '/') + 1 : cur;
                printf("%s  %s %" PRIu64 " MiB %" PRIu64 " vCPU  %s  state %" PRIu64
                       " KiB, memory %" PRIu64 " MiB used  %s\n",
                       names[i], m.vmm, m.memory_mb, m.vcpus, m.image, m.state_size >> 10,
                       used >> 20, base);
                csm_free(&m);
        }
        free_names(names, n);
        return 0;
}

/* Removes one template directory unless a restore holds one of its snapshots. */
static int remove_template(const char *root, const char *name)
{
        char tdir[PATH_MAX], err[ERR_MAX];
        struct stat st;
        if (strchr(name, '/') || name[0] == '.' ||
            (size_t)snprintf(tdir, sizeof(tdir), "%s/%s", root, name) >= sizeof(tdir) ||
            lstat(tdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "cellvm: %s: no such template in %s\n", name, root);
                return 1;
        }
        int lock;
        if (ctpl_lock_build(root, tdir, &lock, err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm: %s\n", err);
                return 1;
        }
        DIR *d = opendir(tdir);
        char busy[1024] = "";
        struct dirent *de;
        while (d && (de = readdir(d))) {
                char p[PATH_MAX];
                if (strncmp(de->d_name, "t-", 2) != 0)
                        continue;
                if ((size_t)snprintf(p, sizeof(p), "%s/%s", tdir, de->d_name) >= sizeof(p))
                        continue;
                if (ctpl_remove_unused(p) != 1 && lstat(p, &st) == 0)
                        snprintf(busy + strlen(busy), sizeof(busy) - strlen(busy), "%s%s",
                                 busy[0] ? ", " : "", de->d_name);
        }
        if (d)
                closedir(d);
        close(lock);
        if (busy[0]) {
                fprintf(stderr, "cellvm: %s: %s in use by a restore: left\n", name, busy);
                return 1;
        }
        int rc = ctpl_rmtree(tdir);
        if (rc < 0) {
                fprintf(stderr, "cellvm: removing %s: %s\n", tdir, strerror(-rc));
                return 1;
        }
        printf("%s: removed\n", name);
        return 0;
}

int snap_cmd_remove(int argc, char **argv)
{
        char root[PATH_MAX];
        if (ctpl_root(root, sizeof(root)) < 0) {
                fputs("cellvm: no template root (set $CELLVM_TEMPLATE_DIR)\n", stderr);
                return 1;
        }
        bool all = argc == 1 && strcmp(argv[0], "--all") == 0;
        if (argc == 0 || (!all && argv[0][0] == '-')) {
                fputs("cellvm: nothing to remove (give NAME... or --all)\n", stderr);
                return 2;
        }
        char **names = argv;
        int n = argc;
        if (all && (n = list_names(root, &names)) < 0) {
                fprintf(stderr, "cellvm: %s: %s\n", root, strerror(-n));
                return 1;
        }
        int status = 0;
        for (int i = 0; i < n; i++)
                status |= remove_template(root, names[i]);
        if (all)
                free_names(names, n);
        return status;
}
