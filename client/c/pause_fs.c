/* A filesystem-only pause's record (see pause.h): the guest's archive of the
 * files it changed and a manifest naming it, without the VM's state. */
#include "pause.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mono_clock.h"
#include "template.h"

static uint64_t now_ms(void)
{
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

static int describe(struct csm *m, const struct cpause_src *src, uint64_t size, int64_t t0)
{
        const struct creg_entry *e = src->e;
        const char *const strs[][2] = {
            {"kind", "paused"},           {"vmm", e->vmm},
            {"accel", e->accel},          {"image", e->image},
            {"sandbox_id", e->key},       {"registry_key", e->key},
            {"template", src->template_}, {"metadata", src->metadata},
            {"envs", src->envs},          {"filesystem", CPAUSE_FS_ARCHIVE},
        };
        int rc = 0;
        for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && rc == 0; i++)
                rc = csm_set(m, strs[i][0], strs[i][1]);
        const struct {
                const char *name;
                uint64_t v;
        } nums[] = {
            {"memory_mb", e->memory_mb},
            {"vcpus", e->vcpus},
            {"started_ms", (uint64_t)e->started_ms},
            {"state_size", size},
            {"created_ms", now_ms()},
            {"build_ms", (uint64_t)(mono_ms() - t0)},
        };
        for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]) && rc == 0; i++)
                rc = csm_set_u64(m, nums[i].name, nums[i].v);
        return rc;
}

int cpause_save_fs(const char *root, const struct cpause_src *src, cpause_pack_fn pack, void *ud,
                   char *recdir, size_t reclen, char *err, size_t errlen)
{
        int64_t t0 = mono_ms();
        int rc = ctpl_private_dir(root, err, errlen);
        if (rc < 0)
                return rc;
        if ((rc = cpause_record_dir(root, src->e->key, recdir, reclen)) < 0) {
                snprintf(err, errlen, "the paused store's path for %s: %s", src->e->key,
                         strerror(-rc));
                return rc;
        }
        char tmp[PATH_MAX + 8], archive[PATH_MAX + 32];
        if ((rc = cpause_new_tmp(root, recdir, tmp, sizeof(tmp), err, errlen)) < 0)
                return rc;
        snprintf(archive, sizeof(archive), "%s/%s", tmp, CPAUSE_FS_ARCHIVE);
        /* Built in the guest's memory, so no larger (a guest says what it likes). */
        uint64_t mb = src->e->memory_mb ? src->e->memory_mb : 64u * 1024u;
        rc = pack(ud, archive, mb << 20, err, errlen);
        struct stat st;
        if (rc == 0 && stat(archive, &st) < 0) {
                rc = -errno;
                snprintf(err, errlen, "%s: %s", archive, strerror(errno));
        }
        struct csm m;
        if (rc == 0 && (rc = csm_init(&m)) == 0) {
                if ((rc = describe(&m, src, (uint64_t)st.st_size, t0)) < 0)
                        snprintf(err, errlen, "the manifest: %s", strerror(-rc));
                else
                        rc = csm_write(tmp, &m, err, errlen);
                csm_free(&m);
        } else if (rc == -ENOMEM) {
                snprintf(err, errlen, "out of memory");
        }
        if (rc == 0)
                rc = cpause_publish(root, tmp, recdir, err, errlen);
        if (rc < 0)
                (void)ctpl_rmtree(tmp);
        return rc;
}

int cpause_check_fs(const struct csm *m, const char *dir, char *err, size_t errlen)
{
        char path[PATH_MAX + 32];
        struct stat st;
        if (strcmp(m->filesystem, CPAUSE_FS_ARCHIVE) != 0) {
                snprintf(err, errlen, "%s/%s: an unknown filesystem archive '%.64s'", dir, CSM_FILE,
                         m->filesystem);
                return -EINVAL;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, CPAUSE_FS_ARCHIVE);
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->state_size) {
                snprintf(err, errlen, "%s: missing or not the %llu bytes its manifest says", path,
                         (unsigned long long)m->state_size);
                return -EINVAL;
        }
        return 0;
}
