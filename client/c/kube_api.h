/*
 * A client of the Kubernetes API server (libcurl), authenticated as kubectl
 * or a pod would be: the in-cluster service account
 * (/var/run/secrets/kubernetes.io/serviceaccount, $KUBERNETES_SERVICE_HOST),
 * else the current context of a kubeconfig ($KUBECONFIG's first file, else
 * ~/.kube/config): the server, its CA, and a bearer token or a client
 * certificate. Every answer is bounded (KUBE_BODY_MAX) and parsed by jansson
 * before a caller sees it.
 */
#ifndef CELLVM_CLIENT_KUBE_API_H
#define CELLVM_CLIENT_KUBE_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define KUBE_BODY_MAX (8u << 20) /* a list of claims is the largest answer */

struct kube_api;

/* The credentials of this process (see above): 0 with *out, or a negative
 * errno with `err` saying why. `ns_out` (may be NULL) gets the namespace the
 * context or the service account names, "" when none does. */
int kube_api_open(struct kube_api **out, char *ns_out, size_t nslen, char *err, size_t errlen);
void kube_api_close(struct kube_api *k);
/* The server's base URL, for messages. */
const char *kube_api_server(const struct kube_api *k);

/* One call: `method` on `path` (absolute, e.g. /apis/...), with `body` (NULL:
 * none) sent as `content_type` (NULL: application/json). 0 with the HTTP
 * status in *status and the answer's JSON (NULL when it was empty or not
 * JSON) in *out; a negative errno with `err` when no answer came. Safe from
 * any thread. */
int kube_api_call(struct kube_api *k, const char *method, const char *path,
                  const char *content_type, const json_t *body, long *status, json_t **out,
                  char *err, size_t errlen);

/* One buffered call with libcurl: `body` (NULL: none) sent with `headers`,
 * the answer kept up to `max` bytes (-EFBIG past it) and parsed as JSON (NULL
 * when empty or not JSON) into *out, its status in *status; `k` (NULL: none)
 * gives the API server's TLS settings. 0, or a negative errno with `err`. */
struct curl_slist;
int kube_http_json(const struct kube_api *k, const char *method, const char *url,
                   struct curl_slist *headers, const char *body, size_t body_len, size_t max,
                   long timeout_s, long *status, json_t **out, char *err, size_t errlen);

/* A body libcurl writes into (kube_body_write as CURLOPT_WRITEFUNCTION), at
 * most `buf.limit` bytes: past it the transfer is aborted and `too_big` set. */
struct kube_body {
        struct cv_buf buf;
        bool too_big;
};
size_t kube_body_write(char *p, size_t size, size_t nmemb, void *ud);

#endif
