/* `cellvm pause`, `cellvm resume`, and the resume cellvm serve shares (cli_pause.h). */
#include "cli_pause.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli_help.h"
#include "cli_snapshot.h"
#include "egress_keeper.h"
#include "fs_snapshot.h"
#include "keeper.h"
#include "pass_fd.h"
#include "pause.h"
#include "paused.h"
#include "snapshot_hybrid.h"
#include "snapshot_qemu.h"

int sbx_paused_find(const char *ident, char *root, size_t rootlen, char *dir, size_t dirlen)
{
        int rc = cpaused_root(root, rootlen);
        if (rc < 0)
                return rc;
        struct stat st;
        /* Its key names its directory; a record written when ids were
         * addresses is found by the id its manifest names. */
        if (cpause_record_dir(root, ident, dir, dirlen) == 0 && lstat(dir, &st) == 0 &&
            S_ISDIR(st.st_mode))
                return 0;
        static struct cpaused all[CPAUSED_MAX];
        static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&all_lock);
        int n = cpaused_list(root, all, CPAUSED_MAX, stderr);
        rc = n < 0 ? n : -ENOENT;
        for (int i = 0; i < n && rc == -ENOENT; i++)
                if (strcmp(all[i].sandbox_id, ident) == 0 || strcmp(all[i].key, ident) == 0)
                        rc = snprintf(dir, dirlen, "%s", all[i].dir) < (int)dirlen ? 0
                                                                                   : -ENAMETOOLONG;
        pthread_mutex_unlock(&all_lock);
        return rc;
}

void sbx_paused_drop(const char *root, const char *dir, const char *key)
{
        struct cpaused p;
        snprintf(p.dir, sizeof(p.dir), "%s", dir);
        int removed = cpaused_remove(root, &p);
        if (removed < 0)
                fprintf(stderr, "cellvm: sandbox %s resumed, but its record %s stays: %s\n", key,
                        dir, strerror(-removed));
}

/* A filesystem-only record's resume (pause.h): a fresh clone of the template
 * of its image and size under `key`, its files put back (fs_snapshot.h). */
static int resume_files(const char *dir, const struct csm *m, const char *key, double timeout_s,
                        struct sbx_rec *rec, struct cvm *vm, struct cvc **c, char *err,
                        size_t errlen)
{
        struct cvm_opts o = {
            .image = m->image, .memory_mb = (unsigned)m->memory_mb, .vcpus = (unsigned)m->vcpus};
        struct snap_run r = {.vm = &o,
                             .user_mb = cvm_user_memory_mb(o.memory_mb),
                             .lifetime_s = timeout_s,
                             .mode = SNAP_AUTO,
                             .key = key,
                             .template_ = m->template_};
        int rc = snap_restore_vm(&r, rec, vm, c);
        if (rc != 0) {
                snprintf(err, errlen, "the sandbox did not start from its template (%s)",
                         rc == -EEXIST   ? "its key is a live sandbox's"
                         : rc == -EAGAIN ? "the sandbox limit"
                         : rc > 0        ? "it needs a cold boot: said above"
                                         : strerror(-rc));
                return rc > 0 ? -EIO : rc;
        }
        char archive[PATH_MAX + 32];
        snprintf(archive, sizeof(archive), "%s/%s", dir, CPAUSE_FS_ARCHIVE);
        struct cfs_link l;
        cfs_link_cvc(&l, *c);
        if ((rc = cfs_unpack(&l, archive, err, errlen)) < 0) {
                cvc_close(*c);
                *c = NULL;
                cvm_kill(vm);
                sbx_forget(rec);
        }
        return rc;
}

int sbx_resume(const char *root, const char *dir, double timeout_s, struct sbx_rec *rec,
               struct cvm *vm, struct cvc **c, struct csm *m, char *err, size_t errlen)
{
        return sbx_resume_staged(root, dir, timeout_s, rec, vm, c, m, NULL, err, errlen);
}

int sbx_paused_claim(const char *dir, struct csm *m, int *fd, const char **key, char *err,
                     size_t errlen)
{
        *key = NULL;
        *fd = -1;
        if (csm_init(m) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (*fd < 0) {
                int e = errno;
                snprintf(err, errlen, "paused sandbox %s: %s", dir, strerror(e));
                return e == ENOENT ? -ENOENT : -e;
        }
        /* The SDK's lock of a record being resumed: one resume at a time. */
        int rc = flock(*fd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
        if (rc == -EWOULDBLOCK) {
                snprintf(err, errlen, "the paused sandbox %s is being resumed by another process",
                         dir);
                rc = -EBUSY;
        } else if (rc < 0) {
                snprintf(err, errlen, "locking %s: %s", dir, strerror(-rc));
        }
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", dir, CSM_FILE);
        if (rc == 0 && access(path, F_OK) < 0) {
                snprintf(err, errlen, "paused sandbox %s not found (resumed or killed meanwhile)",
                         dir);
                rc = -ENOENT;
        }
        if (rc == 0)
                rc = csm_read(dir, m, err, errlen);
        if (rc == 0)
                rc = cpause_check(m, dir, err, errlen);
        *key = rc == 0 ? cpause_key_of(m, dir) : NULL;
        if (rc == 0 && !*key) {
                snprintf(err, errlen, "%s names no registry key", dir);
                rc = -EINVAL;
        }
        if (rc < 0) {
                close(*fd);
                *fd = -1;
        }
        return rc;
}

int sbx_resume_staged(const char *root, const char *dir, double timeout_s, struct sbx_rec *rec,
                      struct cvm *vm, struct cvc **c, struct csm *m, struct csq_stages *stages,
                      char *err, size_t errlen)
{
        *c = NULL;
        rec->path[0] = '\0';
        int fd;
        const char *key;
        int rc = sbx_paused_claim(dir, m, &fd, &key, err, errlen);
        if (rc < 0)
                return rc;
        rc = sbx_resume_claimed(root, dir, m, key, timeout_s, rec, vm, c, stages, err, errlen);
        close(fd);
        return rc;
}

int sbx_resume_claimed(const char *root, const char *dir, struct csm *m, const char *key,
                       double timeout_s, struct sbx_rec *rec, struct cvm *vm, struct cvc **c,
                       struct csq_stages *stages, char *err, size_t errlen)
{
        *c = NULL;
        rec->path[0] = '\0';
        int rc;
        if (m->filesystem[0]) { /* the limits are the restore's own (snap_restore_vm) */
                rc = resume_files(dir, m, key, timeout_s, rec, vm, c, err, errlen);
                if (rc == 0)
                        sbx_paused_drop(root, dir, key);
                return rc;
        }
        rc = sbx_reserve(timeout_s);
        if (rc == -EAGAIN)
                snprintf(err, errlen,
                         "Rate limit exceeded: the maximum number of concurrent sandboxes (%u, "
                         "$CELLVM_MAX_SANDBOXES) is reached",
                         creg_max_sandboxes());
        else if (rc == -EINVAL)
                snprintf(err, errlen, "Timeout cannot be greater than %g seconds",
                         creg_max_timeout_s());
        else if (rc < 0)
                snprintf(err, errlen, "the sandbox registry is unusable (said above)");
        if (rc < 0)
                return rc;
        struct csq_stages st = {0};
        int state_fd = -1;
        bool bad = false;
        /* Firecracker's and Cloud Hypervisor's records resume as a template's
         * clone does (snapshot_hybrid.c), as the same guest. */
        bool qemu = strcmp(m->vmm, "qemu") == 0, fresh = m->fork_of[0] != '\0';
        rc = qemu ? csq_spawn(m, dir, vm, &state_fd, &st, err, errlen)
                  : csh_spawn(m, dir, vm, &st, err, errlen);
        if (rc < 0) {
                sbx_release();
        } else {
                rc = sbx_record_as(rec, key, m->template_, vm, m->image, (unsigned)m->memory_mb,
                                   (unsigned)m->vcpus, CSQ_RESTORE_TIMEOUT_MS / 1000.0, timeout_s);
                /* It pauses again at its next timeout (sbx_start_clock writes it). */
                if (rc == 0 && strcmp(m->on_timeout, "pause") == 0)
                        snprintf(rec->e.on_timeout, sizeof(rec->e.on_timeout), "pause");
                if (rc < 0) {
                        if (state_fd >= 0)
                                close(state_fd);
                        snprintf(err, errlen, "sandbox %s is live already (registry key in use)",
                                 key);
                }
        }
        if (rc == 0)
                rc = qemu && fresh ? csq_load(m, dir, vm, state_fd, &st, c, &bad, err, errlen)
                     : qemu ? csq_load_paused(m, dir, vm, state_fd, &st, c, &bad, err, errlen)
                            : csh_load_paused(m, dir, vm, &st, c, &bad, err, errlen);
        if (rc < 0) {
                cvm_kill(vm);
                sbx_forget(rec);
                return rc;
        }
        sbx_start_clock(rec, *c, vm, timeout_s);
        if (stages)
                *stages = st;
        sbx_paused_drop(root, dir, key);
        return 0;
}

static const char pause_usage[] =
    "usage: cellvm pause [--json] [--envs JSON] [--files-only] ID\n"
    "\n"
    "Pauses live sandbox ID (its key or id, as cellvm ps shows them; one restored from a\n"
    "template under QEMU, Firecracker or Cloud Hypervisor: its VMM has a QMP or API\n"
    "socket): the guest is stopped, its whole state (devices and RAM) saved into the\n"
    "paused store ($CELLVM_PAUSED_DIR, else $XDG_STATE_HOME/cellvm/paused), its VMM\n"
    "stopped (Firecracker and Cloud Hypervisor: their own snapshot files, through the\n"
    "API). It keeps its id; while paused it counts against no limit and has no deadline.\n"
    "cellvm resume ID (or the Python SDK's Sandbox.connect(ID)) runs it again; cellvm\n"
    "kill ID drops it.\n"
    "  --json    print its entry as `cellvm ps --json` lists it now (sandbox_id, key,\n"
    "            state \"paused\", record, image, metadata, envs, ...) and state_bytes\n"
    "  --envs JSON  the sandbox's environment (an object) kept in the record\n"
    "  --files-only keep only the files it changed, no memory (E2B's keepMemory false;\n"
    "            QEMU, its agent channel not held by another process): its resume is a\n"
    "            fresh clone of its template with those files, a new boot\n"
    "exit status: 0 paused, 1 no such live sandbox or paused already, 2 usage, 3 failed\n"
    "(the sandbox runs on as it was).\n";

static const char resume_usage[] =
    "usage: cellvm resume [--json] [--timeout S] [--pass-fd N] [--holder PID] ID\n"
    "\n"
    "Resumes paused sandbox ID (as cellvm ps shows it): its VMM started from the record\n"
    "under the same key and id, its guest running again with what it held (variables,\n"
    "files, background processes), this host's clock and fresh entropy; then the record\n"
    "is removed. A record paused with --files-only (or by cellvm serve without memory)\n"
    "resumes as a fresh clone of its template with the files it had: a new boot.\n"
    "The sandbox outlives this command until its deadline, S seconds from\n"
    "now (default $CELLVM_DEFAULT_TIMEOUT, 300; at most $CELLVM_MAX_TIMEOUT), or cellvm\n"
    "kill ID.\n"
    "  --json    print its registry entry as JSON (sandbox_id, address, pid, deadline_ms,\n"
    "            ...) instead of a sentence\n"
    "  --pass-fd N  send the agent connection over unix socket N (SCM_RIGHTS)\n"
    "  --holder PID process PID holds that connection (cellvm hold --help)\n"
    "exit status: 0 resumed, 1 no such paused sandbox, 2 usage, 3 failed (the record\n"
    "stays).\n";

/* What pause and resume are told besides the id. */
struct pause_args {
        bool json;
        double timeout_s; /* resume */
        const char *envs; /* pause: --envs JSON, an object (the SDK's); NULL: "{}" */
        int pass_fd;      /* resume: --pass-fd N, or 0 */
        pid_t holder;     /* resume: --holder PID (the SDK holds the connection), or 0 */
        bool files_only;  /* pause: --files-only */
};

/* [--json] [--timeout S] [--pass-fd N] (resume) or [--envs JSON] (pause) ID:
 * 0, or the usage's exit status. */
static int parse(int argc, char **argv, bool resume, const char *usage, struct pause_args *a,
                 const char **id)
{
        bool timeout_ok = resume;
        bool *json = &a->json;
        double *timeout_s = &a->timeout_s;
        *json = false;
        /* E2B's default lifetime, as create's. */
        if (sbx_default_timeout(timeout_s) < 0)
                return SBX_EXIT_USAGE;
        a->envs = NULL;
        a->pass_fd = 0;
        a->holder = 0;
        a->files_only = false;
        *id = NULL;
        for (int i = 1; i < argc; i++) {
                if (cli_is_help(argv[i])) {
                        fputs(usage, stdout);
                        return -1;
                }
                if (strcmp(argv[i], "--json") == 0) {
                        *json = true;
                } else if (!resume && strcmp(argv[i], "--envs") == 0 && i + 1 < argc) {
                        if (!sbx_envs_arg_ok(argv[++i]))
                                return SBX_EXIT_USAGE;
                        a->envs = argv[i];
                } else if (!resume && strcmp(argv[i], "--files-only") == 0) {
                        a->files_only = true;
                } else if (resume && strcmp(argv[i], "--pass-fd") == 0 && i + 1 < argc) {
                        if (cli_parse_fd(argv[++i], &a->pass_fd) < 0) {
                                fputs("cellvm: --pass-fd takes an fd number >= 3\n", stderr);
                                return SBX_EXIT_USAGE;
                        }
                } else if (resume && strcmp(argv[i], "--holder") == 0 && i + 1 < argc) {
                        if (sbx_parse_pid(argv[++i], &a->holder) < 0) {
                                fputs("cellvm: --holder takes a pid\n", stderr);
                                return SBX_EXIT_USAGE;
                        }
                } else if (timeout_ok && strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
                        char *end;
                        *timeout_s = strtod(argv[++i], &end);
                        if (*end || !(*timeout_s > 0)) {
                                fprintf(stderr, "cellvm: --timeout takes seconds > 0\n");
                                return SBX_EXIT_USAGE;
                        }
                } else if (argv[i][0] != '-' && !*id) {
                        *id = argv[i];
                } else {
                        fprintf(stderr, "cellvm: %s: %s %s\n%s", resume ? "resume" : "pause",
                                argv[i][0] == '-' ? "unknown option (or its value missing)"
                                                  : "one ID only, not also",
                                argv[i], usage);
                        return SBX_EXIT_USAGE;
                }
        }
        if (!*id) {
                fprintf(stderr, "cellvm: %s: no ID given\n%s", resume ? "resume" : "pause", usage);
                return SBX_EXIT_USAGE;
        }
        return 0;
}

static int pack_over(void *ud, const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
        struct cfs_link l;
        cfs_link_cvc(&l, ud);
        return cfs_pack(&l, path, max_bytes, err, errlen);
}

/* --files-only: the record of pause_fs.c, its archive made through the
 * sandbox's agent (QEMU's serial channel takes one client: refused while
 * another process holds it). The caller's sbx_remove stops the VMM. */
static int pause_files(const char *root, const struct cpause_src *src, char *dir, size_t dirlen,
                       char *err, size_t errlen)
{
        const struct creg_entry *e = src->e;
        if (strcmp(e->vmm, "qemu") != 0 || !e->address[0]) {
                snprintf(err, errlen, "a %s sandbox's files are not archived (QEMU's only)",
                         e->vmm);
                return -EOPNOTSUPP;
        }
        if (sbx_held(e)) {
                snprintf(err, errlen,
                         "process %d holds its agent channel (an SDK's connection): it closes "
                         "it first",
                         (int)e->holder_pid);
                return -EBUSY;
        }
        struct cvc_connect_opts o = {.timeout_ms = 20000, .hello_resend_ms = CVC_HELLO_RESEND_MS};
        struct cvc *c = NULL;
        int rc = cvc_connect_ex(e->address, &o, &c);
        if (rc < 0) {
                snprintf(err, errlen, "connecting to its agent at %s: %s", e->address,
                         c ? cvc_errmsg(c) : strerror(-rc));
                cvc_close(c);
                return rc;
        }
        rc = cpause_save_fs(root, src, pack_over, c, dir, dirlen, err, errlen);
        cvc_close(c);
        return rc;
}

int cmd_pause(int argc, char **argv)
{
        struct pause_args a;
        const char *id;
        int rc = parse(argc, argv, false, pause_usage, &a, &id);
        bool json = a.json;
        if (rc != 0)
                return rc < 0 ? 0 : rc;
        char root[PATH_MAX], dir[PATH_MAX], err[PATH_MAX + 512];
        if ((rc = cpaused_root(root, sizeof(root))) < 0) {
                fprintf(stderr, "cellvm: the paused store's directory: %s\n", strerror(-rc));
                return SBX_EXIT_FAILED;
        }
        struct creg_entry e;
        static char metadata[SBX_METADATA_MAX];
        rc = sbx_find(id, &e, metadata, sizeof(metadata));
        if (rc == -ENOENT) {
                bool paused = sbx_paused_find(id, root, sizeof(root), dir, sizeof(dir)) == 0;
                fprintf(stderr, "cellvm: pause %s: %s\n", id,
                        paused ? "it is paused already" : "no live sandbox has that id or key");
                return 1;
        }
        if (rc < 0)
                return SBX_EXIT_FAILED;
        struct cpause_src src = {.e = &e,
                                 .template_ = e.template_,
                                 .metadata = metadata,
                                 .envs = a.envs ? a.envs : "{}"};
        rc = a.files_only ? pause_files(root, &src, dir, sizeof(dir), err, sizeof(err))
                          : cpause_save(root, &src, dir, sizeof(dir), err, sizeof(err));
        if (rc == -EEXIST) {
                fprintf(stderr, "cellvm: pause %s: %s\n", id, err);
                return 1;
        }
        if (rc < 0) {
                fprintf(stderr, "cellvm: pause %s: %s\n", id, err);
                return SBX_EXIT_FAILED;
        }
        /* Its egress rules go with the record (the VM's directory goes now). */
        json_t *rules = e.dir[0] ? cegress_rules_load(e.dir) : NULL;
        if (rules && cegress_rules_write(dir, rules, err, sizeof(err)) < 0)
                fprintf(stderr, "cellvm: pause %s: its egress rules are lost: %s\n", id, err);
        json_decref(rules);
        /* Returns once the VMM is gone (its exit is what a caller checks next). */
        int pidfd = (int)syscall(SYS_pidfd_open, e.pid, 0);
        sbx_remove(&e);
        if (pidfd >= 0) {
                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                while (poll(&p, 1, 10000) < 0 && errno == EINTR)
                        ;
                close(pidfd);
        }
        /* The guest's whole state: QEMU's one stream; the others' state and
         * memory. With --json, its entry as `cellvm ps --json` lists it now. */
        struct cpaused p = {0};
        snprintf(p.dir, sizeof(p.dir), "%s", dir);
        snprintf(p.key, sizeof(p.key), "%s", e.key);
        snprintf(p.sandbox_id, sizeof(p.sandbox_id), "%s", e.key);
        snprintf(p.vmm, sizeof(p.vmm), "%s", e.vmm);
        struct csm m;
        long long bytes = 0;
        json_t *o = NULL;
        if (csm_init(&m) == 0) {
                if (csm_read(dir, &m, err, sizeof(err)) == 0) {
                        bytes = (long long)(m.state_size + m.memory_size);
                        o = json ? sbx_paused_json(&p, &m) : NULL;
                }
                csm_free(&m);
        }
        if (!json) {
                printf("paused %s (%lld MiB of state in %s)\n", e.key, bytes >> 20, dir);
                return 0;
        }
        if (!o)
                o = json_pack("{s:s, s:s, s:s}", "sandbox_id", e.key, "key", e.key, "record", dir);
        json_object_set_new(o, "state_bytes", json_integer(bytes));
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!text)
                return SBX_EXIT_FAILED;
        puts(text);
        free(text);
        return 0;
}

int cmd_resume(int argc, char **argv)
{
        struct pause_args a;
        const char *id;
        int rc = parse(argc, argv, true, resume_usage, &a, &id);
        bool json = a.json;
        double timeout_s = a.timeout_s;
        if (rc != 0)
                return rc < 0 ? 0 : rc;
        char root[PATH_MAX], dir[PATH_MAX];
        rc = sbx_paused_find(id, root, sizeof(root), dir, sizeof(dir));
        if (rc < 0) {
                fprintf(stderr, "cellvm: resume %s: %s\n", id,
                        rc == -ENOENT ? "no paused sandbox has that id (cellvm ps lists them)"
                                      : strerror(-rc));
                return rc == -ENOENT ? 1 : SBX_EXIT_FAILED;
        }
        return sbx_resume_print(root, dir, id, timeout_s, json, a.pass_fd, a.holder);
}

int sbx_resume_print(const char *root, const char *dir, const char *id, double timeout_s, bool json,
                     int pass_fd, pid_t holder)
{
        char err[PATH_MAX + 1024];
        int rc;
        /* The VM runs on after this command, to its deadline, as the SDK's. */
        cvm_outlive_creator(true);
        static struct cvm vm; /* large; zeroed for each (cellvm fork resumes several) */
        static struct sbx_rec rec;
        memset(&vm, 0, sizeof(vm));
        memset(&rec, 0, sizeof(rec));
        struct cvc *c = NULL;
        struct csm m;
        struct snap_report report = {.restored = true};
        json_t *rules = cegress_rules_load(dir); /* the record goes with the resume */
        rc = sbx_resume_staged(root, dir, timeout_s, &rec, &vm, &c, &m, &report.st, err,
                               sizeof(err));
        if (rc == 0 && rules) { /* its egress, as before the pause */
                rc = cegress_rules_write(rec.e.dir, rules, err, sizeof(err));
                pid_t ek = rc < 0 ? rc : cegress_keeper_start(rec.e.key, rec.e.dir);
                if (rc == 0 && ek < 0)
                        snprintf(err, sizeof(err), "its egress keeper: %s", strerror(-ek));
                if (rc < 0 || ek < 0) {
                        fprintf(stderr, "cellvm: resume %s: no egress: %s\n", id, err);
                        rc = 0; /* it runs, refusing nothing it did not refuse: no proxy */
                }
        }
        json_decref(rules);
        if (rc < 0) {
                csm_free(&m);
                fprintf(stderr, "cellvm: resume %s: %s\n", id, err);
                return rc == -ENOENT ? 1 : SBX_EXIT_FAILED;
        }
        /* The caller (the SDK) gets the connection itself: see cellvm create. */
        if (pass_fd && (rc = cli_send_fd(pass_fd, cvc_fd(c))) < 0)
                fprintf(stderr, "cellvm: --pass-fd %d: %s (connect to the address instead)\n",
                        pass_fd, strerror(-rc));
        cvc_close(c);
        pid_t keeper = ckeeper_start(rec.e.key);
        if (keeper > 0)
                rec.e.keeper_pid = keeper;
        sbx_hold(&rec, holder);
        sbx_describe(&rec, NULL, m.metadata); /* its metadata, as before the pause */
        if (json) {
                rc = sbx_print_json(&rec, &report);
        } else {
                printf("resumed %s (%s pid %d, %g s to its deadline)\n", rec.e.key,
                       cvm_vmm_name(vm.vmm), (int)vm.pid, timeout_s);
        }
        csm_free(&m);
        return json ? rc : 0;
}
