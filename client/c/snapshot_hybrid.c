/* Firecracker and Cloud Hypervisor templates for the CLI: see snapshot_hybrid.h. */
#include "snapshot_hybrid.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "hybrid_vsock.h"
#include "mono_clock.h"
#include "template.h"
#include "vmm_api.h"
#include "vmm_boot.h"
#include "vmm_cloud_hypervisor.h"
#include "vmm_firecracker.h"
#include "vmm_hybrid.h"
#include "vmm_vsock.h"

/* Cloud Hypervisor's config.json is the VM's configuration: small. */
#define CONFIG_JSON_MAX (1024 * 1024)
#define SAVE_TIMEOUT_MS 600000

static int left_ms(uint64_t deadline)
{
        uint64_t now = mono_ns();
        return now >= deadline ? 1 : (int)((deadline - now) / 1000000u) + 1;
}

static int alive_cb(void *ud)
{
        return cvm_alive(ud);
}

/* The restore's VMM argv and API calls, with @DIR@ and @SNAPSHOT@, as
 * snapshot_hybrid._restore_calls writes them (json.dumps(sort_keys=True)). */
static int restore_calls(struct csm *w, enum cvm_vmm vmm, const char *binary)
{
        const char *fc[] = {"--api-sock", CTPL_DIR_PLACEHOLDER "/api.sock"};
        const char *ch[] = {"--api-socket", CTPL_DIR_PLACEHOLDER "/api.sock"};
        const char *fc_req[] = {
            "PUT /snapshot/load {\"mem_backend\": {\"backend_path\": \"" CTPL_SNAPSHOT_PLACEHOLDER
            "/memory\", \"backend_type\": \"File\"}, \"resume_vm\": false, \"snapshot_path\": "
            "\"" CTPL_SNAPSHOT_PLACEHOLDER "/state\"}",
            "PATCH /vm {\"state\": \"Resumed\"}"};
        const char *ch_req[] = {
            "PUT /api/v1/vm.restore {\"source_url\": \"file://" CTPL_DIR_PLACEHOLDER "/restore\"}",
            "PUT /api/v1/vm.resume"};
        bool f = vmm == CVM_VMM_FIRECRACKER;
        int rc = csm_set(w, "arg", binary);
        for (size_t i = 0; i < 2 && rc == 0; i++)
                rc = csm_set(w, "arg", f ? fc[i] : ch[i]);
        for (size_t i = 0; i < 2 && rc == 0; i++)
                rc = csm_set(w, "request", f ? fc_req[i] : ch_req[i]);
        return rc;
}

int csh_launch_init(struct csq_launch *l, const struct cvm_opts *run, unsigned user_mb, char *err,
                    size_t errlen)
{
        int rc = csq_launch_begin(l, run, user_mb, err, errlen);
        if (rc < 0)
                return rc;
        static char binary[PATH_MAX]; /* l->opts.qemu points here */
        const char *name = run->qemu                         ? run->qemu
                           : run->vmm == CVM_VMM_FIRECRACKER ? CVM_FIRECRACKER_DEFAULT
                                                             : CVM_CLOUD_HYPERVISOR_DEFAULT;
        csq_which(name, binary, sizeof(binary));
        if (!strchr(binary, '/')) {
                snprintf(err, errlen,
                         "%s: the `%s` binary was not found on PATH; install it (docs/VMM.md) or "
                         "use --vmm qemu",
                         cvm_vmm_name(run->vmm), name);
                return -ENOENT;
        }
        l->opts.qemu = binary;      /* as HybridVsockVM's shutil.which */
        static struct cvm_launch r; /* large */
        /* The manifest's cmdline has no TCG words, as snapshot_hybrid.template_manifest. */
        if ((rc = cvm_boot_params(&l->opts, false, &r, err, errlen)) < 0)
                return rc;
        char version[512];
        if ((rc = csq_vmm_version(binary, version, sizeof(version), err, errlen)) < 0)
                return rc;
        bool fc = run->vmm == CVM_VMM_FIRECRACKER;
        struct csm *w = &l->want;
        const char *strs[][2] = {{"kind", "template"},
                                 {"vmm", cvm_vmm_name(run->vmm)},
                                 {"vmm_version", version},
                                 {"vmm_binary", binary},
                                 {"accel", "kvm"},
                                 {"image", l->image},
                                 {"cmdline", r.cmdline},
                                 {"state", fc ? "state" : "state.json"},
                                 {"memory", fc ? "memory" : "memory-ranges"}};
        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && rc == 0; i++)
                rc = csm_set(w, strs[i][0], strs[i][1]);
        if (rc == 0)
                rc = restore_calls(w, run->vmm, binary);
        return csq_launch_finish(l, &r, rc, err, errlen);
}

int csh_save_into(enum cvm_vmm vmm, const char *api, const char *dir, const struct csm *m,
                  char *err, size_t errlen)
{
        char body[4 * PATH_MAX + 256], s1[PATH_MAX * 2 + 16], s2[PATH_MAX * 2 + 16],
            path[PATH_MAX + 32];
        int rc;
        if (vmm == CVM_VMM_FIRECRACKER) {
                rc = cvm_api_call(api, "PATCH", "/vm", "{\"state\": \"Paused\"}", 60000, err,
                                  errlen);
                if (rc < 0)
                        return rc;
                snprintf(path, sizeof(path), "%s/%s", dir, m->state);
                if (cvm_api_json_string(path, s1, sizeof(s1)) < 0)
                        return -E2BIG;
                snprintf(path, sizeof(path), "%s/%s", dir, m->memory);
                if (cvm_api_json_string(path, s2, sizeof(s2)) < 0)
                        return -E2BIG;
                snprintf(body, sizeof(body),
                         "{\"snapshot_type\": \"Full\", \"snapshot_path\": %s, \"mem_file_path\": "
                         "%s}",
                         s1, s2);
                return cvm_api_call(api, "PUT", "/snapshot/create", body, SAVE_TIMEOUT_MS, err,
                                    errlen);
        }
        rc = cvm_api_call(api, "PUT", "/api/v1/vm.pause", NULL, 60000, err, errlen);
        if (rc < 0)
                return rc;
        snprintf(path, sizeof(path), "file://%s", dir);
        if (cvm_api_json_string(path, s1, sizeof(s1)) < 0)
                return -E2BIG;
        snprintf(body, sizeof(body), "{\"destination_url\": %s}", s1);
        rc = cvm_api_call(api, "PUT", "/api/v1/vm.snapshot", body, SAVE_TIMEOUT_MS, err, errlen);
        snprintf(path, sizeof(path), "%s/config.json", dir);
        if (rc == 0 && access(path, F_OK) < 0) {
                snprintf(err, errlen, "cloud-hypervisor wrote no config.json into %s", dir);
                return -ENOENT;
        }
        return rc;
}

int csh_file_size(const char *dir, const char *name, uint64_t *size, bool sync, char *err,
                  size_t errlen)
{
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        int rc = fd < 0 || fstat(fd, &st) < 0 || (sync && fsync(fd) < 0) ? -errno : 0;
        if (fd >= 0)
                close(fd);
        if (rc < 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(-rc));
                return rc;
        }
        *size = (uint64_t)st.st_size;
        return 0;
}

int csh_build(const struct csq_launch *l, struct cvm *vm, char *snapdir, size_t snaplen,
              struct csm *m, char *err, size_t errlen)
{
        uint64_t t0 = mono_ns();
        fprintf(stderr,
                "cellvm: building the template %s (%s, %" PRIu64 " MiB): booting the image and "
                "waiting for its preloads; later runs restore it\n",
                l->tdir, l->want.vmm, l->want.memory_mb);
        char tmp[PATH_MAX];
        int rc = ctpl_new_snapshot_dir(l->tdir, tmp, sizeof(tmp), err, errlen);
        if (rc < 0)
                return rc;
        struct cvm_opts o = l->opts;
        o.api = true;
        struct cvc *c = NULL;
        uint64_t generation = 0, state_size = 0, memory_size = 0;
        char instance_dir[sizeof(vm->dir)] = "";
        rc = csq_boot_prepared(l, &o, vm, t0, &c, &generation, err, errlen);
        snprintf(instance_dir, sizeof(instance_dir), "%s", vm->dir);
        if (rc == 0)
                rc = csh_save_into(vm->vmm, vm->api, tmp, &l->want, err, errlen);
        cvc_close(c);
        cvm_kill(vm);
        bool have_m = false;
        if (rc == 0)
                rc = csh_file_size(tmp, l->want.state, &state_size, false, err, errlen);
        if (rc == 0) /* on disk before the manifest says the template is whole */
                rc = csh_file_size(tmp, l->want.memory, &memory_size, true, err, errlen);
        if (rc == 0 && (rc = csm_copy(m, &l->want)) < 0)
                snprintf(err, errlen, "out of memory");
        have_m = rc == 0;
        if (rc == 0) {
                m->generation = generation;
                m->state_size = state_size;
                m->memory_size = memory_size;
                rc = csm_set(m, "instance_dir", instance_dir);
                m->created_ms = (uint64_t)time(NULL) * 1000u;
                m->build_ms = (mono_ns() - t0) / 1000000u;
        }
        if (rc == 0)
                rc = csm_check_files(m, tmp, err, errlen);
        if (rc == 0)
                rc = csm_write(tmp, m, err, errlen);
        if (rc == 0)
                rc = ctpl_publish(l->tdir, tmp, snapdir, snaplen, err, errlen);
        if (rc < 0) {
                if (have_m)
                        csm_free(m);
                if (!err[0])
                        snprintf(err, errlen, "%s", strerror(-rc));
                int r = ctpl_remove_unused(tmp);
                if (r < 0)
                        fprintf(stderr, "cellvm: removing %s: %s\n", tmp, strerror(-r));
                return rc;
        }
        fprintf(stderr,
                "cellvm: template %s ready in %.1f s: state %" PRIu64 " KiB, memory %" PRIu64
                " MiB\n",
                snapdir, (double)(mono_ns() - t0) / 1e9, m->state_size >> 10, m->memory_size >> 20);
        return 1;
}

/* --- restoring a clone ------------------------------------------------------ */

int csh_check_restorable(const struct csm *m, const char *snapdir, char *err, size_t errlen)
{
        enum cvm_vmm vmm;
        if (cvm_vmm_parse(m->vmm, &vmm) < 0 || vmm == CVM_VMM_QEMU) {
                snprintf(err, errlen, "%s/%s: vmm %s is not Firecracker or Cloud Hypervisor",
                         snapdir, CSM_FILE, m->vmm);
                return -EINVAL;
        }
        int rc = csm_check_files(m, snapdir, err, errlen);
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/config.json", snapdir);
        if (rc == 0 && vmm == CVM_VMM_CLOUD_HYPERVISOR && access(path, F_OK) < 0) {
                snprintf(err, errlen, "%s not found: not a complete Cloud Hypervisor snapshot",
                         path);
                return -ENOENT;
        }
        return rc;
}

/* `in` with @DIR@ by `dir`, @SNAPSHOT@ by `snapdir` and `from` by `to`
 * (plain text, as snapshot_hybrid._parse_request and prepare_restore_dir);
 * a NULL or empty key, or a NULL value, is not replaced. */
static int substitute(const char *in, const char *dir, const char *snapdir, const char *from,
                      const char *to, char *out, size_t outlen)
{
        const char *keys[] = {CTPL_DIR_PLACEHOLDER, CTPL_SNAPSHOT_PLACEHOLDER, from};
        const char *vals[] = {dir, snapdir, to};
        size_t k = 0;
        for (const char *p = in; *p;) {
                size_t i = 0, klen = 0;
                for (; i < 3; i++) {
                        klen = keys[i] && vals[i] ? strlen(keys[i]) : 0;
                        if (klen && strncmp(p, keys[i], klen) == 0)
                                break;
                }
                const char *with = i < 3 ? vals[i] : p;
                size_t n = i < 3 ? strlen(with) : 1;
                if (k + n >= outlen)
                        return -E2BIG;
                memcpy(out + k, with, n);
                k += n;
                p += i < 3 ? klen : 1;
        }
        out[k] = '\0';
        return 0;
}

/* A copy of the manifest the clone is restored from, in its temp dir: what
 * a pause records again (as the SDK's vm.paused_manifest). A runtime file
 * that goes with the dir: not synced. */
static int keep_manifest(const struct csm *m, const struct cvm *vm, char *err, size_t errlen)
{
        char *text, path[sizeof(vm->dir) + sizeof(CSM_FILE) + 1];
        size_t len;
        int rc = csm_format(m, &text, &len);
        if (rc < 0) {
                snprintf(err, errlen, "the clone's manifest: %s", strerror(-rc));
                return rc;
        }
        snprintf(path, sizeof(path), "%s/%s", vm->dir, CSM_FILE);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        rc = fd < 0 ? -errno : cv_write_all(fd, text, len);
        if (fd >= 0 && close(fd) < 0 && rc == 0)
                rc = -errno;
        free(text);
        if (rc < 0)
                snprintf(err, errlen, "writing %s: %s", path, strerror(-rc));
        return rc;
}

int csh_spawn(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
              char *err, size_t errlen)
{
        static struct cvm_argv a; /* large */
        char arg[PATH_MAX * 2];
        enum cvm_vmm vmm = CVM_VMM_FIRECRACKER;
        (void)cvm_vmm_parse(m->vmm, &vmm); /* checked by csh_check_restorable */
        int rc = cvm_make_dir(vm, vmm, err, errlen);
        if (rc < 0)
                return rc;
        vm->kvm = true;
        memset(&a, 0, sizeof(a));
        if (m->arg.n == 0) {
                snprintf(err, errlen, "%s/%s has no arg lines: no VMM command line", snapdir,
                         CSM_FILE);
                return -EINVAL;
        }
        for (size_t i = 0; i < m->arg.n; i++) {
                if (substitute(m->arg.v[i], vm->dir, snapdir, NULL, NULL, arg, sizeof(arg)) < 0) {
                        snprintf(err, errlen, "%s/%s: an arg line is too long", snapdir, CSM_FILE);
                        return -E2BIG;
                }
                cvm_argv_add(&a, "%s", arg);
        }
        if (a.overflow) {
                snprintf(err, errlen, "%s/%s: more than %d arguments", snapdir, CSM_FILE,
                         CVM_MAX_ARGS);
                return -E2BIG;
        }
        if ((rc = keep_manifest(m, vm, err, errlen)) < 0)
                return rc;
        st->t0 = mono_ns();
        return cvm_fork_exec(vm, a.argv, -1, err, errlen);
}

/* DIR/restore: the snapshot's config.json with the template VM's temp dir
 * replaced by this one's, links to state.json and memory-ranges. */
static int prepare_restore_dir(const struct csm *m, const char *snapdir, const struct cvm *vm,
                               char *err, size_t errlen)
{
        char path[PATH_MAX + 32];
        if (mkdir(vm->restore, 0700) < 0) {
                int e = errno;
                snprintf(err, errlen, "mkdir %s: %s", vm->restore, strerror(e));
                return -e;
        }
        snprintf(path, sizeof(path), "%s/config.json", snapdir);
        FILE *f = fopen(path, "re");
        if (!f) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        char *text = malloc(CONFIG_JSON_MAX + 1), *out = malloc(2 * CONFIG_JSON_MAX);
        size_t n = text ? fread(text, 1, CONFIG_JSON_MAX + 1, f) : 0;
        int rc = !text || !out ? -ENOMEM : ferror(f) ? -EIO : n > CONFIG_JSON_MAX ? -E2BIG : 0;
        fclose(f);
        if (rc == 0) {
                text[n] = '\0';
                if (strlen(text) != n)
                        rc = -EINVAL; /* a NUL byte: not JSON text */
        }
        if (rc == 0 &&
            substitute(text, NULL, NULL, m->instance_dir, vm->dir, out, 2 * CONFIG_JSON_MAX) < 0)
                rc = -E2BIG;
        free(text);
        if (rc < 0) {
                free(out);
                snprintf(err, errlen, "%s: %s", path, strerror(-rc));
                return rc;
        }
        snprintf(path, sizeof(path), "%s/config.json", vm->restore);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        size_t len = strlen(out), done = 0;
        while (fd >= 0 && done < len) {
                ssize_t w = write(fd, out + done, len - done);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        break;
                done += (size_t)w;
        }
        rc = fd < 0 || done < len ? -errno : 0;
        if (fd >= 0 && close(fd) < 0 && rc == 0)
                rc = -errno;
        free(out);
        if (rc < 0) {
                snprintf(err, errlen, "writing %s: %s", path, strerror(-rc));
                return rc;
        }
        const char *links[] = {"state.json", "memory-ranges"};
        for (size_t i = 0; i < 2; i++) {
                char target[PATH_MAX + 32];
                snprintf(target, sizeof(target), "%s/%s", snapdir, links[i]);
                snprintf(path, sizeof(path), "%s/%s", vm->restore, links[i]);
                if (symlink(target, path) < 0) {
                        rc = -errno;
                        snprintf(err, errlen, "symlink %s: %s", path, strerror(-rc));
                        return rc;
                }
        }
        return 0;
}

/* One `request` line: "METHOD URL [BODY]", placeholders replaced. */
static int send_request(const char *line, const struct cvm *vm, const char *snapdir, int timeout_ms,
                        char *err, size_t errlen)
{
        char text[3 * PATH_MAX + 4096];
        if (substitute(line, vm->dir, snapdir, NULL, NULL, text, sizeof(text)) < 0) {
                snprintf(err, errlen, "a request line is too long");
                return -E2BIG;
        }
        char *method = text, *url = strchr(text, ' ');
        if (!url) {
                snprintf(err, errlen, "a request line without a URL: %.80s", line);
                return -EINVAL;
        }
        *url++ = '\0';
        char *body = strchr(url, ' ');
        if (body)
                *body++ = '\0';
        return cvm_api_call(vm->api, method, url, body && *body ? body : NULL, timeout_ms, err,
                            errlen);
}

/* csh_load, and csh_load_paused when not `fresh`. */
static int load(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
                bool fresh, struct cvc **c, bool *bad_snapshot, char *err, size_t errlen)
{
        uint64_t deadline = st->t0 + CSQ_RESTORE_TIMEOUT_MS * 1000000ull;
        *c = NULL;
        *bad_snapshot = false;
        int rc = cvm_api_wait(vm->api, left_ms(deadline), alive_cb, vm, err, errlen);
        if (rc == 0 && vm->vmm == CVM_VMM_CLOUD_HYPERVISOR)
                rc = prepare_restore_dir(m, snapdir, vm, err, errlen);
        if (rc < 0)
                return rc;
        for (size_t i = 0; i < m->request.n; i++) {
                char why[1024];
                rc =
                    send_request(m->request.v[i], vm, snapdir, left_ms(deadline), why, sizeof(why));
                if (rc < 0) {
                        snprintf(err, errlen, "%s/%s: %s could not restore it: %s", snapdir,
                                 m->state, m->vmm, why);
                        *bad_snapshot = rc == -EREMOTEIO;
                        return rc;
                }
                if (i == 0)
                        st->state_loaded = mono_ns() - st->t0;
                else
                        st->running = mono_ns() - st->t0;
        }
        int fd;
        char why[512];
        rc = cvm_hybrid_vsock_connect(vm->sock, CVM_AGENT_VSOCK_PORT, left_ms(deadline), alive_cb,
                                      vm, &fd, why, sizeof(why));
        if (rc < 0) {
                snprintf(err, errlen, "%s: the restored guest's vsock did not answer: %s", m->vmm,
                         why);
                *bad_snapshot = true;
                return rc;
        }
        struct cvc_connect_opts o = {
            .timeout_ms = left_ms(deadline), .still_alive = alive_cb, .ud = vm};
        rc = cvc_connect_fd(fd, &o, c);
        if (rc < 0) {
                snprintf(err, errlen, "the restored guest did not answer HELLO: %s",
                         *c ? cvc_errmsg(*c) : strerror(-rc));
                *bad_snapshot = true;
                cvc_close(*c);
                *c = NULL;
                return rc;
        }
        st->handshake = mono_ns() - st->t0;
        rc = fresh ? csq_new_generation(*c, left_ms(deadline), err, errlen)
                   : csq_refresh_resumed(*c, left_ms(deadline), err, errlen);
        if (rc < 0) {
                cvc_close(*c);
                *c = NULL;
                return rc;
        }
        st->new_generation = mono_ns() - st->t0;
        return 0;
}

int csh_load(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
             struct cvc **c, bool *bad_snapshot, char *err, size_t errlen)
{
        return load(m, snapdir, vm, st, true, c, bad_snapshot, err, errlen);
}

int csh_load_paused(const struct csm *m, const char *snapdir, struct cvm *vm, struct csq_stages *st,
                    struct cvc **c, bool *bad_snapshot, char *err, size_t errlen)
{
        return load(m, snapdir, vm, st, false, c, bad_snapshot, err, errlen);
}
