/* E2B's snapshots API on cellvm serve (spec/openapi.yml): POST
 * /sandboxes/{id}/snapshots keeps a running sandbox's state (the sandbox runs
 * on, as a fork's source does); a create whose templateID names a snapshot
 * makes a new sandbox of it, as many times as asked; GET /snapshots lists
 * them; DELETE /templates/{id} drops one. The store is kept_snapshots.h's,
 * shared with the CLI. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_sandboxes.h"
#include "registry.h"
#include "serve.h"
#include "serve_http.h"
#include "kept_snapshots.h"

#define SNAPSHOTS_LIMIT_MAX 100

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
        struct ckept sn = {.created_ms = creg_now_ms()};
        json_t *name = json_object_get(body, "name");
        if (name && !json_is_null(name) &&
            !(json_is_string(name) && ckept_name_ok(json_string_value(name))))
                snprintf(why, sizeof(why),
                         "name must be 1 to %d letters, digits, '-', '_' or '.' (not first)",
                         CKEPT_NAME_MAX);
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
        int rc = ckept_root(root, sizeof(root));
        if (rc < 0)
                return reply_error(h, 500, "the snapshot store's directory: %s", strerror(-rc));
        if ((rc = sbx_new_key("qemu", sn.key, sizeof(sn.key))) < 0)
                return reply_error(h, 500, "a snapshot id: %s", strerror(-rc));
        int64_t t0 = creg_now_ms();
        rc = serve_snapshot_save(s, root, sn.key, dir, sizeof(dir), why, sizeof(why));
        if (rc == 0)
                rc = ckept_publish(dir, &sn, why, sizeof(why));
        if (rc < 0) {
                fprintf(stderr, "cellvm serve: a snapshot of sandbox %s: %s\n", s->id, why);
                return rc == -ENOENT ? reply_error(h, 404, "sandbox \"%s\" not found", s->id)
                       : rc == -EOPNOTSUPP
                           ? reply_error(h, 400, "sandbox %s: %s", s->id, why)
                           : reply_error(h, 500, "a snapshot of sandbox %s: %s", s->id, why);
        }
        fprintf(stderr, "cellvm serve: sandbox %s: snapshot %s%s%s kept in %lld ms\n", s->id,
                sn.key, sn.name[0] ? " named " : "", sn.name, (long long)(creg_now_ms() - t0));
        json_t *out = ckept_info(&sn);
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
        char bare[CKEPT_NAME_MAX + 1] = "";
        bool none = name && name[0] && !ckept_bare_ref(name, bare, sizeof(bare));
        struct ckept *v;
        size_t n;
        if (ckept_list(&v, &n) < 0)
                return reply_error(h, 500, "reading the snapshot store");
        json_t *arr = json_array();
        const char *next_token = NULL;
        bool started = !next || !next[0];
        for (size_t i = 0; arr && !none && i < n; i++) {
                if (!started && strcmp(v[i].key, next) == 0)
                        started = true;
                if (!started || (sandbox && sandbox[0] && strcmp(sandbox, v[i].sandbox) != 0) ||
                    (bare[0] && !ckept_is(&v[i], bare)))
                        continue;
                if ((long)json_array_size(arr) == limit) {
                        next_token = v[i].key;
                        break;
                }
                json_t *one = ckept_info(&v[i]);
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
        int rc = ckept_drop(ref);
        if (rc == -ENOENT)
                return reply_error(h, 404, "template '%.128s' not found", ref);
        if (rc < 0)
                return reply_error(h, 500, "removing snapshot %.128s: %s", ref, strerror(-rc));
        fprintf(stderr, "cellvm serve: snapshot %.128s deleted\n", ref);
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
        if (!ref[0] || strlen(ref) > 2 * CKEPT_NAME_MAX)
                return reply_error(h, 404, "no such route %s", h->url);
        return drop(h, ref);
}

int serve_snapshot_instantiate(const char *ref, double timeout_s, json_t *metadata, json_t *envs,
                               struct sandbox **out, char *err, size_t errlen)
{
        char key[72], dir[PATH_MAX];
        char *md = json_dumps(metadata, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (!md) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        struct ckept sn;
        struct ckept_create c = {.metadata = md, .envs = envs};
        int rc = ckept_find(ref, &sn);
        if (rc < 0)
                snprintf(err, errlen, "template '%.128s' not found", ref);
        else
                rc = ckept_copy(&sn, &c, key, sizeof(key), dir, sizeof(dir), err, errlen);
        free(md);
        if (rc < 0)
                return rc;
        rc = serve_resume(key, timeout_s, out, err, errlen);
        if (rc < 0) {
                (void)serve_paused_kill(key); /* a failed one leaves nothing */
                return rc;
        }
        return 0;
}
