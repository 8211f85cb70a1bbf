/*
 * cellvm serve --backend agent-sandbox: E2B's control plane for a cluster
 * (docs/KUBERNETES.md). A sandbox is a SandboxClaim on agent-sandbox's warm
 * pool, bound to a pod that runs `cellvm serve --single`; its E2B id is the
 * claim's name. The cluster is the only store: create makes the claim, waits
 * for its pod, creates the pod's one sandbox and writes that sandbox's id
 * into the claim (an annotation); kill deletes the claim; list reads the
 * claims carrying cellvm's label; a timeout moves the claim's
 * spec.lifecycle.shutdownTime (agent-sandbox deletes it then) as well as the
 * guest's own deadline. Everything else of a sandbox (envd, the code
 * interpreter, its ports) is proxied to its pod, or to agent-sandbox's router
 * with its X-Sandbox-* headers. No state is kept here, so replicas can serve
 * side by side. What the API server and the pods answer is parsed within
 * bounds (KUBE_BODY_MAX, POD_BODY_MAX) before it is used.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kube_api.h"
#include "registry.h"
#include "serve_http.h"

#define CLAIMS "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/%s/sandboxclaims"
#define SANDBOXES "/apis/agents.x-k8s.io/v1beta1/namespaces/%s/sandboxes"
#define LABEL_KEY "app.kubernetes.io/managed-by"
#define LABEL_VALUE "cellvm-serve"
#define ANN_POD_ID "cellvm.dev/pod-sandbox-id"
#define ANN_TEMPLATE "cellvm.dev/template-id"
#define ANN_METADATA "cellvm.dev/metadata"
#define CLAIM_WAIT_MS 120000 /* a warm pool binds at once; an empty one starts a pod */
#define POD_BODY_MAX (1u << 20)
#define PROXY_BODY_MAX (64u << 20) /* a request body proxied to a pod (uploads) */
#define RESPONSE_HEAD_MAX (64u * 1024u)
#define LIST_LIMIT_MAX 100

static struct {
        bool on;
        const char *ns, *router, *pool;
        unsigned pod_port;
        struct kube_api *api;
} kb = {.pool = "cellvm", .pod_port = 3000};

/* --- options ---------------------------------------------------------------- */

static bool dns_name(const char *s, size_t max)
{
        size_t n = strlen(s);
        return n > 0 && n <= max && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

int serve_kube_option(int opt, const char *arg)
{
        char *end;
        unsigned long v;
        switch (opt) {
        case 'b':
                if (strcmp(arg, "agent-sandbox") != 0) {
                        fputs("cellvm serve: --backend takes agent-sandbox\n", stderr);
                        return -EINVAL;
                }
                kb.on = true;
                return 0;
        case 'N':
        case 'w':
                if (!dns_name(arg, 63)) {
                        fprintf(stderr, "cellvm serve: --%s takes a Kubernetes name\n",
                                opt == 'N' ? "namespace" : "warm-pool");
                        return -EINVAL;
                }
                *(opt == 'N' ? &kb.ns : &kb.pool) = arg;
                return 0;
        case 'r':
                if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0) {
                        fputs("cellvm serve: --router takes an http(s):// URL\n", stderr);
                        return -EINVAL;
                }
                kb.router = arg;
                return 0;
        case 'P':
                v = strtoul(arg, &end, 10);
                if (*end || !arg[0] || v == 0 || v > 65535) {
                        fputs("cellvm serve: --pod-port takes a port\n", stderr);
                        return -EINVAL;
                }
                kb.pod_port = (unsigned)v;
                return 0;
        }
        return -EINVAL;
}

bool serve_kube_enabled(void)
{
        return kb.on;
}

void serve_kube_stop(void)
{
        kube_api_close(kb.api);
        kb.api = NULL;
}

/* --- the cluster's objects ----------------------------------------------------- */

static int api(const char *method, const char *fmt, const char *name, const char *ctype,
               const json_t *body, long *status, json_t **out, char *err, size_t errlen)
{
        char path[512];
        int n = snprintf(path, sizeof(path), fmt, kb.ns);
        if (name)
                snprintf(path + n, sizeof(path) - (size_t)n, "/%s", name);
        return kube_api_call(kb.api, method, path, ctype, body, status, out, err, errlen);
}

static const char *str_at(json_t *o, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(o, a);
        if (v && b)
                v = json_object_get(v, b);
        if (v && c)
                v = json_object_get(v, c);
        return json_string_value(v);
}

/* Where a sandbox's requests go. */
struct target {
        char base[600];    /* http://pod:port, or the router */
        char pod_id[72];   /* the pod's own id of its sandbox */
        char sandbox[256]; /* agent-sandbox's Sandbox (the router's X-Sandbox-ID) */
};

static bool address_ok(const char *a)
{
        size_t n = strlen(a);
        return n > 0 && n < 256 &&
               strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") == n;
}

/* The pod's address from the claim's status, else from its Sandbox's. */
static int pod_address(json_t *claim, const char *sandbox, char *out, size_t outlen, char *err,
                       size_t errlen)
{
        json_t *ips =
            json_object_get(json_object_get(json_object_get(claim, "status"), "sandbox"), "podIPs");
        const char *ip = json_string_value(json_array_get(ips, 0));
        json_t *sb = NULL;
        if (!ip) {
                long st;
                int rc = api("GET", SANDBOXES, sandbox, NULL, NULL, &st, &sb, err, errlen);
                if (rc < 0)
                        return rc;
                if (st != 200) {
                        json_decref(sb);
                        return -EAGAIN;
                }
                json_t *status = json_object_get(sb, "status");
                ip = json_string_value(json_array_get(json_object_get(status, "podIPs"), 0));
                if (!ip)
                        ip = json_string_value(json_object_get(status, "serviceFQDN"));
        }
        int rc = -EAGAIN;
        if (ip && address_ok(ip)) {
                snprintf(out, outlen, strchr(ip, ':') ? "http://[%s]:%u" : "http://%s:%u", ip,
                         kb.pod_port);
                rc = 0;
        } else if (ip) {
                snprintf(err, errlen, "sandbox %s: a malformed pod address", sandbox);
                rc = -EINVAL;
        }
        json_decref(sb);
        return rc;
}

/* Claim `id` (*out, referenced) when it is one of cellvm's (its label):
 * 0, -ENOENT, or another negative errno with `err`. Claims of others in
 * the namespace are never read, proxied to or deleted for a client. */
static int get_claim(const char *id, json_t **out, char *err, size_t errlen)
{
        *out = NULL;
        if (!dns_name(id, 63))
                return -ENOENT;
        long st;
        json_t *c = NULL;
        int rc = api("GET", CLAIMS, id, NULL, NULL, &st, &c, err, errlen);
        if (rc < 0)
                return rc;
        const char *owner = str_at(c, "metadata", "labels", LABEL_KEY);
        if (st == 200 && json_is_object(c) && owner && strcmp(owner, LABEL_VALUE) == 0) {
                *out = c;
                return 0;
        }
        json_decref(c);
        if (st == 200 || st == 404)
                return -ENOENT;
        snprintf(err, errlen, "reading claim %s: HTTP %ld", id, st);
        return -EIO;
}

/* Claim `id`'s target: 0, -ENOENT (no such claim of cellvm's), -EAGAIN (not
 * bound to a ready pod yet; with `need_pod_id`, or its sandbox not made
 * yet), or another negative errno with `err`. */
static int claim_target(const char *id, bool need_pod_id, struct target *t, char *err,
                        size_t errlen)
{
        memset(t, 0, sizeof(*t));
        json_t *c;
        int rc = get_claim(id, &c, err, errlen);
        if (rc < 0)
                return rc;
        const char *pod_id = str_at(c, "metadata", "annotations", ANN_POD_ID);
        const char *sandbox = str_at(c, "status", "sandbox", "name");
        rc = -EAGAIN;
        if (sandbox && dns_name(sandbox, 253) && (pod_id || !need_pod_id)) {
                snprintf(t->sandbox, sizeof(t->sandbox), "%s", sandbox);
                if (pod_id && (!dns_name(pod_id, 63) || strlen(pod_id) >= sizeof(t->pod_id))) {
                        snprintf(err, errlen, "claim %s: a malformed %s", id, ANN_POD_ID);
                        rc = -EINVAL;
                } else {
                        snprintf(t->pod_id, sizeof(t->pod_id), "%s", pod_id ? pod_id : "");
                        rc = kb.router
                                 ? (snprintf(t->base, sizeof(t->base), "%s", kb.router), 0)
                                 : pod_address(c, sandbox, t->base, sizeof(t->base), err, errlen);
                }
        }
        json_decref(c);
        return rc;
}

/* Headers every request to a pod carries: the router's, when there is one. */
static struct curl_slist *target_headers(const struct target *t, struct curl_slist *l)
{
        char line[512];
        if (!kb.router)
                return l;
        snprintf(line, sizeof(line), "X-Sandbox-ID: %s", t->sandbox);
        l = l ? curl_slist_append(l, line) : NULL;
        snprintf(line, sizeof(line), "X-Sandbox-Namespace: %s", kb.ns);
        l = l ? curl_slist_append(l, line) : NULL;
        snprintf(line, sizeof(line), "X-Sandbox-Port: %u", kb.pod_port);
        return l ? curl_slist_append(l, line) : NULL;
}

/* A control-plane call to the pod's own server (its API key is this
 * server's: the manifests give both the same Secret). 0 with the status and
 * the JSON answer (NULL if none), or a negative errno with `err`. */
static int pod_call(const struct target *t, const char *method, const char *path, const char *body,
                    size_t body_len, long *status, json_t **out, char *err, size_t errlen)
{
        char url[1200], key[200];
        snprintf(url, sizeof(url), "%s%s", t->base, path);
        snprintf(key, sizeof(key), "X-API-Key: %s", serve.api_key);
        struct curl_slist *h = curl_slist_append(NULL, key);
        h = h ? curl_slist_append(h, "Content-Type: application/json") : NULL;
        h = h ? curl_slist_append(h, "Expect:") : NULL;
        h = target_headers(t, h);
        int rc = h ? kube_http_json(NULL, method, url, h, body, body_len, POD_BODY_MAX, 120, status,
                                    out, err, errlen)
                   : -ENOMEM;
        if (!h)
                snprintf(err, errlen, "out of memory");
        curl_slist_free_all(h);
        return rc;
}

/* A pod's sandbox as this server names it: its claim's id and domain. */
static void rename_sandbox(json_t *o, const char *id)
{
        if (!json_is_object(o))
                return;
        if (json_object_get(o, "sandboxID"))
                json_object_set_new(o, "sandboxID", json_string(id));
        if (json_object_get(o, "domain"))
                json_object_set_new(o, "domain", json_string(serve.domain));
}

static void iso_seconds(char *out, size_t outlen, int64_t ms)
{
        time_t t = (time_t)((ms + 999) / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The claim's shutdownTime follows the pod's sandbox's deadline (its endAt). */
static int follow_deadline(const char *id, const struct target *t, char *err, size_t errlen)
{
        char path[160];
        snprintf(path, sizeof(path), "/sandboxes/%s", t->pod_id);
        long st;
        json_t *info;
        int rc = pod_call(t, "GET", path, NULL, 0, &st, &info, err, errlen);
        if (rc < 0)
                return rc;
        int64_t end_ms;
        const char *end = json_string_value(json_object_get(info, "endAt"));
        if (st != 200 || !end || parse_iso_ms(end, &end_ms) < 0) {
                json_decref(info);
                snprintf(err, errlen, "the pod did not say its sandbox's deadline (HTTP %ld)", st);
                return -EIO;
        }
        json_decref(info);
        char when[40];
        iso_seconds(when, sizeof(when), end_ms);
        json_t *patch = json_pack("{s:{s:{s:s}}}", "spec", "lifecycle", "shutdownTime", when);
        json_t *ans = NULL;
        rc = patch ? api("PATCH", CLAIMS, id, "application/merge-patch+json", patch, &st, &ans, err,
                         errlen)
                   : -ENOMEM;
        json_decref(patch);
        json_decref(ans);
        if (rc == 0 && st != 200) {
                snprintf(err, errlen, "patching claim %s: HTTP %ld", id, st);
                rc = -EIO;
        }
        return rc;
}

/* Deletes claim `id` if it is cellvm's, and only the one read (its uid). */
static int delete_claim(const char *id, char *err, size_t errlen)
{
        json_t *c;
        int rc = get_claim(id, &c, err, errlen);
        if (rc < 0)
                return rc;
        json_t *opts = json_pack("{s:s, s:s, s:{s:O?}}", "apiVersion", "v1", "kind",
                                 "DeleteOptions", "preconditions", "uid",
                                 json_object_get(json_object_get(c, "metadata"), "uid"));
        json_decref(c);
        long st;
        json_t *ans = NULL;
        rc = opts ? api("DELETE", CLAIMS, id, NULL, opts, &st, &ans, err, errlen) : -ENOMEM;
        json_decref(opts);
        json_decref(ans);
        return rc < 0 ? rc : st == 404 || st == 409 ? -ENOENT : st / 100 == 2 ? 0 : -EIO;
}

static void nap_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* --- the control plane ----------------------------------------------------------- */

/* The create the pod gets: the client's, with E2B_SANDBOX_ID the id this
 * server reports (the claim's, not the pod's own sandbox's) under its
 * envVars, which override it as they do the pod's other defaults. A string
 * to free, or NULL (no memory). */
static char *pod_create_body(json_t *body, const char *id)
{
        json_t *envs = json_pack("{s:s}", "E2B_SANDBOX_ID", id);
        json_t *mine = json_object_get(body, "envVars");
        char *text = NULL;
        if (envs && (!json_is_object(mine) || json_object_update(envs, mine) == 0) &&
            json_object_set(body, "envVars", envs) == 0)
                text = json_dumps(body, JSON_COMPACT);
        json_decref(envs);
        return text;
}

static enum MHD_Result create(struct hreq *h)
{
        json_t *body = json_loadb(h->body, h->len, 0, NULL);
        char err[512] = "";
        double timeout;
        if (!json_is_object(body)) {
                json_decref(body);
                return reply_error(h, 400, "the body must be a JSON object");
        }
        /* Checked before a claim takes a pool pod, which a refusal would waste. */
        int rc = serve_check_create(body, false, &timeout, err, sizeof(err));
        if (rc < 0) {
                json_decref(body);
                return reply_error(h, rc == -ENOENT ? 404 : 400, "%s", err);
        }
        json_t *md = json_object_get(body, "metadata"), *tpl = json_object_get(body, "templateID");
        char id[32] = "cellvm-", hex[16], when[40];
        if (serve_random_hex(hex, 12) < 0) {
                json_decref(body);
                return reply_error(h, 500, "no randomness for the sandbox's name");
        }
        strcat(id, hex);
        iso_seconds(when, sizeof(when), creg_now_ms() + (int64_t)(timeout * 1000));
        char *md_text = json_is_object(md) ? json_dumps(md, JSON_COMPACT) : strdup("{}");
        json_t *claim = json_pack(
            "{s:s, s:s, s:{s:s, s:{s:s}, s:{s:s, s:s?}}, s:{s:{s:s}, s:{s:s, s:s}}}", "apiVersion",
            "extensions.agents.x-k8s.io/v1beta1", "kind", "SandboxClaim", "metadata", "name", id,
            "labels", LABEL_KEY, LABEL_VALUE, "annotations", ANN_TEMPLATE,
            tpl ? json_string_value(tpl) : "base", ANN_METADATA, md_text, "spec", "warmPoolRef",
            "name", kb.pool, "lifecycle", "shutdownTime", when, "shutdownPolicy", "Delete");
        free(md_text);
        char *fwd = pod_create_body(body, id);
        json_decref(body);
        long st;
        json_t *ans = NULL;
        rc = claim && fwd ? api("POST", CLAIMS, NULL, NULL, claim, &st, &ans, err, sizeof(err))
                          : -ENOMEM;
        json_decref(claim);
        if (rc < 0 || st / 100 != 2) {
                free(fwd);
                if (rc == 0)
                        snprintf(err, sizeof(err), "HTTP %ld: %.300s", st,
                                 str_at(ans, "message", NULL, NULL)
                                     ? str_at(ans, "message", NULL, NULL)
                                     : "");
                json_decref(ans);
                return reply_error(h, 500, "creating the SandboxClaim: %s", err);
        }
        json_decref(ans);
        int64_t t0 = creg_now_ms();
        struct target t;
        while ((rc = claim_target(id, false, &t, err, sizeof(err))) == -EAGAIN &&
               creg_now_ms() - t0 < CLAIM_WAIT_MS)
                nap_ms(100);
        json_t *made = NULL;
        if (rc == 0)
                rc = pod_call(&t, "POST", "/sandboxes", fwd, strlen(fwd), &st, &made, err,
                              sizeof(err));
        free(fwd);
        const char *pod_id = json_string_value(json_object_get(made, "sandboxID"));
        if (rc == 0 && st == 201 && pod_id && dns_name(pod_id, 63)) {
                json_t *patch =
                    json_pack("{s:{s:{s:s}}}", "metadata", "annotations", ANN_POD_ID, pod_id);
                rc = patch ? api("PATCH", CLAIMS, id, "application/merge-patch+json", patch, &st,
                                 &ans, err, sizeof(err))
                           : -ENOMEM;
                json_decref(patch);
                json_decref(ans);
                if (rc == 0 && st != 200) {
                        snprintf(err, sizeof(err), "annotating the claim: HTTP %ld", st);
                        rc = -EIO;
                }
                if (rc == 0) {
                        fprintf(stderr, "cellvm serve: sandbox %s (claim of %s) in %lld ms\n", id,
                                t.sandbox, (long long)(creg_now_ms() - t0));
                        rename_sandbox(made, id);
                        return reply_json(h, 201, made);
                }
        }
        /* The claim without its sandbox is of no use: it goes (its pod with it). */
        char ignored[64];
        (void)delete_claim(id, ignored, sizeof(ignored));
        if (rc == -EAGAIN)
                return reply_error(h, 503,
                                   "no pod of warm pool %s was bound to claim %s within %d s",
                                   kb.pool, id, CLAIM_WAIT_MS / 1000);
        if (rc < 0)
                return reply_error(h, 502, "%s", err);
        /* The pod refused (a bad request, its limit): its answer stands. */
        return made ? reply_json(h, (unsigned)st, made)
                    : reply_error(h, 502, "the pod: HTTP %ld", st);
}

static int by_start_desc(const void *a, const void *b)
{
        json_t *const *x = a, *const *y = b;
        int c = strcmp(json_string_value(json_object_get(*y, "startedAt")),
                       json_string_value(json_object_get(*x, "startedAt")));
        /* Ties by name: the pages of a nextToken walk are the same each time. */
        return c ? c
                 : strcmp(json_string_value(json_object_get(*x, "sandboxID")),
                          json_string_value(json_object_get(*y, "sandboxID")));
}

static enum MHD_Result list(struct hreq *h, bool v2)
{
        const char *meta = hreq_query(h, "metadata"), *state = hreq_query(h, "state");
        const char *next = hreq_query(h, "nextToken");
        long limit;
        if (!hreq_limit(h, LIST_LIMIT_MAX, &limit))
                return reply_error(h, 400, "limit: 1 to %d", LIST_LIMIT_MAX);
        char err[512];
        long st;
        json_t *ans = NULL;
        int rc = api("GET", CLAIMS "?labelSelector=" LABEL_KEY "%%3D" LABEL_VALUE, NULL, NULL, NULL,
                     &st, &ans, err, sizeof(err));
        if (rc < 0 || st != 200) {
                json_decref(ans);
                return reply_error(h, 502, "listing the SandboxClaims: %s",
                                   rc < 0 ? err : "the API server refused");
        }
        json_t *items = json_object_get(ans, "items"), *c;
        size_t n = json_array_size(items), i, k = 0;
        json_t **found = calloc(n + 1, sizeof(*found));
        json_array_foreach(items, i, c)
        {
                const char *name = str_at(c, "metadata", "name", NULL);
                const char *created = str_at(c, "metadata", "creationTimestamp", NULL);
                const char *end = str_at(c, "spec", "lifecycle", "shutdownTime");
                const char *tpl = str_at(c, "metadata", "annotations", ANN_TEMPLATE);
                const char *mdt = str_at(c, "metadata", "annotations", ANN_METADATA);
                int64_t start_ms, end_ms;
                /* Claims still being made (no pod sandbox yet) are not listed. */
                if (!found || !name || !str_at(c, "metadata", "annotations", ANN_POD_ID) ||
                    !created || parse_iso_ms(created, &start_ms) < 0 || !end ||
                    parse_iso_ms(end, &end_ms) < 0 || !dns_name(name, 63))
                        continue;
                json_t *md = mdt ? json_loads(mdt, 0, NULL) : NULL;
                if (!json_is_object(md)) {
                        json_decref(md);
                        md = json_object();
                }
                if (!serve_metadata_matches(md, meta) ||
                    (state && state[0] && !strstr(state, "running"))) {
                        json_decref(md);
                        continue;
                }
                char started[40], ends[40];
                iso_time(started, sizeof(started), start_ms);
                iso_time(ends, sizeof(ends), end_ms);
                found[k] = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:o, s:s, s:s}",
                                     "templateID", tpl ? tpl : "base", "sandboxID", name,
                                     "clientID", "cellvm", "startedAt", started, "endAt", ends,
                                     "cpuCount", (int)serve.vcpus, "memoryMB", (int)serve.memory_mb,
                                     "diskSizeMB", 0, "metadata", md, "state", "running",
                                     "envdVersion", SERVE_ENVD_VERSION);
                if (found[k])
                        k++;
        }
        json_decref(ans);
        if (!found)
                return reply_error(h, 500, "out of memory");
        qsort(found, k, sizeof(*found), by_start_desc);
        /* Newest first, as E2B lists; v2's token is the id the next page starts at
         * (a claim deleted meanwhile ends the walk, as it does on one host). */
        json_t *arr = json_array();
        bool started = !next || !v2;
        char next_token[64] = "";
        for (size_t j = 0; j < k; j++) {
                const char *id = json_string_value(json_object_get(found[j], "sandboxID"));
                if (!started && strcmp(id, next) == 0)
                        started = true;
                if (arr && started && !next_token[0] && v2 && (long)json_array_size(arr) == limit)
                        snprintf(next_token, sizeof(next_token), "%s", id);
                else if (arr && started && !next_token[0])
                        json_array_append(arr, found[j]);
                json_decref(found[j]);
        }
        free(found);
        return reply_json_page(h, arr, next_token[0] ? next_token : NULL);
}

static enum MHD_Result one_sandbox(struct hreq *h, const char *prefix, const char *id,
                                   const char *action)
{
        char err[512] = "";
        bool del = strcmp(h->method, "DELETE") == 0;
        if (del && !action[0]) {
                int rc = dns_name(id, 63) ? delete_claim(id, err, sizeof(err)) : -ENOENT;
                if (rc == 0)
                        fprintf(stderr, "cellvm serve: sandbox %s killed (claim deleted)\n", id);
                return rc == 0         ? reply_empty(h, 204)
                       : rc == -ENOENT ? reply_error(h, 404, "sandbox \"%s\" not found", id)
                                       : reply_error(h, 502, "deleting claim %s: %s", id, err);
        }
        if (strspn(action, "abcdefghijklmnopqrstuvwxyz") != strlen(action))
                return reply_error(h, 404, "no such route %s %s", h->method, h->url);
        if (strcmp(action, "pause") == 0 || strcmp(action, "resume") == 0 ||
            strcmp(action, "fork") == 0)
                return reply_error(h, 400,
                                   "%s is not supported by --backend agent-sandbox (a pod serves "
                                   "one running sandbox)",
                                   action);
        struct target t;
        int rc = claim_target(id, true, &t, err, sizeof(err));
        if (rc == -ENOENT || rc == -EAGAIN)
                return reply_error(h, 404, "sandbox \"%s\" not found", id);
        if (rc < 0)
                return reply_error(h, 502, "%s", err);
        /* The pod's control plane, under its own id; the query as sent. */
        const char *q = h->raw_uri ? strchr(h->raw_uri, '?') : NULL;
        char path[1024];
        snprintf(path, sizeof(path), "%s/sandboxes/%s%s%s%.600s", prefix, t.pod_id,
                 action[0] ? "/" : "", action, q ? q : "");
        long st;
        json_t *ans;
        rc = pod_call(&t, h->method, path, h->len ? h->body : NULL, h->len, &st, &ans, err,
                      sizeof(err));
        if (rc < 0)
                return reply_error(h, 502, "%s", err);
        bool moves = strcmp(action, "timeout") == 0 || strcmp(action, "connect") == 0 ||
                     strcmp(action, "refreshes") == 0;
        if (moves && st / 100 == 2 && follow_deadline(id, &t, err, sizeof(err)) < 0)
                fprintf(stderr, "cellvm serve: sandbox %s: the claim's shutdownTime: %s\n", id,
                        err);
        rename_sandbox(ans, id);
        if (!ans)
                return reply_empty(h, (unsigned)st);
        return reply_json(h, (unsigned)st, ans);
}

static enum MHD_Result api_done(struct hreq *h)
{
        static const struct api_handlers claims = {create, list, one_sandbox, NULL};
        return serve_api_dispatch(h, &claims);
}

static const struct hroute route_kube_api = {.done = api_done, .body_max = HTTP_JSON_MAX};

/* --- sandbox traffic, proxied ---------------------------------------------------- */

struct proxy {
        struct hstream hs; /* first: the stream callbacks get this */
        char id[72];
        unsigned port;
        CURLM *multi;
        CURL *easy;
        struct curl_slist *req_headers;
        char *body; /* the request's, taken from the hreq */
        size_t body_len;
        long status;
        bool head_done, transfer_done, in_multi;
        CURLcode result;
        json_t *resp_headers; /* [[name, value], ...] of the final response */
        size_t head_bytes;
};

static bool hop_by_hop(const char *name)
{
        static const char *const names[] = {
            "connection", "keep-alive",       "transfer-encoding", "te",   "trailer",
            "upgrade",    "proxy-connection", "content-length",    "host", "expect"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcasecmp(name, names[i]) == 0)
                        return true;
        return false;
}

static enum MHD_Result add_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value)
{
        (void)kind;
        struct proxy *p = cls;
        if (!p->req_headers || hop_by_hop(key) || strcasecmp(key, "E2b-Sandbox-Id") == 0 ||
            strcasecmp(key, "E2b-Sandbox-Port") == 0 || strncasecmp(key, "X-Sandbox-", 10) == 0)
                return MHD_YES;
        size_t n = strlen(key) + strlen(value) + 3;
        char *line = malloc(n);
        if (!line) {
                curl_slist_free_all(p->req_headers);
                p->req_headers = NULL;
                return MHD_NO;
        }
        snprintf(line, n, "%s: %s", key, value);
        struct curl_slist *l = curl_slist_append(p->req_headers, line);
        free(line);
        if (!l)
                curl_slist_free_all(p->req_headers);
        p->req_headers = l;
        return MHD_YES;
}

static size_t on_header(char *b, size_t size, size_t nmemb, void *ud)
{
        struct proxy *p = ud;
        size_t n = size * nmemb;
        p->head_bytes += n;
        if (p->head_bytes > RESPONSE_HEAD_MAX)
                return 0;
        if (n >= 5 && strncmp(b, "HTTP/", 5) == 0) { /* a status line: a new (final?) head */
                json_array_clear(p->resp_headers);
                return n;
        }
        if (n <= 2 && (b[0] == '\r' || b[0] == '\n')) {
                long code = 0;
                curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
                if (code >= 200) {
                        p->status = code;
                        p->head_done = true;
                }
                return n;
        }
        const char *colon = memchr(b, ':', n);
        if (!colon)
                return n;
        size_t kl = (size_t)(colon - b);
        const char *v = colon + 1, *e = b + n;
        while (v < e && (*v == ' ' || *v == '\t'))
                v++;
        while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
                e--;
        json_t *pair = json_pack("[s#, s#]", b, (int)kl, v, (int)(e - v));
        if (!pair)
                return 0;
        json_array_append_new(p->resp_headers, pair);
        return n;
}

static size_t on_body(char *b, size_t size, size_t nmemb, void *ud)
{
        struct proxy *p = ud;
        return hstream_put(&p->hs, b, size * nmemb) < 0 ? 0 : size * nmemb;
}

/* Moves the transfer on, waiting up to a second for the pod. */
static void pump(struct proxy *p)
{
        int running = 0;
        curl_multi_perform(p->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(p->multi, &left)))
                if (m->msg == CURLMSG_DONE) {
                        p->transfer_done = true;
                        p->result = m->data.result;
                }
        if (!p->transfer_done && running)
                curl_multi_poll(p->multi, NULL, 0, 1000, NULL);
}

static int proxy_fill(struct hstream *st)
{
        struct proxy *p = (struct proxy *)st;
        size_t before = st->len;
        while (!p->transfer_done && st->len == before)
                pump(p);
        if (p->transfer_done && st->len == before) {
                if (p->result != CURLE_OK)
                        return -1; /* cut off, as a broken pod connection is */
                st->done = true;
        }
        return 0;
}

static void proxy_free(void *ud)
{
        struct proxy *p = ud;
        if (!p)
                return;
        if (p->in_multi)
                curl_multi_remove_handle(p->multi, p->easy);
        if (p->easy)
                curl_easy_cleanup(p->easy);
        if (p->multi)
                curl_multi_cleanup(p->multi);
        curl_slist_free_all(p->req_headers);
        json_decref(p->resp_headers);
        free(p->body);
        free(p);
}

static void proxy_release(struct hstream *st)
{
        /* The hstream is freed by its caller: only what it points to goes. */
        struct proxy *p = (struct proxy *)st;
        if (p->in_multi)
                curl_multi_remove_handle(p->multi, p->easy);
        p->in_multi = false;
        if (p->easy)
                curl_easy_cleanup(p->easy);
        if (p->multi)
                curl_multi_cleanup(p->multi);
        p->easy = NULL;
        p->multi = NULL;
        curl_slist_free_all(p->req_headers);
        p->req_headers = NULL;
        json_decref(p->resp_headers);
        p->resp_headers = NULL;
        free(p->body);
        p->body = NULL;
}

static enum MHD_Result proxy_done(struct hreq *h)
{
        struct proxy *p = h->state;
        char err[512] = "";
        struct target t;
        int rc = claim_target(p->id, true, &t, err, sizeof(err));
        if (rc == -ENOENT || rc == -EAGAIN) /* E2B's edge: a sandbox not running is a 502 */
                return reply_error(h, 502, "The sandbox %.64s was not found", p->id);
        if (rc < 0)
                return reply_error(h, 502, "%s", err);
        char url[1800], line[200];
        snprintf(url, sizeof(url), "%s%.1100s", t.base, h->raw_uri ? h->raw_uri : h->url);
        p->req_headers = curl_slist_append(NULL, "Expect:");
        MHD_get_connection_values(h->conn, MHD_HEADER_KIND, add_request_header, p);
        snprintf(line, sizeof(line), "E2b-Sandbox-Id: %s", t.pod_id);
        p->req_headers = p->req_headers ? curl_slist_append(p->req_headers, line) : NULL;
        snprintf(line, sizeof(line), "E2b-Sandbox-Port: %u", p->port);
        p->req_headers = p->req_headers ? curl_slist_append(p->req_headers, line) : NULL;
        p->req_headers = target_headers(&t, p->req_headers);
        p->multi = curl_multi_init();
        p->easy = curl_easy_init();
        p->resp_headers = json_array();
        if (!p->req_headers || !p->multi || !p->easy || !p->resp_headers)
                return reply_error(h, 500, "out of memory");
        p->body = hreq_take_body(h, &p->body_len);
        CURL *c = p->easy;
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->req_headers);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* the path as the client sent it */
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, p);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
        if (strcmp(h->method, "HEAD") == 0) {
                curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        } else {
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, h->method);
                if (p->body_len || strcmp(h->method, "GET") != 0) {
                        curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body ? p->body : "");
                        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->body_len);
                }
        }
        if (curl_multi_add_handle(p->multi, c) != CURLM_OK)
                return reply_error(h, 500, "libcurl refused the request");
        p->in_multi = true;
        while (!p->head_done && !p->transfer_done)
                pump(p);
        if (!p->head_done)
                return reply_error(h, 502, "the sandbox's pod (%.200s): %s", t.base,
                                   curl_easy_strerror(p->result));
        /* The stream takes the proxy over; the hreq no longer frees it. */
        h->state = NULL;
        p->hs.fill = proxy_fill;
        p->hs.release = proxy_release;
        struct MHD_Response *r = hstream_response(&p->hs, MHD_SIZE_UNKNOWN);
        if (!r)
                return MHD_NO;
        size_t i;
        json_t *pair;
        json_array_foreach(p->resp_headers, i, pair)
        {
                const char *k = json_string_value(json_array_get(pair, 0));
                if (k && !hop_by_hop(k))
                        MHD_add_response_header(r, k, json_string_value(json_array_get(pair, 1)));
        }
        enum MHD_Result res = MHD_queue_response(h->conn, (unsigned)p->status, r);
        MHD_destroy_response(r);
        return res;
}

static const struct hroute route_kube_proxy = {.done = proxy_done, .body_max = PROXY_BODY_MAX};

static int kube_sandbox_route(struct hreq *h, const char *id, unsigned port)
{
        struct proxy *p = calloc(1, sizeof(*p));
        if (!p) {
                snprintf(h->why, sizeof(h->why), "out of memory");
                return 500;
        }
        snprintf(p->id, sizeof(p->id), "%s", id);
        p->port = port;
        h->state = p;
        h->free_state = proxy_free;
        h->route = &route_kube_proxy;
        return 0;
}

static const struct serve_backend kube_backend = {&route_kube_api, kube_sandbox_route};

int serve_kube_start(char *err, size_t errlen)
{
        static char ns[64];
        int rc = kube_api_open(&kb.api, ns, sizeof(ns), err, errlen);
        if (rc < 0)
                return rc;
        if (!kb.ns)
                kb.ns = ns[0] && dns_name(ns, 63) ? ns : "default";
        serve_backend = &kube_backend;
        return 0;
}
