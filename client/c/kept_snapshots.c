/* E2B's snapshots kept on this host: the store (kept_snapshots.h). A
 * snapshot is a pause record (pause.h) with snapshot.json beside its
 * manifest; a record without it is being made or dropped, and is none. */
#include "kept_snapshots.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_sandboxes.h"
#include "manifest.h"
#include "pause.h"
#include "paused.h"
#include "template.h"
#include "user_dirs.h"

#define SNAPSHOTS_ENV "CELLVM_SNAPSHOTS_DIR"
#define SNAPSHOT_FILE "snapshot.json"
#define SNAPSHOT_TAG "default" /* E2B's tag of a snapshot's one build */

int ckept_root(char *out, size_t outlen)
{
        return cvm_user_dir(SNAPSHOTS_ENV, "XDG_STATE_HOME", ".local/state", "cellvm/snapshots",
                            out, outlen);
}

bool ckept_image_name(const char *t)
{
        static const char *const names[] = {"base", "code-interpreter-v1", "code-interpreter",
                                            "cellvm"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(t, names[i]) == 0)
                        return true;
        return false;
}

bool ckept_name_ok(const char *n)
{
        size_t len = strlen(n);
        if (len == 0 || len > CKEPT_NAME_MAX || n[0] == '.')
                return false;
        for (const char *p = n; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
                        return false;
        return true;
}

/* Snapshot `key` of the store at `root` into `sn`: 0, or -ENOENT. */
static int read_snapshot(const char *root, const char *key, struct ckept *sn)
{
        char path[PATH_MAX + 96];
        snprintf(path, sizeof(path), "%s/%.64s/%s", root, key, SNAPSHOT_FILE);
        json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
        const char *name = json_string_value(json_object_get(j, "name"));
        const char *sandbox = json_string_value(json_object_get(j, "sandboxID"));
        json_t *at = json_object_get(j, "createdMs");
        int rc = j && name && sandbox && json_is_integer(at) && strlen(name) <= CKEPT_NAME_MAX &&
                         strlen(sandbox) < sizeof(sn->sandbox)
                     ? 0
                     : -ENOENT;
        if (rc == 0) {
                snprintf(sn->key, sizeof(sn->key), "%.64s", key); /* a key: 64 at most */
                snprintf(sn->name, sizeof(sn->name), "%s", name);
                snprintf(sn->sandbox, sizeof(sn->sandbox), "%s", sandbox);
                sn->created_ms = json_integer_value(at);
        }
        json_decref(j);
        return rc;
}

static int newest_first(const void *a, const void *b)
{
        const struct ckept *x = a, *y = b;
        if (x->created_ms != y->created_ms)
                return x->created_ms > y->created_ms ? -1 : 1;
        return strcmp(x->key, y->key);
}

int ckept_list(struct ckept **out, size_t *n)
{
        *out = NULL;
        *n = 0;
        char root[PATH_MAX];
        int rc = ckept_root(root, sizeof(root));
        if (rc < 0)
                return rc;
        DIR *d = opendir(root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        size_t max = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!cpause_is_key(de->d_name))
                        continue;
                if (*n == max) {
                        size_t m = max ? 2 * max : 16;
                        struct ckept *v = realloc(*out, m * sizeof(*v));
                        if (!v) {
                                rc = -ENOMEM;
                                break;
                        }
                        *out = v;
                        max = m;
                }
                if (read_snapshot(root, de->d_name, &(*out)[*n]) == 0)
                        (*n)++;
        }
        closedir(d);
        if (rc < 0) {
                free(*out);
                *out = NULL;
                *n = 0;
                return rc;
        }
        if (*n)
                qsort(*out, *n, sizeof(**out), newest_first);
        return 0;
}

bool ckept_bare_ref(const char *ref, char *bare, size_t barelen)
{
        /* One namespace at most, itself a name: a path ("/x/image", "./image",
         * "build/image/") names no snapshot. */
        const char *slash = strchr(ref, '/');
        char ns[CKEPT_NAME_MAX + 1];
        size_t nslen = slash ? (size_t)(slash - ref) : 0;
        if (slash && (nslen == 0 || nslen >= sizeof(ns) || strchr(slash + 1, '/')))
                return false;
        if (slash) {
                memcpy(ns, ref, nslen);
                ns[nslen] = '\0';
                if (!ckept_name_ok(ns))
                        return false;
        }
        const char *start = slash ? slash + 1 : ref;
        const char *colon = strchr(start, ':');
        size_t len = colon ? (size_t)(colon - start) : strlen(start);
        if ((colon && strcmp(colon + 1, SNAPSHOT_TAG) != 0) || len == 0 || len >= barelen)
                return false;
        memcpy(bare, start, len);
        bare[len] = '\0';
        return true;
}

bool ckept_is(const struct ckept *sn, const char *bare)
{
        return strcmp(sn->key, bare) == 0 || (sn->name[0] && strcmp(sn->name, bare) == 0);
}

int ckept_find(const char *ref, struct ckept *sn)
{
        char bare[CKEPT_NAME_MAX + 1];
        if (!ckept_bare_ref(ref, bare, sizeof(bare)))
                return -ENOENT;
        struct ckept *v;
        size_t n;
        int rc = ckept_list(&v, &n);
        if (rc < 0)
                return rc;
        rc = -ENOENT;
        for (size_t i = 0; i < n && rc < 0; i++)
                if (ckept_is(&v[i], bare))
                        *sn = v[i], rc = 0;
        free(v);
        return rc;
}

json_t *ckept_info(const struct ckept *sn)
{
        char id[CKEPT_NAME_MAX + 16];
        snprintf(id, sizeof(id), "%s:%s", sn->name[0] ? sn->name : sn->key, SNAPSHOT_TAG);
        json_t *names = json_array();
        if (names && sn->name[0])
                json_array_append_new(names, json_string(id));
        return names ? json_pack("{s:s, s:o}", "snapshotID", id, "names", names) : NULL;
}

/* snapshot.json of the record in `dir`, written whole or not at all. */
static int write_snapshot_file(const char *dir, const struct ckept *sn)
{
        json_t *j = json_pack("{s:s, s:s, s:I}", "name", sn->name, "sandboxID", sn->sandbox,
                              "createdMs", (json_int_t)sn->created_ms);
        char tmp[PATH_MAX + 96], path[PATH_MAX + 96];
        snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, SNAPSHOT_FILE);
        snprintf(path, sizeof(path), "%s/%s", dir, SNAPSHOT_FILE);
        int rc = j ? json_dump_file(j, tmp, JSON_COMPACT) : -1;
        json_decref(j);
        if (rc < 0)
                return -EIO;
        return rename(tmp, path) < 0 ? -errno : 0;
}

/* The directory of snapshot `sn`: 0 or a negative errno. */
static int snapshot_dir(const struct ckept *sn, char *dir, size_t dirlen)
{
        char root[PATH_MAX];
        int rc = ckept_root(root, sizeof(root));
        return rc < 0 ? rc : cpause_record_dir(root, sn->key, dir, dirlen);
}

/* The store's lock (the paused store's kind: <root>/lock), so that a name
 * names one snapshot however many processes save under it at once: a file
 * descriptor to close, or a negative errno. */
static int lock_store(void)
{
        char root[PATH_MAX];
        int rc = ckept_root(root, sizeof(root));
        return rc < 0 ? rc : cpaused_lock(root);
}

int ckept_publish(const char *dir, const struct ckept *sn, char *err, size_t errlen)
{
        int lock = lock_store();
        if (lock < 0) {
                snprintf(err, errlen, "the snapshot store's lock: %s", strerror(-lock));
                (void)ctpl_rmtree(dir);
                return lock;
        }
        struct ckept old;
        bool replaces = sn->name[0] && ckept_find(sn->name, &old) == 0;
        int rc = write_snapshot_file(dir, sn);
        if (rc < 0) {
                snprintf(err, errlen, "writing its %s: %s", SNAPSHOT_FILE, strerror(-rc));
                (void)ctpl_rmtree(dir);
        }
        char olddir[PATH_MAX];
        int old_rc = 0;
        if (rc == 0 && replaces && strcmp(old.key, sn->key) != 0 &&
            ((old_rc = snapshot_dir(&old, olddir, sizeof(olddir))) < 0 ||
             (old_rc = ctpl_rmtree(olddir)) < 0))
                fprintf(stderr, "cellvm: snapshot %s: removing the older one (%s): %s\n", sn->name,
                        old.key, strerror(-old_rc));
        if (close(lock) < 0 && rc == 0) /* flock's lock goes with its descriptor */
                rc = -errno;
        return rc;
}

int ckept_copy(const struct ckept *sn, const struct ckept_create *c, char *key, size_t keylen,
               char *dir, size_t dirlen, char *err, size_t errlen)
{
        char sdir[PATH_MAX], paused[PATH_MAX];
        struct csm m;
        if (csm_init(&m) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        int rc;
        if ((rc = snapshot_dir(sn, sdir, sizeof(sdir))) < 0 ||
            (rc = cpaused_root(paused, sizeof(paused))) < 0 ||
            (rc = sbx_new_key("qemu", key, keylen)) < 0)
                snprintf(err, errlen, "the stores' paths: %s", strerror(-rc));
        if (rc == 0 && (rc = csm_read(sdir, &m, err, errlen)) == -ENOENT)
                snprintf(err, errlen, "snapshot %s was deleted meanwhile", sn->key);
        /* Its envs: the snapshot's, then the create's over them. */
        json_t *all = rc == 0 ? json_loads(m.envs[0] ? m.envs : "{}", 0, NULL) : NULL;
        if (rc == 0 &&
            (!json_is_object(all) || (c->envs && json_object_update(all, c->envs) < 0))) {
                snprintf(err, errlen, "snapshot %s: its envs are not an object", sn->key);
                rc = -EINVAL;
        }
        char *ev = rc == 0 ? json_dumps(all, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        if (rc == 0 && !ev) {
                snprintf(err, errlen, "out of memory");
                rc = -ENOMEM;
        }
        struct cpause_copy_manifest set = {.metadata = c->metadata,
                                           .envs = ev,
                                           .on_timeout = c->pause_at_timeout ? "pause" : NULL};
        if (rc == 0 && (rc = ctpl_private_dir(paused, err, errlen)) == 0)
                rc = cpause_copy(paused, sdir, key, &set, dir, dirlen, err, errlen);
        free(ev);
        json_decref(all);
        csm_free(&m);
        return rc;
}

int ckept_drop(const char *ref)
{
        struct ckept sn;
        char dir[PATH_MAX];
        int lock = lock_store();
        if (lock < 0)
                return lock;
        int rc = ckept_find(ref, &sn);
        if (rc == 0 && (rc = snapshot_dir(&sn, dir, sizeof(dir))) == 0)
                rc = ctpl_rmtree(dir);
        if (close(lock) < 0 && rc == 0)
                rc = -errno;
        return rc;
}
