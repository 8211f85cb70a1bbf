/* cellvm serve's sandboxes: restored from the template, kept in a table,
 * ended by DELETE, their deadline or SIGTERM (serve.h). */
#include "serve.h"
#include "serve_egress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "cli_snapshot.h"
#include "msgtypes.h"
#include "registry.h"
#include "snapshot_qemu.h"
#include "vmm.h"

struct serve serve = {.life = PTHREAD_MUTEX_INITIALIZER};

int serve_random_hex(char *out, size_t nhex)
{
        unsigned char raw[64];
        size_t n = (nhex + 1) / 2;
        if (n > sizeof(raw))
                return -EINVAL;
        size_t got = 0;
        while (got < n) {
                ssize_t r = getrandom(raw + got, n - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                got += (size_t)r;
        }
        for (size_t i = 0; i < nhex; i++)
                out[i] = "0123456789abcdef"[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
        out[nhex] = '\0';
        return 0;
}

static void free_sandbox(struct sandbox *s)
{
        serve_watchers_free(s);
        serve_metrics_free(s);
        serve_egress_free(s);
        json_decref(s->metadata); /* NULL-safe */
        json_decref(s->envs);
        json_decref(s->file_meta);
        free(s);
}

/* The guest's deadline, sent over the shared connection; an auto-pausing
 * sandbox's is later by the time a pause may take, so that its guest does
 * not power off while the reaper pauses it. */
static int send_deadline(struct sandbox *s, double timeout_s, char *err, size_t errlen)
{
        if (s->auto_pause)
                timeout_s += CSQ_MIGRATE_TIMEOUT_MS / 1000.0;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "timeout_ms");
        cv_enc_uint(&b, (uint64_t)(sbx_guest_timeout_s(timeout_s, s->vm.kvm) * 1000));
        int rc = mux_call(&s->mux, CV_MSG_SET_DEADLINE, &b, 10000, NULL, err, errlen);
        cv_buf_free(&b);
        return rc;
}

/* A clone of the template with its agent connection, in no table yet: 0
 * with *out (one reference, the caller's), or a negative errno with `err`. */
int serve_restore(double timeout_s, struct sandbox **out, char *err, size_t errlen)
{
        return serve_restore_as(NULL, timeout_s, out, err, errlen);
}

int serve_restore_as(const char *key, double timeout_s, struct sandbox **out, char *err,
                     size_t errlen)
{
        struct sandbox *s = calloc(1, sizeof(*s));
        if (!s) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        s->memory_mb = serve.memory_mb;
        s->vcpus = serve.vcpus;
        s->opts = (struct cvm_opts){
            .image = serve.image, .memory_mb = serve.memory_mb, .vcpus = serve.vcpus};
        pthread_mutex_init(&s->procs_lock, NULL);
        s->refs = 1;
        struct snap_run r = {.vm = &s->opts,
                             .user_mb = cvm_user_memory_mb(s->memory_mb),
                             .lifetime_s = timeout_s,
                             .mode = SNAP_AUTO,
                             .key = key};
        struct cvc *c = NULL;
        /* One restore at a time (the template code keeps state of its own);
         * the table stays free meanwhile. */
        static pthread_mutex_t restoring = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&restoring);
        int rc = snap_restore_vm(&r, &s->rec, &s->vm, &c);
        pthread_mutex_unlock(&restoring);
        if (rc == 0 && (rc = mux_start(&s->mux, c)) < 0) {
                cvc_close(c);
                cvm_kill(&s->vm);
                sbx_forget(&s->rec);
        }
        if (rc != 0) {
                if (rc == -EAGAIN)
                        snprintf(err, errlen,
                                 "Rate limit exceeded: the maximum number of concurrent "
                                 "sandboxes (%u, $CELLVM_MAX_SANDBOXES) is reached",
                                 creg_max_sandboxes());
                else
                        snprintf(err, errlen, "the sandbox did not start from the template (%s)%s",
                                 rc > 0 ? "it needs a cold boot" : strerror(-rc),
                                 ": see the server's log");
                free_sandbox(s);
                return rc > 0 ? -EIO : rc;
        }
        snprintf(s->id, sizeof(s->id), "%s", s->rec.e.key);
        s->started_ms = s->rec.e.started_ms;
        s->deadline_ms = s->rec.e.deadline_ms;
        *out = s;
        return 0;
}

void serve_stop_vm(struct sandbox *s)
{
        s->dead = true;
        mux_close(&s->mux);
        cvm_kill(&s->vm);
        sbx_forget(&s->rec);
}

json_t *serve_sandbox_envs(const struct sandbox *s)
{
        /* Made at each use from the id and template it has now: a restored
         * clone or a resumed sandbox never carries another's. */
        json_t *all = json_pack("{s:s, s:s, s:s}", "E2B_SANDBOX", "true", "E2B_SANDBOX_ID", s->id,
                                "E2B_TEMPLATE_ID", s->template_id);
        if (all && json_is_object(s->envs) && json_object_update(all, s->envs) < 0) {
                json_decref(all);
                return NULL;
        }
        return all;
}

int serve_create(const char *template_id, double timeout_s, json_t *metadata, json_t *envs,
                 struct sandbox **out, char *err, size_t errlen)
{
        char token[SERVE_TOKEN_LEN + 1];
        int rc = serve_random_hex(token, SERVE_TOKEN_LEN);
        if (rc < 0) {
                snprintf(err, errlen, "getrandom: %s", strerror(-rc));
                return rc;
        }
        /* A warm clone from the pool costs its new deadline; else one now. */
        struct sandbox *s = serve_pool_take();
        if (s && serve_set_timeout(s, timeout_s, err, errlen) < 0) {
                fprintf(stderr, "cellvm serve: a pooled sandbox failed (%s): restoring one\n", err);
                pthread_mutex_lock(&serve.life);
                serve_stop_vm(s);
                pthread_mutex_unlock(&serve.life);
                serve_put(s);
                s = NULL;
        }
        serve_pool_refill();
        if (!s && (rc = serve_restore(timeout_s, &s, err, errlen)) < 0)
                return rc;
        snprintf(s->template_id, sizeof(s->template_id), "%s", template_id);
        memcpy(s->token, token, sizeof(token));
        s->metadata = json_incref(metadata);
        s->envs = json_incref(envs);
        pthread_mutex_lock(&serve.life);
        s->started_ms = creg_now_ms();
        s->refs++; /* the table's */
        s->next = serve.sandboxes;
        serve.sandboxes = s;
        pthread_mutex_unlock(&serve.life);
        *out = s;
        return 0;
}

struct sandbox *serve_get(const char *id)
{
        pthread_mutex_lock(&serve.life);
        struct sandbox *s = serve.sandboxes;
        while (s && strcmp(s->id, id) != 0)
                s = s->next;
        if (s)
                s->refs++;
        pthread_mutex_unlock(&serve.life);
        return s;
}

struct sandbox *serve_ref(struct sandbox *s)
{
        pthread_mutex_lock(&serve.life);
        s->refs++;
        pthread_mutex_unlock(&serve.life);
        return s;
}

void serve_put(struct sandbox *s)
{
        if (!s)
                return;
        pthread_mutex_lock(&serve.life);
        bool last = --s->refs == 0;
        pthread_mutex_unlock(&serve.life);
        if (last)
                free_sandbox(s);
}

/* Call with serve.life held: unlinks and stops `s`; the table's reference
 * is then the caller's to drop. */
static bool end_locked(struct sandbox *s)
{
        for (struct sandbox **p = &serve.sandboxes; *p; p = &(*p)->next) {
                if (*p != s)
                        continue;
                *p = s->next;
                serve_stop_vm(s);
                return true;
        }
        return false;
}

bool serve_unlink(struct sandbox *s)
{
        pthread_mutex_lock(&serve.life);
        bool found = false;
        for (struct sandbox **p = &serve.sandboxes; *p; p = &(*p)->next) {
                if (*p == s) {
                        *p = s->next;
                        found = true;
                        break;
                }
        }
        pthread_mutex_unlock(&serve.life);
        return found;
}

void serve_insert(struct sandbox *s)
{
        pthread_mutex_lock(&serve.life);
        s->next = serve.sandboxes;
        serve.sandboxes = s;
        pthread_mutex_unlock(&serve.life);
}

bool serve_kill(struct sandbox *s)
{
        pthread_mutex_lock(&serve.life);
        bool ended = end_locked(s);
        pthread_mutex_unlock(&serve.life);
        if (ended)
                serve_put(s); /* the table's reference */
        return ended;
}

int serve_set_timeout(struct sandbox *s, double timeout_s, char *err, size_t errlen)
{
        int rc = send_deadline(s, timeout_s, err, errlen);
        if (rc < 0)
                return rc;
        pthread_mutex_lock(&serve.life);
        if (!s->dead) {
                sbx_set_deadline(&s->rec, timeout_s);
                s->deadline_ms = creg_now_ms() + (int64_t)(timeout_s * 1000);
        }
        pthread_mutex_unlock(&serve.life);
        return 0;
}

int serve_list(struct sandbox ***out, size_t *n)
{
        pthread_mutex_lock(&serve.life);
        size_t count = 0;
        for (struct sandbox *s = serve.sandboxes; s; s = s->next)
                count++;
        struct sandbox **v = calloc(count ? count : 1, sizeof(*v));
        if (!v) {
                pthread_mutex_unlock(&serve.life);
                return -ENOMEM;
        }
        size_t i = count;
        /* The table is newest first; the list is oldest first. */
        for (struct sandbox *s = serve.sandboxes; s; s = s->next) {
                s->refs++;
                v[--i] = s;
        }
        pthread_mutex_unlock(&serve.life);
        *out = v;
        *n = count;
        return 0;
}

void serve_kill_all(void)
{
        for (;;) {
                pthread_mutex_lock(&serve.life);
                struct sandbox *s = serve.sandboxes;
                if (s)
                        end_locked(s);
                pthread_mutex_unlock(&serve.life);
                if (!s)
                        return;
                serve_put(s);
        }
}

/* E2B's onTimeout "pause": paused at its deadline instead of killed (killed
 * if the pause fails). Called with a reference, which it drops. */
static void auto_pause(struct sandbox *s)
{
        char err[600];
        /* Past its registry deadline + grace another cellvm process would kill it. */
        sbx_set_deadline(&s->rec, CSQ_MIGRATE_TIMEOUT_MS / 1000.0);
        int rc = serve_pause(s, !s->auto_pause_files_only, err, sizeof(err));
        if (rc == 0)
                fprintf(stderr, "cellvm serve: sandbox %s paused: its timeout passed (autoPause)\n",
                        s->id);
        else if (rc != -ENOENT && serve_kill(s))
                fprintf(stderr,
                        "cellvm serve: sandbox %s ended: its timeout passed and pausing it "
                        "failed (%s)\n",
                        s->id, err);
        serve_put(s);
}

void *serve_reaper(void *arg)
{
        (void)arg;
        while (!serve.stopping) {
                struct timespec ts = {.tv_sec = 0, .tv_nsec = 250 * 1000000L};
                nanosleep(&ts, NULL);
                int64_t now = creg_now_ms();
                for (;;) {
                        struct sandbox *victim = NULL;
                        const char *why = NULL;
                        bool pause = false;
                        pthread_mutex_lock(&serve.life);
                        for (struct sandbox *s = serve.sandboxes; s && !victim; s = s->next) {
                                if (now >= s->deadline_ms)
                                        victim = s, why = "its timeout passed",
                                        pause = s->auto_pause && cvm_alive(&s->vm);
                                else if (!cvm_alive(&s->vm))
                                        victim = s, why = "its VM exited";
                        }
                        if (victim && pause)
                                victim->refs++;
                        else if (victim)
                                end_locked(victim);
                        pthread_mutex_unlock(&serve.life);
                        if (!victim)
                                break;
                        if (pause) {
                                auto_pause(victim);
                                continue;
                        }
                        fprintf(stderr, "cellvm serve: sandbox %s ended: %s\n", victim->id, why);
                        serve_put(victim);
                }
        }
        return NULL;
}
