/* E2B's snapshots API on cellvm serve (spec/openapi.yml): POST
 * /sandboxes/{id}/snapshots keeps a running sandbox's state (the sandbox runs
 * on, as a fork's source does); a create whose templateID names a snapshot
 * makes a new sandbox of it, as many times as asked; GET /snapshots lists
 * them; DELETE /templates/{id} drops one. A snapshot is a paused record
 * (pause.h) in a store of its own, never resumed itself: each sandbox made of
 * it is a copy (cpause_copy), resumed as a fork is, with a new generation. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_sandboxes.h"
#include "manifest.h"
#include "pause.h"
#include "paused.h"
#include "registry.h"
#include "serve.h"
#include "serve_http.h"
#include "template.h"
#include "user_dirs.h"

#define SNAPSHOTS_ENV "CELLVM_SNAPSHOTS_DIR"
#define SNAPSHOT_FILE "snapshot.json"
#define SNAPSHOT_FILE_MAX 4096
#define SNAPSHOT_TAG "default" /* E2B's tag of a snapshot's one build */
#define SNAPSHOT_NAME_MAX 128
#define SNAPSHOTS_LIMIT_MAX 100

/* Held while a snapshot is made, copied or dropped: a copy never sees half a drop. */
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

struct snapshot {
        char key[72];                     /* its record's directory in the store */
        char name[SNAPSHOT_NAME_MAX + 1]; /* "" when it was given none */
        char sandbox[72];                 /* the sandbox it was taken from */
        int64_t created_ms;
};

static int store_root(char *out, size_t outlen)
{
        return cvm_user_dir(SNAPSHOTS_ENV, "XDG_STATE_HOME", ".local/state", "cellvm/snapshots",
                            out, outlen);
}

/* E2B's names are template aliases: letters, digits, '-', '_' and '.'. */
static bool name_ok(const char *n)
{
        size_t len = strlen(n);
        if (len == 0 || len > SNAPSHOT_NAME_MAX || n[0] == '.')
                return false;
        for (const char *p = n; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
                        return false;
        return true;
}

/* Snapshot `key` of the store at `root` into `sn`: 0, or -ENOENT when it is
 * none (no snapshot.json: a record being made or dropped). */
static int read_snapshot(const char *root, const char *key, struct snapshot *sn)
{
        char path[PATH_MAX + 96];
        snprintf(path, sizeof(path), "%s/%.64s/%s", root, key, SNAPSHOT_FILE);
        json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
        const char *name = json_string_value(json_object_get(j, "name"));
        const char *sandbox = json_string_value(json_object_get(j, "sandboxID"));
        json_t *at = json_object_get(j, "createdMs");
        int rc = j && name && sandbox && json_is_integer(at) && strlen(name) <= SNAPSHOT_NAME_MAX &&
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
        const struct snapshot *x = a, *y = b;
        if (x->created_ms != y->created_ms)
                return x->created_ms > y->created_ms ? -1 : 1;
        return strcmp(x->key, y->key);
}

/* The store's snapshots, newest first: 0 with *out (free it) and *n; no
 * store is none. */
static int list_snapshots(struct snapshot **out, size_t *n)
{
        *out = NULL;
        *n = 0;
        char root[PATH_MAX];
        int rc = store_root(root, sizeof(root));
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
                        struct snapshot *v = realloc(*out, m * sizeof(*v));
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

/* What names a snapshot: its id or name, with E2B's ":default" tag or none,
 * after a namespace ("team/name") if any. The bare reference into `out`, or
 * false when the tag is another (each snapshot here has one build). */
static bool bare_ref(const char *ref, char *out, size_t outlen)
{
        const char *slash = strrchr(ref, '/');
        const char *start = slash ? slash + 1 : ref;
        const char *colon = strchr(start, ':');
        size_t len = colon ? (size_t)(colon - start) : strlen(start);
        if ((colon && strcmp(colon + 1, SNAPSHOT_TAG) != 0) || len == 0 || len >= outlen)
                return false;
        memcpy(out, start, len);
        out[len] = '\0';
        return true;
}

/* The snapshot `ref` names (by id or name): 0 with `sn`, or -ENOENT. */
static int find_snapshot(const char *ref, struct snapshot *sn)
{
        char bare[SNAPSHOT_NAME_MAX + 1];
        if (!bare_ref(ref, bare, sizeof(bare)))
                return -ENOENT;
        struct snapshot *v;
        size_t n;
        int rc = list_snapshots(&v, &n);
        if (rc < 0)
                return rc;
        rc = -ENOENT;
        for (size_t i = 0; i < n && rc < 0; i++)
                if (strcmp(v[i].key, bare) == 0 || (v[i].name[0] && strcmp(v[i].name, bare) == 0))
                        *sn = v[i], rc = 0;
        free(v);
        return rc;
}

bool serve_snapshot_exists(const char *ref)
{
        struct snapshot sn;
        return find_snapshot(ref, &sn) == 0;
}

/* E2B's SnapshotInfo: the id a create names it by (the name when it has one,
 * as E2B's alias), and its full names. */
static json_t *snapshot_json(const struct snapshot *sn)
{
        char id[SNAPSHOT_NAME_MAX + 16];
        snprintf(id, sizeof(id), "%s:%s", sn->name[0] ? sn->name : sn->key, SNAPSHOT_TAG);
        json_t *names = json_array();
        if (names && sn->name[0])
                json_array_append_new(names, json_string(id));
        return names ? json_pack("{s:s, s:o}", "snapshotID", id, "names", names) : NULL;
}

/* snapshot.json of the record in `dir`, written whole or not at all. */
static int write_snapshot_file(const char *dir, const struct snapshot *sn)
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

/* A JSON object body ({} when empty), or NULL with `why`. */
static json_t *object_of(struct hreq *h, char *why, size_t whylen)
{
        if (h->len == 0)
                return json_object();
        json_error_t e;
        json_t *j = json_loadb(h->body, h->len, JSON_REJECT_DUPLICATES, &e);
        if (!j || !json_is_object(j)) {
                snprintf(why, whylen,
                         j ? "the body must be a JSON object" : "malformed JSON body: %s (line %d)",
                         e.text, e.line);
                json_decref(j);
                return NULL;
        }
        return j;
}

enum MHD_Result serve_snapshot_create(struct hreq *h, struct sandbox *s)
{
        char why[512] = "";
        json_t *body = object_of(h, why, sizeof(why));
        if (!body)
                return reply_error(h, 400, "%s", why);
        struct snapshot sn = {.created_ms = creg_now_ms()};
        json_t *name = json_object_get(body, "name");
        if (name && !json_is_null(name) &&
            !(json_is_string(name) && name_ok(json_string_value(name))))
                snprintf(why, sizeof(why),
                         "name must be 1 to %d letters, digits, '-', '_' or '.' (not first)",
                         SNAPSHOT_NAME_MAX);
        else if (json_is_string(name))
                snprintf(sn.name, sizeof(sn.name), "%s", json_string_value(name));
        json_decref(body);
        if (why[0])
                return reply_error(h, 400, "%s", why);
        if (serve_single_enabled()) /* a pod's server keeps nothing past its pod */
                return reply_error(h, 400,
                                   "this server (--single) serves one sandbox and keeps no "
                                   "snapshots");
        snprintf(sn.sandbox, sizeof(sn.sandbox), "%s", s->id);
        char root[PATH_MAX], dir[PATH_MAX];
        int rc = store_root(root, sizeof(root));
        if (rc < 0)
                return reply_error(h, 500, "the snapshot store's directory: %s", strerror(-rc));
        if ((rc = sbx_new_key("qemu", sn.key, sizeof(sn.key))) < 0)
                return reply_error(h, 500, "a snapshot id: %s", strerror(-rc));
        int64_t t0 = creg_now_ms();
        pthread_mutex_lock(&store_lock);
        struct snapshot old;
        bool replaces = sn.name[0] && find_snapshot(sn.name, &old) == 0;
        rc = serve_snapshot_save(s, root, sn.key, dir, sizeof(dir), why, sizeof(why));
        if (rc == 0 && (rc = write_snapshot_file(dir, &sn)) < 0) {
                snprintf(why, sizeof(why), "writing its %s: %s", SNAPSHOT_FILE, strerror(-rc));
                (void)ctpl_rmtree(dir);
        }
        /* A name names the newest snapshot given it (E2B's new build of the template). */
        if (rc == 0 && replaces) {
                char olddir[PATH_MAX];
                int e = cpause_record_dir(root, old.key, olddir, sizeof(olddir));
                if (e == 0 && (e = ctpl_rmtree(olddir)) < 0)
                        fprintf(stderr, "cellvm serve: snapshot %s: removing %s: %s\n", sn.name,
                                olddir, strerror(-e));
        }
        pthread_mutex_unlock(&store_lock);
        if (rc < 0) {
                fprintf(stderr, "cellvm serve: a snapshot of sandbox %s: %s\n", s->id, why);
                return rc == -ENOENT ? reply_error(h, 404, "sandbox \"%s\" not found", s->id)
                       : rc == -EOPNOTSUPP
                           ? reply_error(h, 400, "sandbox %s: %s", s->id, why)
                           : reply_error(h, 500, "a snapshot of sandbox %s: %s", s->id, why);
        }
        fprintf(stderr, "cellvm serve: sandbox %s: snapshot %s%s%s kept in %lld ms\n", s->id,
                sn.key, sn.name[0] ? " named " : "", sn.name, (long long)(creg_now_ms() - t0));
        json_t *out = snapshot_json(&sn);
        return out ? reply_json(h, 201, out) : reply_error(h, 500, "out of memory");
}

/* GET /snapshots?sandboxID=&name=&limit=&nextToken=: newest first; the token
 * is the id the next page starts at. */
static enum MHD_Result list(struct hreq *h)
{
        const char *sandbox = hreq_query(h, "sandboxID"), *name = hreq_query(h, "name");
        const char *next = hreq_query(h, "nextToken");
        long limit;
        if (!hreq_limit(h, SNAPSHOTS_LIMIT_MAX, &limit))
                return reply_error(h, 400, "limit: 1 to %d", SNAPSHOTS_LIMIT_MAX);
        char bare[SNAPSHOT_NAME_MAX + 1] = "";
        bool none = name && name[0] && !bare_ref(name, bare, sizeof(bare));
        struct snapshot *v;
        size_t n;
        if (list_snapshots(&v, &n) < 0)
                return reply_error(h, 500, "reading the snapshot store");
        json_t *arr = json_array();
        const char *next_token = NULL;
        bool started = !next || !next[0];
        for (size_t i = 0; arr && !none && i < n; i++) {
                if (!started && strcmp(v[i].key, next) == 0)
                        started = true;
                if (!started || (sandbox && sandbox[0] && strcmp(sandbox, v[i].sandbox) != 0) ||
                    (bare[0] && strcmp(bare, v[i].key) != 0 && strcmp(bare, v[i].name) != 0))
                        continue;
                if ((long)json_array_size(arr) == limit) {
                        next_token = v[i].key;
                        break;
                }
                json_t *one = snapshot_json(&v[i]);
                if (!one || json_array_append_new(arr, one) < 0)
                        json_decref(arr), arr = NULL;
        }
        enum MHD_Result rc =
            arr ? reply_json_page(h, arr, next_token) : reply_error(h, 500, "out of memory");
        free(v);
        return rc;
}

/* DELETE /templates/{id}: a snapshot dropped (the sandboxes made of it run on:
 * each has its own record's copy). */
static enum MHD_Result drop(struct hreq *h, const char *ref)
{
        pthread_mutex_lock(&store_lock);
        struct snapshot sn;
        char root[PATH_MAX], dir[PATH_MAX];
        int rc = find_snapshot(ref, &sn);
        if (rc == 0 && (rc = store_root(root, sizeof(root))) == 0 &&
            (rc = cpause_record_dir(root, sn.key, dir, sizeof(dir))) == 0)
                rc = ctpl_rmtree(dir);
        pthread_mutex_unlock(&store_lock);
        if (rc == -ENOENT)
                return reply_error(h, 404, "template '%.128s' not found", ref);
        if (rc < 0)
                return reply_error(h, 500, "removing snapshot %.128s: %s", ref, strerror(-rc));
        fprintf(stderr, "cellvm serve: snapshot %s deleted\n", sn.key);
        return reply_empty(h, 204);
}

enum MHD_Result serve_snapshots_route(struct hreq *h)
{
        bool get = strcmp(h->method, "GET") == 0, del = strcmp(h->method, "DELETE") == 0;
        if (strcmp(h->url, "/snapshots") == 0)
                return get ? list(h)
                           : reply_error(h, 405, "method %s not allowed on %s", h->method, h->url);
        const char *ref = h->url + strlen("/templates/");
        if (!del)
                return reply_error(h, 405, "method %s not allowed on %s", h->method, h->url);
        if (!ref[0] || strlen(ref) > 2 * SNAPSHOT_NAME_MAX)
                return reply_error(h, 404, "no such route %s", h->url);
        return drop(h, ref);
}

int serve_snapshot_instantiate(const char *ref, double timeout_s, json_t *metadata, json_t *envs,
                               struct sandbox **out, char *err, size_t errlen)
{
        char root[PATH_MAX], sdir[PATH_MAX], paused[PATH_MAX], dir[PATH_MAX], key[72];
        struct snapshot sn;
        struct csm m;
        if (csm_init(&m) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        pthread_mutex_lock(&store_lock);
        int rc = find_snapshot(ref, &sn);
        if (rc < 0)
                snprintf(err, errlen, "template '%.128s' not found", ref);
        if (rc == 0 && ((rc = store_root(root, sizeof(root))) < 0 ||
                        (rc = cpause_record_dir(root, sn.key, sdir, sizeof(sdir))) < 0 ||
                        (rc = cpaused_root(paused, sizeof(paused))) < 0 ||
                        (rc = sbx_new_key("qemu", key, sizeof(key))) < 0))
                snprintf(err, errlen, "the stores' paths: %s", strerror(-rc));
        if (rc == 0)
                rc = csm_read(sdir, &m, err, errlen);
        /* Its envs: the snapshot's, then the create's over them. */
        json_t *all = rc == 0 ? json_loads(m.envs[0] ? m.envs : "{}", 0, NULL) : NULL;
        if (rc == 0 && (!json_is_object(all) || json_object_update(all, envs) < 0)) {
                snprintf(err, errlen, "snapshot %s: its envs are not an object", sn.key);
                rc = -EINVAL;
        }
        char *md = rc == 0 ? json_dumps(metadata, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        char *ev = rc == 0 ? json_dumps(all, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        if (rc == 0 && (!md || !ev)) {
                snprintf(err, errlen, "out of memory");
                rc = -ENOMEM;
        }
        if (rc == 0 && (rc = ctpl_private_dir(paused, err, errlen)) == 0)
                rc = cpause_copy(paused, sdir, key, md, ev, dir, sizeof(dir), err, errlen);
        pthread_mutex_unlock(&store_lock);
        free(md);
        free(ev);
        json_decref(all);
        csm_free(&m);
        if (rc < 0)
                return rc;
        rc = serve_resume(key, timeout_s, out, err, errlen);
        if (rc < 0) {
                (void)serve_paused_kill(key); /* a failed one leaves nothing */
                return rc;
        }
        return 0;
}
