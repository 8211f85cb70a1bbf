/* cellvm serve's control plane: E2B's /sandboxes API (spec/openapi.yml and
 * the v2 routes of npm e2b 2.51), with its error bodies `{"code","message"}`
 * whose `code` the JS SDK branches on. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "serve_egress.h"
#include "serve_http.h"
#include "kept_snapshots.h"

#define LIST_LIMIT_MAX 100

/* `alias`: the template's name, as E2B gives it with its templateID (Sandbox,
 * SandboxDetail and ListedSandbox in spec/openapi.yml); the JS SDK's getInfo()
 * and list() read it as `name` (sandboxApi.ts). Here the template is named by
 * its alias, so both are the name it was created from. */
static json_t *sandbox_json(const struct sandbox *s)
{
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", s->id,
                         "templateID", s->template_id, "alias", s->template_id, "clientID",
                         "cellvm", "envdVersion", SERVE_ENVD_VERSION, "envdAccessToken", s->token,
                         "trafficAccessToken", s->token, "domain", serve.domain);
}

/* E2B's ListedSandbox (and with `detail`, SandboxDetail) of a running
 * (`token` its access token) or a paused sandbox (`token` NULL); `shown`
 * (stolen, may be NULL): its SandboxDetail `network` and `allowInternetAccess`
 * (serve_egress_shown), each absent when its create gave none, as E2B's are. */
static json_t *described(const struct serve_paused *v, int64_t end_ms, const char *token,
                         const char *on_timeout, bool auto_resume, bool detail, json_t *shown)
{
        char started[40], end[40];
        iso_time(started, sizeof(started), v->started_ms);
        iso_time(end, sizeof(end), end_ms);
        json_t *o =
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:O, s:s, s:s}", "templateID",
                      v->template_id, "alias", v->template_id, "sandboxID", v->id, "clientID",
                      "cellvm", "startedAt", started, "endAt", end, "cpuCount", (int)v->vcpus,
                      "memoryMB", (int)v->memory_mb, "diskSizeMB", 0, "metadata", v->metadata,
                      "state", token ? "running" : "paused", "envdVersion", SERVE_ENVD_VERSION);
        if (o && detail) {
                if (token)
                        json_object_set_new(o, "envdAccessToken", json_string(token));
                json_object_set_new(o, "domain", json_string(serve.domain));
                json_t *aia = json_object_get(shown, "allowInternetAccess");
                if (json_is_boolean(aia))
                        json_object_set(o, "allowInternetAccess", aia);
                json_t *network = json_object_get(shown, "network");
                if (json_is_object(network))
                        json_object_set(o, "network", network);
                json_object_set_new(
                    o, "lifecycle",
                    json_pack("{s:s, s:b}", "onTimeout", on_timeout, "autoResume", auto_resume));
        }
        json_decref(shown);
        return o;
}

static json_t *listed_json(const struct sandbox *s, bool detail)
{
        struct serve_paused v = {.metadata = s->metadata,
                                 .started_ms = s->started_ms,
                                 .memory_mb = s->memory_mb,
                                 .vcpus = s->vcpus};
        snprintf(v.id, sizeof(v.id), "%s", s->id);
        snprintf(v.template_id, sizeof(v.template_id), "%s", s->template_id);
        return described(&v, s->deadline_ms, s->token, s->auto_pause ? "pause" : "kill",
                         s->auto_resume, detail,
                         detail ? serve_egress_shown((struct sandbox *)s) : NULL);
}

/* A paused sandbox (no deadline: endAt is its start). */
static json_t *paused_json(const struct serve_paused *p, bool detail)
{
        return described(p, p->started_ms, NULL, "kill", false, detail,
                         detail ? serve_paused_shown(p->id) : NULL);
}

/* A JSON object body, or NULL with a 400 queued in *rc. */
static json_t *object_body(struct hreq *h, bool empty_ok, enum MHD_Result *rc)
{
        if (h->len == 0 && empty_ok)
                return json_object();
        json_error_t e;
        json_t *j = json_loadb(h->body, h->len, JSON_REJECT_DUPLICATES, &e);
        if (!j || !json_is_object(j)) {
                json_decref(j);
                *rc = j ? reply_error(h, 400, "the body must be a JSON object")
                        : reply_error(h, 400, "malformed JSON body: %s (line %d)", e.text, e.line);
                return NULL;
        }
        return j;
}

/* An object of strings (metadata, envVars); NULL and `why` when it is not. */
static json_t *string_map(json_t *v, const char *name, char *why, size_t whylen)
{
        if (!v || json_is_null(v))
                return json_object();
        if (!json_is_object(v)) {
                snprintf(why, whylen, "%s must be an object of strings", name);
                return NULL;
        }
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
                if (!json_is_string(x)) {
                        snprintf(why, whylen, "%s.%s must be a string", name, k);
                        return NULL;
                }
        }
        return json_incref(v);
}

/* `timeout` in seconds: absent → the default; 0 < t <= the maximum. */
static int timeout_of(json_t *body, double *t, char *why, size_t whylen)
{
        json_t *v = json_object_get(body, "timeout");
        if (!v || json_is_null(v)) {
                *t = SERVE_DEFAULT_TIMEOUT_S;
                return 0;
        }
        if (!json_is_number(v) || json_number_value(v) < 0) {
                snprintf(why, whylen, "timeout must be a number of seconds, not negative");
                return -EINVAL;
        }
        *t = json_number_value(v);
        if (*t > creg_max_timeout_s()) {
                snprintf(why, whylen, "Timeout cannot be greater than %g seconds",
                         creg_max_timeout_s());
                return -EINVAL;
        }
        return 0;
}

/* The create body checked, by create() and by a backend that hands the body on
 * (serve_kube.c: a refusal costs no claim). Network rules are parsed as the
 * pod's own server will apply them. */
int serve_check_create(json_t *body, bool keeps_snapshots, double *timeout, char *why,
                       size_t whylen)
{
        json_t *t = json_object_get(body, "templateID");
        if (t && !json_is_string(t)) {
                snprintf(why, whylen, "templateID must be a string");
                return -EINVAL;
        }
        char bare[CKEPT_NAME_MAX + 1];
        if (t && !ckept_image_name(json_string_value(t)) &&
            !(keeps_snapshots && ckept_bare_ref(json_string_value(t), bare, sizeof(bare)))) {
                snprintf(why, whylen,
                         "template '%.64s' not found (this server serves one image, as base or "
                         "code-interpreter-v1)",
                         json_string_value(t));
                return -ENOENT;
        }
        if (timeout_of(body, timeout, why, whylen) < 0)
                return -EINVAL;
        json_t *md = string_map(json_object_get(body, "metadata"), "metadata", why, whylen);
        json_t *envs =
            md ? string_map(json_object_get(body, "envVars"), "envVars", why, whylen) : NULL;
        int rc = -EINVAL;
        if (md && envs) {
                struct egress_policy policy = {0};
                rc = serve_egress_policy_of(json_object_get(body, "network"),
                                            json_object_get(body, "allow_internet_access"), &policy,
                                            why, whylen);
                egress_policy_free(&policy);
        }
        json_decref(md);
        json_decref(envs);
        return rc < 0 ? -EINVAL : rc;
}

/* An object of strings the body passed serve_check_create() with, or {} when absent. */
static json_t *checked_map(json_t *v)
{
        return json_is_object(v) ? json_incref(v) : json_object();
}

static enum MHD_Result create(struct hreq *h)
{
        enum MHD_Result rc;
        json_t *body = object_body(h, false, &rc);
        if (!body)
                return rc;
        char why[512] = "";
        double timeout;
        int egress = serve_check_create(body, true, &timeout, why, sizeof(why));
        if (egress < 0) {
                json_decref(body);
                return reply_error(h, egress == -ENOENT ? 404 : 400, "%s", why);
        }
        json_t *t = json_object_get(body, "templateID");
        const char *tpl = t ? json_string_value(t) : "base";
        json_t *metadata = checked_map(json_object_get(body, "metadata"));
        json_t *envs = checked_map(json_object_get(body, "envVars"));
        /* Every sandbox gets the egress proxy (docs/NETWORK.md): with E2B's network
         * rules, or without any until a PUT .../network gives it some. */
        bool rules = egress > 0 || json_is_false(json_object_get(body, "allow_internet_access"));
        if (!metadata || !envs || serve_egress_envs(envs) < 0) {
                json_decref(metadata);
                json_decref(envs);
                json_decref(body);
                return reply_error(h, 500, "out of memory");
        }
        json_t *ap = json_object_get(body, "autoPause"), *ar = json_object_get(body, "autoResume");
        if (ap && !json_is_null(ap) && !json_is_boolean(ap))
                snprintf(why, sizeof(why), "autoPause must be a boolean");
        else if (ar && !json_is_null(ar) && !json_is_false(ar) &&
                 !(json_is_object(ar) && json_is_boolean(json_object_get(ar, "enabled"))))
                snprintf(why, sizeof(why), "autoResume must be {\"enabled\": a boolean}");
        /* E2B's autoResume: traffic wakes it once auto-paused with its memory. */
        bool auto_resume = json_is_true(json_object_get(ar, "enabled"));
        json_t *apm = json_object_get(body, "autoPauseMemory");
        if (!why[0] && auto_resume && !json_is_true(ap))
                snprintf(why, sizeof(why), "autoResume needs autoPause (onTimeout \"pause\")");
        else if (!why[0] && auto_resume && json_is_false(apm))
                snprintf(why, sizeof(why),
                         "autoResume cannot be combined with autoPauseMemory false: a "
                         "filesystem-only snapshot is resumed by connect only");
        if (why[0]) {
                json_decref(metadata);
                json_decref(envs);
                json_decref(body);
                return reply_error(h, 400, "%s", why);
        }
        bool auto_pause = json_is_true(ap);
        /* E2B's autoPauseMemory (onTimeout keepMemory): false pauses its files only. */
        if (apm && !json_is_null(apm) && !json_is_boolean(apm)) {
                json_decref(metadata);
                json_decref(envs);
                json_decref(body);
                return reply_error(h, 400, "autoPauseMemory must be a boolean");
        }
        bool files_only = json_is_false(apm);
        if (serve_single_claim() < 0) {
                json_decref(metadata);
                json_decref(envs);
                json_decref(body);
                return reply_error(h, 429,
                                   "Rate limit exceeded: this server (--single) serves one "
                                   "sandbox, handed out already");
        }
        struct sandbox *s;
        int64_t t0 = creg_now_ms();
        /* A template that is none of the image's names is a kept snapshot. */
        bool from_snapshot = !ckept_image_name(tpl);
        int r = !from_snapshot ? serve_create(tpl, timeout, metadata, envs, &s, why, sizeof(why))
                               : serve_snapshot_instantiate(tpl, timeout, metadata, envs, &s, why,
                                                            sizeof(why));
        if (r < 0 && serve_single_enabled())
                serve_single_unclaim();
        else if (r == 0 && serve_single_enabled())
                serve_single_handed_out();
        /* E2B's default is public: a sandbox's other ports need no token. */
        bool private_traffic =
            json_is_false(json_object_get(json_object_get(body, "network"), "allowPublicTraffic"));
        json_decref(metadata);
        json_decref(envs);
        if (r < 0) {
                json_decref(body);
                return reply_error(h,
                                   r == -EAGAIN                    ? 429
                                   : r == -EINVAL                  ? 400
                                   : r == -ENOENT && from_snapshot ? 404
                                                                   : 500,
                                   "%s", why);
        }
        __atomic_store_n(&s->private_traffic, private_traffic, __ATOMIC_RELEASE);
        if (serve_egress_start(s, rules ? body : NULL, why, sizeof(why)) < 0) {
                json_decref(body);
                serve_kill(s);
                serve_put(s);
                return reply_error(h, 500, "starting the sandbox's egress proxy: %s", why);
        }
        /* What its GET shows: the create's network and allow_internet_access. */
        if (serve_egress_show(s, body) < 0)
                fprintf(stderr, "cellvm serve: sandbox %s: no memory to keep its network\n", s->id);
        json_decref(body);
        if (auto_pause) {
                pthread_mutex_lock(&serve.life);
                s->auto_pause = true;
                s->auto_pause_files_only = files_only;
                s->auto_resume = auto_resume;
                s->resume_timeout_s = timeout;
                pthread_mutex_unlock(&serve.life);
                /* The guest's own deadline gets the margin of a pause. */
                if (serve_set_timeout(s, timeout, why, sizeof(why)) < 0) {
                        serve_kill(s);
                        serve_put(s);
                        return reply_error(h, 500, "setting the timeout: %s", why);
                }
        }
        fprintf(stderr, "cellvm serve: sandbox %s created in %lld ms (%s, timeout %g s)\n", s->id,
                (long long)(creg_now_ms() - t0), s->template_id, timeout);
        json_t *out = sandbox_json(s);
        serve_put(s);
        return reply_json(h, 201, out);
}

/* "k=v&k2=v2" of the metadata filter, each part URL-encoded once more. */
static void url_decode(char *s)
{
        char *o = s;
        for (char *p = s; *p; p++) {
                int hi, lo;
                if (*p == '%' && p[1] && p[2] && sscanf(p + 1, "%1x%1x", &hi, &lo) == 2) {
                        *o++ = (char)(hi * 16 + lo);
                        p += 2;
                } else {
                        *o++ = *p == '+' ? ' ' : *p;
                }
        }
        *o = '\0';
}

bool serve_metadata_matches(const json_t *metadata, const char *filter)
{
        if (!filter || !filter[0])
                return true;
        char *copy = strdup(filter);
        if (!copy)
                return false;
        bool ok = true;
        char *save;
        for (char *pair = strtok_r(copy, "&", &save); pair && ok;
             pair = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(pair, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                url_decode(pair);
                url_decode(eq + 1);
                json_t *v = json_object_get(metadata, pair);
                ok = v && json_is_string(v) && strcmp(json_string_value(v), eq + 1) == 0;
        }
        free(copy);
        return ok;
}

static bool state_matches(const char *filter, const char *state)
{
        if (!filter || !filter[0])
                return true;
        char *copy = strdup(filter);
        bool ok = false;
        char *save;
        for (char *st = copy ? strtok_r(copy, ",", &save) : NULL; st;
             st = strtok_r(NULL, ",", &save))
                ok |= strcmp(st, state) == 0;
        free(copy);
        return ok;
}

struct list_item {
        struct sandbox *s;
        const struct serve_paused *p;
};

static int by_start(const void *a, const void *b)
{
        const struct list_item *x = a, *y = b;
        int64_t sx = x->s ? x->s->started_ms : x->p->started_ms;
        int64_t sy = y->s ? y->s->started_ms : y->p->started_ms;
        if (sx != sy)
                return sx < sy ? -1 : 1;
        return strcmp(x->s ? x->s->id : x->p->id, y->s ? y->s->id : y->p->id);
}

static enum MHD_Result list(struct hreq *h, bool v2)
{
        const char *meta = hreq_query(h, "metadata"), *state = hreq_query(h, "state");
        const char *next = hreq_query(h, "nextToken");
        const char *order = hreq_query(h, "order"), *after_s = hreq_query(h, "startedAfter");
        const char *tpl = hreq_query(h, "template");
        long limit;
        int64_t after = INT64_MIN;
        if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0)
                return reply_error(h, 400, "order: asc or desc");
        if (after_s && after_s[0] && parse_iso_ms(after_s, &after) < 0)
                return reply_error(h, 400, "startedAfter: an RFC 3339 time");
        if (!hreq_limit(h, LIST_LIMIT_MAX, &limit))
                return reply_error(h, 400, "limit: 1 to %d", LIST_LIMIT_MAX);
        struct sandbox **all;
        size_t n, np = 0;
        struct serve_paused *paused = NULL;
        if (serve_list(&all, &n) < 0)
                return reply_error(h, 500, "out of memory");
        if (serve_paused_list(&paused, &np) < 0)
                np = 0; /* no paused store here: only the running ones */
        /* Running and paused ones, oldest first. */
        struct list_item *items = calloc(n + np + 1, sizeof(*items));
        for (size_t k = 0; items && k < n + np; k++)
                items[k] = k < n ? (struct list_item){all[k], NULL}
                                 : (struct list_item){NULL, &paused[k - n]};
        if (items)
                qsort(items, n + np, sizeof(*items), by_start);
        json_t *arr = items ? json_array() : NULL;
        /* Newest first unless order=asc (E2B's default is desc); the token is
         * the id the next page starts at. */
        bool asc = order && strcmp(order, "asc") == 0;
        bool started = !next || !v2;
        const char *next_token = NULL;
        for (size_t k = 0; arr && k < n + np; k++) {
                struct list_item *it = &items[asc ? k : n + np - 1 - k];
                const char *id = it->s ? it->s->id : it->p->id;
                const char *tid = it->s ? it->s->template_id : it->p->template_id;
                const json_t *md = it->s ? it->s->metadata : it->p->metadata;
                int64_t at = it->s ? it->s->started_ms : it->p->started_ms;
                if (!started && strcmp(id, next) == 0)
                        started = true;
                if (!started || !serve_metadata_matches(md, meta) ||
                    !state_matches(state, it->s ? "running" : "paused") || at < after ||
                    (tpl && tpl[0] && strcmp(tpl, tid) != 0))
                        continue;
                if (v2 && (long)json_array_size(arr) == limit) {
                        next_token = id;
                        break;
                }
                json_array_append_new(arr, it->s ? listed_json(it->s, false)
                                                 : paused_json(it->p, false));
        }
        /* Before the references go: the token is one of their ids. */
        enum MHD_Result rc = reply_json_page(h, arr, next_token);
        for (size_t i = 0; i < n; i++)
                serve_put(all[i]);
        free(all);
        free(items);
        serve_paused_free(paused, np);
        free(paused);
        return rc;
}

/* `id` is not running: a paused one is described, killed, refused a pause
 * (409: E2B's "already paused") or resumed by connect and the deprecated
 * resume (201); anything else is a 404. */
static enum MHD_Result not_running(struct hreq *h, const char *id, const char *action, bool get,
                                   bool post, bool del)
{
        char why[512] = "";
        struct serve_paused p;
        if (!action[0] && get) {
                if (serve_paused_get(id, &p) < 0)
                        return reply_error(h, 404, "sandbox \"%.64s\" not found", id);
                enum MHD_Result rc = reply_json(h, 200, paused_json(&p, true));
                serve_paused_free(&p, 1);
                return rc;
        }
        if (!action[0] && del) {
                int r = serve_paused_kill(id);
                if (r > 0)
                        fprintf(stderr, "cellvm serve: paused sandbox %s killed\n", id);
                return r > 0    ? reply_empty(h, 204)
                       : r == 0 ? reply_error(h, 404, "sandbox \"%.64s\" not found", id)
                                : reply_error(h, 500, "removing paused sandbox %.64s: %s", id,
                                              strerror(-r));
        }
        bool fork = strcmp(action, "fork") == 0, snapshot = strcmp(action, "snapshots") == 0;
        if (post && (strcmp(action, "pause") == 0 || fork || snapshot)) {
                if (serve_paused_get(id, &p) < 0)
                        return reply_error(h, 404, "sandbox \"%.64s\" not found", id);
                serve_paused_free(&p, 1);
                return reply_error(h, 409,
                                   fork       ? "sandbox \"%.64s\" is paused: resume it to fork it"
                                   : snapshot ? "sandbox \"%.64s\" is paused: resume it to "
                                                "snapshot it"
                                              : "sandbox \"%.64s\" is already paused",
                                   id);
        }
        if (!(post && (strcmp(action, "connect") == 0 || strcmp(action, "resume") == 0)))
                return reply_error(h, 404, "sandbox \"%.64s\" not found", id);
        enum MHD_Result rc;
        json_t *body = object_body(h, true, &rc);
        if (!body)
                return rc;
        double t;
        int r = timeout_of(body, &t, why, sizeof(why));
        json_decref(body);
        if (r < 0)
                return reply_error(h, 400, "%s", why);
        struct sandbox *s;
        int64_t t0 = creg_now_ms();
        r = serve_resume(id, t, &s, why, sizeof(why));
        if (r == -ENOENT)
                return reply_error(h, 404, "sandbox \"%.64s\" not found", id);
        if (r < 0) {
                fprintf(stderr, "cellvm serve: resuming sandbox %s: %s\n", id, why);
                return reply_error(h,
                                   r == -EAGAIN  ? 429
                                   : r == -EBUSY ? 409
                                                 : 500,
                                   "resuming sandbox %.64s: %s", id, why);
        }
        if (r > 0)
                fprintf(stderr, "cellvm serve: sandbox %s resumed in %lld ms (timeout %g s)\n",
                        s->id, (long long)(creg_now_ms() - t0), t);
        /* 0: it was resumed by another request meanwhile: running, as connect finds it. */
        rc = reply_json(h, r > 0 ? 201 : 200, sandbox_json(s));
        serve_put(s);
        return rc;
}

/* /sandboxes/{id}[/action] and /v2/sandboxes/{id}[/action]. */
/* A query parameter of unix seconds (E2B's start / end): -1 when absent. */
static int unix_seconds(const char *v, int64_t *out)
{
        *out = -1;
        if (!v || !v[0])
                return 0;
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (*end || errno || x < 0)
                return -EINVAL;
        *out = x;
        return 0;
}

static enum MHD_Result metrics(struct hreq *h, struct sandbox *s)
{
        int64_t start, end;
        if (unix_seconds(hreq_query(h, "start"), &start) < 0)
                return reply_error(h, 400, "start: unix seconds");
        if (unix_seconds(hreq_query(h, "end"), &end) < 0)
                return reply_error(h, 400, "end: unix seconds");
        json_t *arr = serve_metrics_json(s, start, end);
        return arr ? reply_json(h, 200, arr) : reply_error(h, 500, "out of memory");
}

/* E2B's PUT /sandboxes/{id}/network: the rules replaced, live. */
static enum MHD_Result update_network(struct hreq *h, struct sandbox *s)
{
        enum MHD_Result rc;
        json_t *body = object_body(h, true, &rc);
        if (!body)
                return rc;
        char why[512] = "";
        int r = serve_egress_update(s, body, why, sizeof(why));
        json_decref(body);
        if (r == -EINVAL)
                return reply_error(h, 400, "%s", why);
        if (r == -ENOENT) /* an MCP session's, or its egress did not start again on resume */
                return reply_error(h, 409,
                                   "sandbox \"%s\" has no egress proxy to update (an MCP "
                                   "session's sandbox, or its proxy did not start on resume: see "
                                   "the server's log)",
                                   s->id);
        if (r < 0)
                return reply_error(h, 500, "out of memory");
        fprintf(stderr, "cellvm serve: sandbox %s: egress rules replaced\n", s->id);
        return reply_empty(h, 204);
}

/* E2B's POST /sandboxes/{id}/fork, body SandboxForkRequest {timeout (15),
 * count (1 to 100)}: 201 with one SandboxForkResult per fork. */
#define FORK_MAX 100
static enum MHD_Result fork_sandbox(struct hreq *h, struct sandbox *s)
{
        enum MHD_Result rc;
        json_t *body = object_body(h, true, &rc);
        if (!body)
                return rc;            /* object_body queued the 400 */
        if (serve_single_enabled()) { /* a pod's server: its one sandbox only */
                json_decref(body);
                return reply_error(h, 429,
                                   "Rate limit exceeded: this server (--single) serves one "
                                   "sandbox, so it makes no fork");
        }
        char why[512] = "";
        double t = 15; /* the spec's default */
        json_t *count = json_object_get(body, "count");
        json_int_t n = json_is_null(count) || !count ? 1 : json_integer_value(count);
        if (count && !json_is_null(count) && (!json_is_integer(count) || n < 1 || n > FORK_MAX))
                snprintf(why, sizeof(why), "count must be an integer from 1 to %d", FORK_MAX);
        else if (json_object_get(body, "timeout"))
                (void)timeout_of(body, &t, why, sizeof(why));
        json_decref(body);
        if (why[0])
                return reply_error(h, 400, "%s", why);
        struct serve_fork_result *r = calloc((size_t)n, sizeof(*r));
        if (!r)
                return reply_error(h, 500, "out of memory");
        int64_t t0 = creg_now_ms();
        int e = serve_fork(s, t, (unsigned)n, r, why, sizeof(why));
        if (e < 0) {
                free(r);
                fprintf(stderr, "cellvm serve: forking sandbox %s: %s\n", s->id, why);
                return e == -ENOENT ? reply_error(h, 404, "sandbox \"%s\" not found", s->id)
                                    : reply_error(h, 500, "forking sandbox %s: %s", s->id, why);
        }
        json_t *arr = json_array();
        for (json_int_t i = 0; i < n; i++) {
                int code = r[i].rc == -EAGAIN ? 429 : 500;
                json_t *one = r[i].s ? json_pack("{s:o}", "sandbox", sandbox_json(r[i].s))
                                     : json_pack("{s:{s:i, s:s}}", "error", "code", code, "message",
                                                 r[i].err);
                if (r[i].s)
                        fprintf(stderr, "cellvm serve: sandbox %s forked from %s\n", r[i].s->id,
                                s->id);
                else
                        fprintf(stderr, "cellvm serve: a fork of sandbox %s: %s\n", s->id,
                                r[i].err);
                if (!arr || !one || json_array_append_new(arr, one) < 0)
                        json_decref(arr), arr = NULL;
                if (r[i].s)
                        serve_put(r[i].s);
        }
        free(r);
        fprintf(stderr, "cellvm serve: sandbox %s: %lld fork(s) in %lld ms\n", s->id, (long long)n,
                (long long)(creg_now_ms() - t0));
        return arr ? reply_json(h, 201, arr) : reply_error(h, 500, "out of memory");
}

static enum MHD_Result one_sandbox(struct hreq *h, const char *prefix, const char *id,
                                   const char *action)
{
        (void)prefix;
        bool get = strcmp(h->method, "GET") == 0, post = strcmp(h->method, "POST") == 0;
        bool del = strcmp(h->method, "DELETE") == 0, put = strcmp(h->method, "PUT") == 0;
        struct sandbox *s = serve_get(id);
        enum MHD_Result rc;
        char why[512] = "";
        if (!s) {
                if (!(get || post || del || put))
                        return reply_error(h, 405, "method %s not allowed", h->method);
                return not_running(h, id, action, get, post, del);
        }
        if (!action[0] && get) {
                rc = reply_json(h, 200, listed_json(s, true));
        } else if (!action[0] && del) {
                bool ended = serve_kill(s);
                if (ended)
                        fprintf(stderr, "cellvm serve: sandbox %s killed\n", s->id);
                rc = ended ? reply_empty(h, 204)
                           : reply_error(h, 404, "sandbox \"%s\" not found", id);
        } else if (post && (strcmp(action, "timeout") == 0 || strcmp(action, "connect") == 0 ||
                            strcmp(action, "refreshes") == 0)) {
                bool is_connect = strcmp(action, "connect") == 0;
                json_t *body = object_body(h, true, &rc);
                double t = SERVE_DEFAULT_TIMEOUT_S;
                if (body && strcmp(action, "refreshes") == 0) {
                        json_t *d = json_object_get(body, "duration");
                        if (d && (!json_is_number(d) || json_number_value(d) < 0))
                                snprintf(why, sizeof(why), "duration must be seconds");
                        else if (d)
                                t = json_number_value(d);
                } else if (body) {
                        json_t *v = json_object_get(body, "timeout");
                        if (!is_connect && !v)
                                snprintf(why, sizeof(why), "timeout is required");
                        else
                                (void)timeout_of(body, &t, why, sizeof(why));
                }
                json_decref(body);
                if (!body) {
                        /* object_body queued the 400 */
                } else if (why[0]) {
                        rc = reply_error(h, 400, "%s", why);
                } else {
                        /* connect only lengthens a sandbox's life, as E2B's does */
                        int64_t left = s->deadline_ms - creg_now_ms();
                        bool change = !is_connect || t * 1000 > (double)left;
                        int r = change ? serve_set_timeout(s, t, why, sizeof(why)) : 0;
                        if (r < 0)
                                rc = reply_error(h, 500, "setting the timeout: %s", why);
                        else if (is_connect)
                                rc = reply_json(h, 200, sandbox_json(s));
                        else
                                rc = reply_empty(h, 204);
                }
        } else if (post && strcmp(action, "resume") == 0) {
                rc = reply_error(h, 409, "sandbox \"%s\" is already running", id);
        } else if (post && strcmp(action, "pause") == 0) {
                /* E2B's `memory` (the SDK's keepMemory, default true): false keeps
                 * only the files (a filesystem-only pause, serve_pause.c). */
                json_t *body = object_body(h, true, &rc);
                json_t *mem = json_object_get(body, "memory");
                bool keep_memory = !json_is_false(mem);
                if (body && mem && !json_is_boolean(mem) && !json_is_null(mem)) {
                        json_decref(body);
                        serve_put(s);
                        return reply_error(h, 400, "memory must be a boolean");
                }
                if (!body) {
                        serve_put(s);
                        return rc; /* object_body queued the 400 */
                }
                json_decref(body);
                int64_t t0 = creg_now_ms();
                int r = serve_pause(s, keep_memory, why, sizeof(why));
                if (r == 0)
                        fprintf(stderr, "cellvm serve: sandbox %s paused%s in %lld ms\n", id,
                                keep_memory ? "" : " (its files only)",
                                (long long)(creg_now_ms() - t0));
                else
                        fprintf(stderr, "cellvm serve: pausing sandbox %s: %s\n", id, why);
                rc = r == 0         ? reply_empty(h, 204)
                     : r == -ENOENT ? reply_error(h, 404, "sandbox \"%s\" not found", id)
                                    : reply_error(h, 500, "pausing sandbox %s: %s", id, why);
        } else if (post && strcmp(action, "fork") == 0) {
                rc = fork_sandbox(h, s);
        } else if (post && strcmp(action, "snapshots") == 0) {
                rc = serve_snapshot_create(h, s);
        } else if (get && strcmp(action, "metrics") == 0) {
                rc = metrics(h, s);
        } else if (put && strcmp(action, "network") == 0) {
                rc = update_network(h, s);
        } else {
                rc = reply_error(h, 404, "no such route %s %s", h->method, h->url);
        }
        serve_put(s);
        return rc;
}

/* E2B's GET /templates/aliases/{alias} (the SDKs' Template.exists: 404 is
 * false, 200 and 403 true). The image's names stand for E2B's public
 * templates, which E2B's team owns, not the caller's: 403, as E2B answers
 * its "base" (its handler checks the owner before anything else, a tag
 * included). A snapshot this server keeps (`snapshots`) is the caller's own:
 * 200 with TemplateAliasResponse. Anything else: E2B's 404. */
static enum MHD_Result template_alias(struct hreq *h, const char *alias, bool snapshots)
{
        if (strcmp(h->method, "GET") != 0)
                return reply_error(h, 405, "method %s not allowed on %s", h->method, h->url);
        char name[CKEPT_NAME_MAX + 1];
        size_t n = strcspn(alias, ":");
        if (n < sizeof(name)) {
                memcpy(name, alias, n);
                name[n] = '\0';
                if (ckept_image_name(name))
                        return reply_error(h, 403, "You don't have access to this template alias");
        }
        struct ckept sn;
        if (snapshots && !ckept_image_name(alias) && ckept_find(alias, &sn) == 0)
                return reply_json(h, 200,
                                  json_pack("{s:s, s:b}", "templateID", sn.key, "public", false));
        return reply_error(h, 404, "template '%.128s' not found", alias);
}

enum MHD_Result serve_api_dispatch(struct hreq *h, const struct api_handlers *a)
{
        const char *u = h->url;
        bool v2 = strncmp(u, "/v2/", 4) == 0;
        if (v2)
                u += 3;
        if (strcmp(u, "/sandboxes") == 0) {
                if (strcmp(h->method, "POST") == 0)
                        return a->create(h);
                if (strcmp(h->method, "GET") == 0)
                        return a->list(h, v2);
                return reply_error(h, 405, "method %s not allowed on %s", h->method, h->url);
        }
        if (!v2 && strncmp(u, "/templates/aliases/", 19) == 0)
                return template_alias(h, u + 19, a->snapshots != NULL);
        if (!v2 && (strcmp(u, "/snapshots") == 0 || strncmp(u, "/templates/", 11) == 0))
                return a->snapshots ? a->snapshots(h)
                                    : reply_error(h, 400,
                                                  "this backend keeps no snapshots (each sandbox "
                                                  "is a pod of its own)");
        if (strncmp(u, "/sandboxes/", 11) != 0)
                return reply_error(h, 404, "no such route %s %s", h->method, h->url);
        char id[72];
        const char *rest = u + 11, *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        if (n == 0 || n >= sizeof(id))
                return reply_error(h, 404, "no such route %s", h->url);
        memcpy(id, rest, n);
        id[n] = '\0';
        return a->one(h, v2 ? "/v2" : "", id, slash ? slash + 1 : "");
}

static enum MHD_Result api_done(struct hreq *h)
{
        static const struct api_handlers local = {create, list, one_sandbox, serve_snapshots_route};
        return serve_api_dispatch(h, &local);
}

const struct hroute route_api = {.done = api_done, .body_max = HTTP_JSON_MAX};
