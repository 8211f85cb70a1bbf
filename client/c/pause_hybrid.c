/* Pausing a Firecracker or Cloud Hypervisor sandbox into the paused store
 * (pause.h's cpause_save_hybrid; the SDK's pause.py _pause_hybrid and
 * snapshot_hybrid.save_paused). */
#include "pause.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mono_clock.h"
#include "snapshot_hybrid.h"
#include "template.h"
#include "vmm.h"
#include "vmm_api.h"

/* The manifest the clone was restored from (csh_spawn kept it in its temp
 * dir: every clone with an API socket has it), made the record's: kind
 * paused, no generation (save_paused's), the sandbox's names, its temp dir
 * as instance_dir (Cloud Hypervisor's config.json names it). */
static int describe(struct csm *m, const struct cpause_src *src, char *err, size_t errlen)
{
        const struct creg_entry *e = src->e;
        int rc = csm_read(e->dir, m, err, errlen);
        if (rc == -ENOENT) {
                snprintf(err, errlen,
                         "%s keeps no %s: not a clone this cellvm restored, it cannot be paused",
                         e->dir, CSM_FILE);
                return -EOPNOTSUPP;
        }
        if (rc < 0)
                return rc;
        if (strcmp(m->vmm, e->vmm) != 0) {
                snprintf(err, errlen, "%s/%s is a %s manifest, the sandbox runs %s", e->dir,
                         CSM_FILE, m->vmm, e->vmm);
                return -EINVAL;
        }
        const char *const strs[][2] = {
            {"kind", "paused"},       {"instance_dir", e->dir},     {"sandbox_id", e->key},
            {"registry_key", e->key}, {"template", src->template_}, {"metadata", src->metadata},
            {"envs", src->envs},
        };
        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && rc == 0; i++)
                rc = csm_set(m, strs[i][0], strs[i][1]);
        m->generation = 0;
        m->started_ms = (uint64_t)e->started_ms;
        if (rc < 0)
                snprintf(err, errlen, "the manifest: %s", strerror(-rc));
        return rc;
}

/* A failed save leaves the VM paused: it runs on as it was. */
static void resume_vm(const struct creg_entry *e, const char *api)
{
        bool fc = strcmp(e->vmm, "firecracker") == 0;
        char why[256];
        if (cvm_api_call(api, fc ? "PATCH" : "PUT", fc ? "/vm" : "/api/v1/vm.resume",
                         fc ? "{\"state\": \"Resumed\"}" : NULL, 10000, why, sizeof(why)) < 0)
                fprintf(stderr, "cellvm: sandbox %s stays paused in its VMM: %s\n", e->key, why);
}

int cpause_save_hybrid(const char *root, const struct cpause_src *src, char *recdir, size_t reclen,
                       char *err, size_t errlen)
{
        const struct creg_entry *e = src->e;
        int64_t t0 = mono_ms();
        enum cvm_vmm vmm;
        if (cvm_vmm_parse(e->vmm, &vmm) < 0 || vmm == CVM_VMM_QEMU) {
                snprintf(err, errlen, "vmm %s is not Firecracker or Cloud Hypervisor", e->vmm);
                return -EINVAL;
        }
        char api[sizeof(e->dir) + 16];
        snprintf(api, sizeof(api), "%s/api.sock", e->dir);
        if (access(api, F_OK) < 0) {
                snprintf(err, errlen,
                         "its VMM has no API socket (a cold boot runs %s without one): only a "
                         "sandbox restored from a template can be paused",
                         e->vmm);
                return -EOPNOTSUPP;
        }
        if (e->pid <= 0 || creg_proc_start(e->pid) != e->pid_start) {
                snprintf(err, errlen, "its VMM (pid %d) is gone", (int)e->pid);
                return -ESRCH;
        }
        struct csm m;
        if (csm_init(&m) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        int rc = describe(&m, src, err, errlen);
        if (rc == 0)
                rc = ctpl_private_dir(root, err, errlen);
        if (rc == 0 && (rc = cpause_record_dir(root, e->key, recdir, reclen)) < 0)
                snprintf(err, errlen, "the paused store's path for %s: %s", e->key, strerror(-rc));
        char tmp[PATH_MAX + 8];
        if (rc == 0)
                rc = cpause_new_tmp(root, recdir, tmp, sizeof(tmp), err, errlen);
        if (rc < 0) {
                csm_free(&m);
                return rc;
        }
        rc = csh_save_into(vmm, api, tmp, &m, err, errlen);
        if (rc == 0)
                rc = csh_file_size(tmp, m.state, &m.state_size, false, err, errlen);
        if (rc == 0) /* on disk before the manifest says the record is whole */
                rc = csh_file_size(tmp, m.memory, &m.memory_size, true, err, errlen);
        if (rc == 0) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                m.created_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
                m.build_ms = (uint64_t)(mono_ms() - t0);
                rc = csm_write(tmp, &m, err, errlen);
        }
        if (rc == 0)
                rc = cpause_publish(root, tmp, recdir, err, errlen);
        csm_free(&m);
        if (rc < 0) {
                resume_vm(e, api);
                (void)ctpl_rmtree(tmp);
        }
        return rc;
}
