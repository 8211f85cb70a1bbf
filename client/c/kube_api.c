/* The Kubernetes API client of cellvm serve --backend agent-sandbox
 * (kube_api.h): credentials from the service account or a kubeconfig (YAML,
 * read with libyaml into jansson values), calls through libcurl. */
#include "kube_api.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "serve_http.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define FILE_MAX (1u << 20) /* a kubeconfig, a token, a certificate */
#define YAML_DEPTH_MAX 32
#define CALL_TIMEOUT_S 30L

struct kube_api {
        char server[512];
        char *ca_pem;             /* the CA bundle (PEM), or NULL: the system's */
        char *token;              /* a bearer token, or NULL */
        char *token_file;         /* re-read on each call: projected tokens rotate */
        char *cert_pem, *key_pem; /* a client certificate, or NULL */
        bool insecure;
};

/* A whole small file, NUL-terminated: 0 with *out (free it) or a negative errno. */
static int read_small(const char *path, char **out, size_t *len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t cap = 4096, n = 0;
        char *b = malloc(cap);
        int rc = b ? 0 : -ENOMEM;
        while (rc == 0) {
                if (n + 1 == cap) {
                        if (cap >= FILE_MAX) {
                                rc = -EFBIG;
                                break;
                        }
                        char *nb = realloc(b, cap * 2);
                        if (!nb) {
                                rc = -ENOMEM;
                                break;
                        }
                        b = nb;
                        cap *= 2;
                }
                ssize_t r = read(fd, b + n, cap - 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        rc = -errno;
                else if (r == 0)
                        break;
                else
                        n += (size_t)r;
        }
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        if (rc < 0) {
                free(b);
                return rc;
        }
        b[n] = '\0';
        *out = b;
        if (len)
                *len = n;
        return 0;
}

/* --- kubeconfig: YAML into jansson ------------------------------------------ */

/* The node the parser's next events make: mappings and sequences nest,
 * scalars are strings (the fields read here are all strings or "true"). */
static json_t *yaml_node(yaml_parser_t *p, const yaml_event_t *first, int depth)
{
        if (depth > YAML_DEPTH_MAX)
                return NULL;
        if (first->type == YAML_SCALAR_EVENT)
                return json_stringn((const char *)first->data.scalar.value,
                                    first->data.scalar.length);
        if (first->type != YAML_MAPPING_START_EVENT && first->type != YAML_SEQUENCE_START_EVENT)
                return NULL; /* aliases and the like: not in a kubeconfig */
        bool map = first->type == YAML_MAPPING_START_EVENT;
        json_t *out = map ? json_object() : json_array();
        char *key = NULL;
        while (out) {
                yaml_event_t ev;
                if (!yaml_parser_parse(p, &ev)) {
                        json_decref(out);
                        out = NULL;
                        break;
                }
                if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
                        yaml_event_delete(&ev);
                        break;
                }
                if (map && !key) {
                        if (ev.type != YAML_SCALAR_EVENT ||
                            !(key = strndup((const char *)ev.data.scalar.value,
                                            ev.data.scalar.length))) {
                                json_decref(out);
                                out = NULL;
                        }
                        yaml_event_delete(&ev);
                        continue;
                }
                json_t *v = yaml_node(p, &ev, depth + 1);
                yaml_event_delete(&ev);
                if (!v) {
                        json_decref(out);
                        out = NULL;
                        break;
                }
                if (map) {
                        json_object_set_new(out, key, v);
                        free(key);
                        key = NULL;
                } else {
                        json_array_append_new(out, v);
                }
        }
        free(key);
        return out;
}

/* The first document of `text` (YAML, or JSON, which is YAML) as JSON; NULL
 * when it is not a mapping. */
static json_t *yaml_to_json(const char *text, size_t len)
{
        yaml_parser_t p;
        if (!yaml_parser_initialize(&p))
                return NULL;
        yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
        json_t *out = NULL;
        for (;;) {
                yaml_event_t ev;
                if (!yaml_parser_parse(&p, &ev))
                        break;
                yaml_event_type_t t = ev.type;
                if (t == YAML_MAPPING_START_EVENT)
                        out = yaml_node(&p, &ev, 0);
                yaml_event_delete(&ev);
                if (t == YAML_MAPPING_START_EVENT || t == YAML_STREAM_END_EVENT ||
                    t == YAML_SEQUENCE_START_EVENT || t == YAML_SCALAR_EVENT)
                        break;
        }
        yaml_parser_delete(&p);
        return out;
}

/* The entry `name` of a kubeconfig list (clusters, contexts, users): its
 * inner object (`field`). */
static json_t *named(json_t *cfg, const char *list, const char *name, const char *field)
{
        json_t *arr = json_object_get(cfg, list), *v;
        size_t i;
        json_array_foreach(arr, i, v)
        {
                const char *n = json_string_value(json_object_get(v, "name"));
                if (n && name && strcmp(n, name) == 0)
                        return json_object_get(v, field);
        }
        return NULL;
}

/* `file` (relative to the kubeconfig's directory `dir`) or inline base64
 * `data` into *out: 0 (NULL when neither), or a negative errno. */
static int file_or_data(const char *dir, json_t *obj, const char *file_key, const char *data_key,
                        char **out, char *err, size_t errlen)
{
        const char *data = json_string_value(json_object_get(obj, data_key));
        const char *file = json_string_value(json_object_get(obj, file_key));
        *out = NULL;
        if (data) {
                size_t n;
                unsigned char *d = base64_decode(data, strlen(data), &n);
                char *s = d ? realloc(d, n + 1) : NULL;
                if (!s) {
                        free(d);
                        snprintf(err, errlen, "%s: not base64", data_key);
                        return -EINVAL;
                }
                s[n] = '\0';
                *out = s;
                return 0;
        }
        if (!file)
                return 0;
        char path[4096];
        snprintf(path, sizeof(path), "%s%s%s", file[0] == '/' ? "" : dir, file[0] == '/' ? "" : "/",
                 file);
        int rc = read_small(path, out, NULL);
        if (rc < 0)
                snprintf(err, errlen, "%s %s: %s", file_key, path, strerror(-rc));
        return rc;
}

static int from_kubeconfig(struct kube_api *k, char *ns, size_t nslen, char *err, size_t errlen)
{
        char path[4096];
        const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
        if (env && env[0]) {
                size_t n = strcspn(env, ":");
                snprintf(path, sizeof(path), "%.*s", (int)n, env);
        } else {
                snprintf(path, sizeof(path), "%s/.kube/config", home ? home : "");
        }
        char *text;
        size_t len;
        int rc = read_small(path, &text, &len);
        if (rc < 0) {
                snprintf(err, errlen, "no service account (%s) and no kubeconfig %s: %s", SA_DIR,
                         path, strerror(-rc));
                return rc;
        }
        json_t *cfg = yaml_to_json(text, len);
        free(text);
        if (!cfg) {
                snprintf(err, errlen, "%s: not a kubeconfig (YAML mapping)", path);
                return -EINVAL;
        }
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
                *slash = '\0';
        else
                snprintf(dir, sizeof(dir), ".");
        const char *cur = json_string_value(json_object_get(cfg, "current-context"));
        json_t *ctx = named(cfg, "contexts", cur, "context");
        json_t *cluster =
            named(cfg, "clusters", json_string_value(json_object_get(ctx, "cluster")), "cluster");
        json_t *user = named(cfg, "users", json_string_value(json_object_get(ctx, "user")), "user");
        const char *server = json_string_value(json_object_get(cluster, "server"));
        rc = -EINVAL;
        if (!ctx || !cluster || !server) {
                snprintf(err, errlen, "%s: its current-context (%s) names no cluster with a server",
                         path, cur ? cur : "none");
        } else if (json_object_get(user, "exec") || json_object_get(user, "auth-provider")) {
                snprintf(err, errlen,
                         "%s: user %s authenticates by a plugin (exec, auth-provider), which "
                         "cellvm does not run: give it a token or a client certificate",
                         path, json_string_value(json_object_get(ctx, "user")));
        } else if (strlen(server) >= sizeof(k->server)) {
                snprintf(err, errlen, "%s: the server URL is too long", path);
        } else {
                snprintf(k->server, sizeof(k->server), "%s", server);
                const char *insecure =
                    json_string_value(json_object_get(cluster, "insecure-skip-tls-verify"));
                k->insecure = insecure && strcmp(insecure, "true") == 0;
                const char *token = json_string_value(json_object_get(user, "token"));
                const char *token_file = json_string_value(json_object_get(user, "tokenFile"));
                const char *cns = json_string_value(json_object_get(ctx, "namespace"));
                if (ns)
                        snprintf(ns, nslen, "%s", cns ? cns : "");
                rc = 0;
                if ((token && !(k->token = strdup(token))) ||
                    (token_file && !(k->token_file = strdup(token_file))))
                        rc = -ENOMEM;
                if (rc == 0)
                        rc = file_or_data(dir, cluster, "certificate-authority",
                                          "certificate-authority-data", &k->ca_pem, err, errlen);
                if (rc == 0)
                        rc = file_or_data(dir, user, "client-certificate",
                                          "client-certificate-data", &k->cert_pem, err, errlen);
                if (rc == 0)
                        rc = file_or_data(dir, user, "client-key", "client-key-data", &k->key_pem,
                                          err, errlen);
                if (rc == -ENOMEM)
                        snprintf(err, errlen, "out of memory");
        }
        json_decref(cfg);
        return rc;
}

static int from_service_account(struct kube_api *k, char *ns, size_t nslen, char *err,
                                size_t errlen)
{
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        snprintf(k->server, sizeof(k->server),
                 strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
                 port && port[0] ? port : "443");
        if (!(k->token_file = strdup(SA_DIR "/token"))) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        int rc = read_small(SA_DIR "/ca.crt", &k->ca_pem, NULL);
        if (rc < 0) {
                snprintf(err, errlen, "%s/ca.crt: %s", SA_DIR, strerror(-rc));
                return rc;
        }
        char *n = NULL;
        if (ns && read_small(SA_DIR "/namespace", &n, NULL) == 0) {
                n[strcspn(n, "\r\n")] = '\0';
                snprintf(ns, nslen, "%s", n);
        }
        free(n);
        return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void init_curl(void)
{
        curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kube_api_open(struct kube_api **out, char *ns, size_t nslen, char *err, size_t errlen)
{
        pthread_once(&curl_once, init_curl);
        if (curl_init_rc != CURLE_OK) {
                snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_rc));
                return -EIO;
        }
        struct kube_api *k = calloc(1, sizeof(*k));
        if (!k) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        if (ns && nslen)
                ns[0] = '\0';
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        bool in_cluster = host && host[0] && access(SA_DIR "/token", R_OK) == 0;
        int rc = in_cluster ? from_service_account(k, ns, nslen, err, errlen)
                            : from_kubeconfig(k, ns, nslen, err, errlen);
        if (rc < 0) {
                kube_api_close(k);
                return rc;
        }
        *out = k;
        return 0;
}

void kube_api_close(struct kube_api *k)
{
        if (!k)
                return;
        free(k->ca_pem);
        free(k->token);
        free(k->token_file);
        free(k->cert_pem);
        free(k->key_pem);
        free(k);
}

const char *kube_api_server(const struct kube_api *k)
{
        return k->server;
}

/* --- calls ------------------------------------------------------------------ */

size_t kube_body_write(char *p, size_t size, size_t nmemb, void *ud)
{
        struct kube_body *a = ud;
        size_t n = size * nmemb;
        int rc = cv_buf_append(&a->buf, p, n);
        if (rc == -EMSGSIZE)
                a->too_big = true;
        return rc < 0 ? 0 : n; /* short: aborts the transfer */
}

/* The API server's TLS: its CA, a client certificate. */
static void set_tls(CURL *c, const struct kube_api *k)
{
        if (k->ca_pem) {
                struct curl_blob blob = {k->ca_pem, strlen(k->ca_pem), CURL_BLOB_COPY};
                curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
        }
        if (k->cert_pem && k->key_pem) {
                struct curl_blob cert = {k->cert_pem, strlen(k->cert_pem), CURL_BLOB_COPY};
                struct curl_blob key = {k->key_pem, strlen(k->key_pem), CURL_BLOB_COPY};
                curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
                curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
        }
        if (k->insecure) {
                curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        }
}

int kube_http_json(const struct kube_api *k, const char *method, const char *url,
                   struct curl_slist *headers, const char *body, size_t body_len, size_t max,
                   long timeout_s, long *status, json_t **out, char *err, size_t errlen)
{
        *out = NULL;
        *status = 0;
        CURL *c = curl_easy_init();
        if (!c) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        struct kube_body a = {.too_big = false};
        cv_buf_init(&a.buf);
        a.buf.limit = max;
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kube_body_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
        if (body) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        }
        if (k)
                set_tls(c, k);
        int rc = 0;
        CURLcode cr = curl_easy_perform(c);
        if (cr != CURLE_OK) {
                snprintf(err, errlen, "%s %.300s: %s", method, url,
                         a.too_big ? "the answer is too large" : curl_easy_strerror(cr));
                rc = a.too_big ? -EFBIG : -EIO;
        } else {
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
                if (cv_buf_pending(&a.buf))
                        *out = json_loadb((const char *)cv_buf_head(&a.buf), cv_buf_pending(&a.buf),
                                          0, NULL);
        }
        curl_easy_cleanup(c);
        cv_buf_free(&a.buf);
        return rc;
}

int kube_api_call(struct kube_api *k, const char *method, const char *path,
                  const char *content_type, const json_t *body, long *status, json_t **out,
                  char *err, size_t errlen)
{
        *out = NULL;
        *status = 0;
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        char *token = NULL, *auth = NULL;
        if (k->token_file) {
                int r = read_small(k->token_file, &token, NULL);
                if (r < 0) {
                        free(text);
                        snprintf(err, errlen, "the token %s: %s", k->token_file, strerror(-r));
                        return r;
                }
                token[strcspn(token, "\r\n")] = '\0';
        }
        const char *tok = token ? token : k->token;
        char url[4096], ctype[128];
        snprintf(url, sizeof(url), "%s%s", k->server, path);
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
        if (hdrs && body)
                hdrs = curl_slist_append(hdrs, ctype);
        size_t alen = tok ? strlen(tok) + 32 : 0;
        if (hdrs && tok && (auth = malloc(alen))) {
                snprintf(auth, alen, "Authorization: Bearer %s", tok);
                hdrs = curl_slist_append(hdrs, auth);
        }
        int rc;
        if (!hdrs || (tok && !auth) || (body && !text)) {
                snprintf(err, errlen, "out of memory");
                rc = -ENOMEM;
        } else {
                rc = kube_http_json(k, method, url, hdrs, text, text ? strlen(text) : 0,
                                    KUBE_BODY_MAX, CALL_TIMEOUT_S, status, out, err, errlen);
        }
        curl_slist_free_all(hdrs);
        free(auth);
        free(token);
        free(text);
        return rc;
}
