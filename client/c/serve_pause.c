/* cellvm serve's pause and resume: E2B's /pause, /connect and /resume on the
 * paused store the CLI and the Python SDK share (serve.h, pause.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "cli_pause.h"
#include "msgtypes.h"
#include "pause.h"
#include "paused.h"
#include "registry.h"
#include "serve.h"
#include "serve_egress.h"
#include "snapshot_qemu.h"

/* What the server keeps beside a record, as JSON: the envd access token (the
 * SDK's Sandbox object keeps it), the lifecycle (autoPause, autoPauseMemory) and whether its
 * ports need the traffic token (privateTraffic). */
#define SERVE_FILE "serve.json"
/* The token and flags, the egress rules (a create's `network` or a PUT's body,
 * each under HTTP_JSON_MAX) and what GET shows of them (as much again). */
#define SERVE_FILE_MAX (4u << 20) /* 4 x HTTP_JSON_MAX */

/* One pause or resume at a time: a connect waits for the pause before it. */
static pthread_mutex_t pausing = PTHREAD_MUTEX_INITIALIZER;
/* The sandbox being paused (out of the table, its record not written yet):
 * described and listed as paused meanwhile. Under serve.life. */
static struct sandbox *being_paused;

static void set_being_paused(struct sandbox *s)
{
        pthread_mutex_lock(&serve.life);
        being_paused = s;
        pthread_mutex_unlock(&serve.life);
}

/* `being_paused` as a paused one, if it is `id` (NULL: any): true with *p set. */
static bool describe_being_paused(const char *id, struct serve_paused *p)
{
        pthread_mutex_lock(&serve.life);
        struct sandbox *s = being_paused;
        bool hit = s && (!id || strcmp(id, s->id) == 0);
        if (hit) {
                memset(p, 0, sizeof(*p));
                snprintf(p->id, sizeof(p->id), "%s", s->id);
                snprintf(p->template_id, sizeof(p->template_id), "%s", s->template_id);
                p->metadata = json_deep_copy(s->metadata);
                p->started_ms = s->started_ms;
                p->memory_mb = s->memory_mb;
                p->vcpus = s->vcpus;
        }
        pthread_mutex_unlock(&serve.life);
        return hit;
}

/* serve.json of `s` into record `dir`; a fork's (`token` its own, not NULL)
 * keeps the traffic rule and egress rules of `s` but not its lifecycle. */
static int write_serve_file(const char *dir, const struct sandbox *s, const char *token)
{
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", dir, SERVE_FILE);
        char *text = NULL;
        json_t *j =
            json_pack("{s:s, s:b, s:b, s:b, s:f, s:b}", "envdAccessToken", token ? token : s->token,
                      "autoPause", !token && s->auto_pause, "autoPauseMemory",
                      token || !s->auto_pause_files_only, "autoResume", !token && s->auto_resume,
                      "resumeTimeout", s->resume_timeout_s, "privateTraffic",
                      __atomic_load_n(&s->private_traffic, __ATOMIC_ACQUIRE));
        /* The egress rules come back with the sandbox (serve_egress.c). */
        json_t *rules = serve_egress_rules((struct sandbox *)s);
        if (j && rules && json_object_set_new(j, "egress", rules) < 0)
                json_decref(j), j = NULL;
        else if (!j)
                json_decref(rules);
        /* And what its GET shows of them (E2B's SandboxDetail network). */
        json_t *shown = serve_egress_shown((struct sandbox *)s);
        if (j && shown && json_object_set_new(j, "shown", shown) < 0)
                json_decref(j), j = NULL;
        else if (!j)
                json_decref(shown);
        if (j)
                text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!text)
                return -ENOMEM;
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        int rc = fd < 0 ? -errno : 0;
        size_t n = strlen(text);
        if (rc == 0 && write(fd, text, n) != (ssize_t)n)
                rc = -EIO;
        if (fd >= 0 && close(fd) < 0 && rc == 0)
                rc = -errno;
        free(text);
        return rc;
}

/* The serve.json of record `dir`, or NULL (none: the CLI's or the SDK's). */
static json_t *load_serve_file(const char *dir)
{
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", dir, SERVE_FILE);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* no FIFO holds us */
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
            st.st_size > (off_t)SERVE_FILE_MAX) {
                if (fd >= 0)
                        close(fd);
                return NULL;
        }
        size_t len = (size_t)st.st_size, got = 0;
        char *buf = malloc(len);
        while (buf && got < len) {
                ssize_t n = read(fd, buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        close(fd);
        json_t *j = buf && got == len ? json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
        free(buf);
        return j;
}

/* The resume timeout serve.json `j` keeps: a number > 0, else the default. */
static double serve_file_resume_timeout(const json_t *j)
{
        json_t *rt = json_object_get(j, "resumeTimeout");
        return json_is_number(rt) && json_number_value(rt) > 0 ? json_number_value(rt)
                                                               : SERVE_DEFAULT_TIMEOUT_S;
}

/* The token, lifecycle and traffic rule kept with the record into `s`; a
 * record paused by the CLI or the SDK has none: a new token, no autoPause,
 * public ports (E2B's default). */
static int read_serve_file(const char *dir, struct sandbox *s, json_t **egress, json_t **shown)
{
        json_t *j = load_serve_file(dir);
        /* The egress rules: started again once the sandbox runs (serve_resume). */
        json_t *rules = json_object_get(j, "egress");
        *egress = json_is_object(rules) ? json_incref(rules) : NULL;
        json_t *sh = json_object_get(j, "shown");
        *shown = json_is_object(sh) ? json_incref(sh) : NULL;
        const char *token = json_string_value(json_object_get(j, "envdAccessToken"));
        bool ok = token && strlen(token) == SERVE_TOKEN_LEN;
        for (size_t i = 0; ok && i < SERVE_TOKEN_LEN; i++)
                ok = (token[i] >= '0' && token[i] <= '9') || (token[i] >= 'a' && token[i] <= 'f');
        if (ok)
                memcpy(s->token, token, SERVE_TOKEN_LEN + 1);
        s->auto_pause = json_is_true(json_object_get(j, "autoPause"));
        s->auto_pause_files_only = json_is_false(json_object_get(j, "autoPauseMemory"));
        s->auto_resume = json_is_true(json_object_get(j, "autoResume"));
        s->resume_timeout_s = serve_file_resume_timeout(j);
        /* A private sandbox's ports stay private across a pause (serve_port.c). */
        s->private_traffic = json_is_true(json_object_get(j, "privateTraffic"));
        json_decref(j);
        return ok ? 0 : serve_random_hex(s->token, SERVE_TOKEN_LEN);
}

int serve_pause(struct sandbox *s, bool keep_memory, char *err, size_t errlen)
{
        char root[PATH_MAX], dir[PATH_MAX];
        int rc = cpaused_root(root, sizeof(root));
        if (rc < 0) {
                snprintf(err, errlen, "the paused store's directory: %s", strerror(-rc));
                return rc;
        }
        pthread_mutex_lock(&pausing);
        if (!serve_unlink(s)) {
                pthread_mutex_unlock(&pausing);
                snprintf(err, errlen, "sandbox \"%s\" ended meanwhile", s->id);
                return -ENOENT;
        }
        set_being_paused(s);
        json_t *none = json_object();
        char *meta = json_dumps(s->metadata ? s->metadata : none, JSON_COMPACT | JSON_ENSURE_ASCII);
        char *envs = json_dumps(s->envs ? s->envs : none, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(none);
        struct creg_entry e = s->rec.e;
        e.started_ms = s->started_ms; /* E2B's startedAt: the create, not the pool's restore */
        struct cpause_src src = {
            .e = &e, .template_ = s->template_id, .metadata = meta, .envs = envs};
        if (meta && envs && keep_memory)
                rc = cpause_save(root, &src, dir, sizeof(dir), err, errlen);
        else if (meta && envs)
                rc = cpause_save_fs(root, &src, serve_fs_pack, s, dir, sizeof(dir), err, errlen);
        else
                snprintf(err, errlen, "out of memory"), rc = -ENOMEM;
        free(meta);
        free(envs);
        if (rc < 0) {
                serve_insert(s); /* it runs on */
                set_being_paused(NULL);
                pthread_mutex_unlock(&pausing);
                return rc;
        }
        int trc = write_serve_file(dir, s, NULL);
        if (trc < 0)
                fprintf(stderr,
                        "cellvm serve: sandbox %s: keeping its access token in %s/%s: %s (a "
                        "resume gives it a new one)\n",
                        s->id, dir, SERVE_FILE, strerror(-trc));
        pthread_mutex_lock(&serve.life);
        serve_stop_vm(s);
        being_paused = NULL;
        pthread_mutex_unlock(&serve.life);
        serve_put(s); /* the table's reference */
        pthread_mutex_unlock(&pausing);
        return 0;
}

/* A JSON object of strings from a manifest's text, else an empty one. */
static json_t *string_object(const char *text)
{
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
        const char *k;
        json_t *v;
        bool ok = j && json_is_object(j);
        if (ok)
                json_object_foreach(j, k, v) ok = ok && json_is_string(v);
        if (ok)
                return j;
        json_decref(j);
        return json_object();
}

/* A filesystem-only record's resume (claimed: `key` is its): a fresh clone
 * of the template under the record's key (a new boot, as E2B's), its files
 * put back; the caller removes the record. 0 with *out referenced once, or
 * a negative errno with `err` (nothing runs). */
static int resume_files(const char *dir, const char *key, double timeout_s, struct sandbox **out,
                        char *err, size_t errlen)
{
        struct sandbox *s = NULL;
        int rc = serve_restore_as(key, timeout_s, &s, err, errlen);
        char archive[PATH_MAX + 32];
        snprintf(archive, sizeof(archive), "%s/%s", dir, CPAUSE_FS_ARCHIVE);
        if (rc == 0 && (rc = serve_fs_unpack(s, archive, err, errlen)) < 0) {
                pthread_mutex_lock(&serve.life);
                serve_stop_vm(s);
                pthread_mutex_unlock(&serve.life);
                serve_put(s);
        }
        if (rc == 0)
                *out = s;
        return rc;
}

int serve_resume(const char *id, double timeout_s, struct sandbox **out, char *err, size_t errlen)
{
        pthread_mutex_lock(&pausing);
        struct sandbox *s = serve_get(id);
        if (s) {
                pthread_mutex_unlock(&pausing);
                *out = s;
                return 0;
        }
        char root[PATH_MAX], dir[PATH_MAX];
        int rc = sbx_paused_find(id, root, sizeof(root), dir, sizeof(dir));
        if (rc < 0) {
                pthread_mutex_unlock(&pausing);
                snprintf(err, errlen, "sandbox \"%.64s\" not found", id);
                return rc;
        }
        struct csm m;
        int fd;
        const char *key;
        if ((rc = sbx_paused_claim(dir, &m, &fd, &key, err, errlen)) < 0) {
                csm_free(&m);
                pthread_mutex_unlock(&pausing);
                return rc;
        }
        bool files_only = m.filesystem[0] != '\0';
        if (files_only) {
                rc = resume_files(dir, key, timeout_s, &s, err, errlen);
        } else if (!(s = calloc(1, sizeof(*s)))) {
                snprintf(err, errlen, "out of memory");
                rc = -ENOMEM;
        } else {
                pthread_mutex_init(&s->procs_lock, NULL);
                s->refs = 1;
        }
        json_t *egress = NULL, *shown = NULL;
        if (rc == 0 && (rc = read_serve_file(dir, s, &egress, &shown)) < 0)
                snprintf(err, errlen, "getrandom: %s", strerror(-rc));
        if (rc == 0 && files_only)
                sbx_paused_drop(root, dir, key);
        if (rc == 0 && !files_only) {
                struct cvc *c = NULL;
                rc = sbx_resume_claimed(root, dir, &m, key, timeout_s, &s->rec, &s->vm, &c, NULL,
                                        err, errlen);
                if (rc == 0 && (rc = mux_start(&s->mux, c)) < 0) {
                        snprintf(err, errlen, "sandbox %s resumed, but its connection failed: %s",
                                 s->rec.e.key, strerror(-rc));
                        cvc_close(c);
                        cvm_kill(&s->vm);
                        sbx_forget(&s->rec);
                }
        }
        close(fd);
        if (rc < 0) {
                csm_free(&m);
                json_decref(egress);
                json_decref(shown);
                if (s && files_only) {
                        pthread_mutex_lock(&serve.life);
                        serve_stop_vm(s);
                        pthread_mutex_unlock(&serve.life);
                }
                if (s)
                        serve_put(s);
                pthread_mutex_unlock(&pausing);
                return rc;
        }
        snprintf(s->id, sizeof(s->id), "%s", s->rec.e.key);
        snprintf(s->template_id, sizeof(s->template_id), "%s",
                 m.template_[0] && strlen(m.template_) < sizeof(s->template_id) ? m.template_
                                                                                : "base");
        s->metadata = string_object(m.metadata);
        s->envs = string_object(m.envs);
        if (!files_only) { /* a fresh clone has the server's */
                s->memory_mb = (unsigned)m.memory_mb;
                s->vcpus = (unsigned)m.vcpus;
                s->opts = (struct cvm_opts){
                    .image = serve.image, .memory_mb = s->memory_mb, .vcpus = s->vcpus};
        }
        s->started_ms = m.started_ms ? (int64_t)m.started_ms : s->rec.e.started_ms;
        s->deadline_ms = s->rec.e.deadline_ms;
        csm_free(&m);
        /* Its egress, with the rules it had or none yet; its processes' HTTP_PROXY came
         * back in envs, except for a record paused without them (the CLI, the SDK). */
        char why[512];
        if (!s->envs || serve_egress_envs(s->envs) < 0)
                fprintf(stderr, "cellvm serve: sandbox %s: no memory for its proxy variables\n",
                        s->id);
        if (serve_egress_start(s, egress, why, sizeof(why)) < 0)
                fprintf(stderr, "cellvm serve: sandbox %s: its egress after the resume: %s\n",
                        s->id, why);
        else
                (void)serve_egress_show_kept(s, shown);
        json_decref(egress);
        json_decref(shown);
        s->refs++; /* the table's */
        serve_insert(s);
        pthread_mutex_unlock(&pausing);
        /* An auto-pausing one's guest gets the margin of a pause again. */
        if (s->auto_pause && serve_set_timeout(s, timeout_s, err, errlen) < 0)
                fprintf(stderr, "cellvm serve: sandbox %s: SET_DEADLINE: %s\n", s->id, err);
        *out = s;
        return 1;
}

/* The guest's clock from this host's after the stop of a fork's save (the
 * guest's clock stood still meanwhile). */
static void set_time(struct sandbox *s)
{
        struct cv_buf b;
        cv_buf_init(&b);
        csq_enc_set_time(&b);
        char why[256];
        if (mux_call(&s->mux, CV_MSG_SET_TIME, &b, 10000, NULL, why, sizeof(why)) < 0)
                fprintf(stderr, "cellvm serve: sandbox %s: SET_TIME after its fork: %s\n", s->id,
                        why);
        cv_buf_free(&b);
}

/* `s` saved into a new record of the store at `root` under `key` (its
 * manifest's fork_of names `s`: whoever resumes it makes a new generation)
 * while its guest runs on, its clock set again after. Called with `pausing`
 * held. 0 with the record in `dir`, or a negative errno with `err`. */
static int save_running(struct sandbox *s, const char *root, const char *key, char *dir,
                        size_t dirlen, char *err, size_t errlen)
{
        json_t *none = json_object();
        char *meta = json_dumps(s->metadata ? s->metadata : none, JSON_COMPACT | JSON_ENSURE_ASCII);
        char *envs = json_dumps(s->envs ? s->envs : none, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(none);
        struct creg_entry e = s->rec.e;
        e.started_ms = creg_now_ms(); /* a fork's startedAt is its own */
        struct cpause_src src = {
            .e = &e, .template_ = s->template_id, .metadata = meta, .envs = envs, .fork_key = key};
        int rc = meta && envs ? cpause_save(root, &src, dir, dirlen, err, errlen)
                              : (snprintf(err, errlen, "out of memory"), -ENOMEM);
        free(meta);
        free(envs);
        if (rc == 0)
                set_time(s);
        return rc;
}

/* The records of the forks: the first saved from `s` (which runs on), the
 * others copies of it, each with its own token. Called with `pausing` held.
 * 0 when the first was made (a copy that was not says so in its result),
 * else a negative errno with `err` and no record. */
static int fork_records(struct sandbox *s, const char *root, char (*keys)[72], unsigned count,
                        struct serve_fork_result *out, char *err, size_t errlen)
{
        char first[PATH_MAX], dir[PATH_MAX];
        int rc = save_running(s, root, keys[0], first, sizeof(first), err, errlen);
        if (rc < 0)
                return rc;
        for (unsigned i = 0; i < count; i++) {
                struct serve_fork_result *r = &out[i];
                char token[SERVE_TOKEN_LEN + 1];
                r->rc = i == 0 ? 0
                               : cpause_copy(root, first, keys[i], NULL, dir, sizeof(dir), r->err,
                                             sizeof(r->err));
                if (r->rc == 0 && (r->rc = serve_random_hex(token, SERVE_TOKEN_LEN)) < 0)
                        snprintf(r->err, sizeof(r->err), "getrandom: %s", strerror(-r->rc));
                if (r->rc == 0 && (r->rc = write_serve_file(i ? dir : first, s, token)) < 0)
                        snprintf(r->err, sizeof(r->err), "its token: %s", strerror(-r->rc));
                if (r->rc < 0 && i > 0) /* a fork's record with no token is none */
                        (void)serve_paused_kill(keys[i]);
        }
        if (out[0].rc < 0)
                (void)serve_paused_kill(keys[0]);
        return 0;
}

/* `pausing` taken for a save from `s`: 0 with it held, or -ENOENT (with
 * `err`, not held) when `s` ended while waiting for it. */
static int lock_live_source(struct sandbox *s, char *err, size_t errlen)
{
        pthread_mutex_lock(&pausing);
        pthread_mutex_lock(&serve.life);
        bool dead = s->dead;
        pthread_mutex_unlock(&serve.life);
        if (!dead)
                return 0;
        pthread_mutex_unlock(&pausing);
        snprintf(err, errlen, "sandbox \"%s\" ended meanwhile", s->id);
        return -ENOENT;
}

int serve_snapshot_save(struct sandbox *s, const char *root, const char *key, char *dir,
                        size_t dirlen, char *err, size_t errlen)
{
        int rc = lock_live_source(s, err, errlen);
        if (rc < 0)
                return rc;
        rc = save_running(s, root, key, dir, dirlen, err, errlen);
        pthread_mutex_unlock(&pausing);
        return rc;
}

int serve_fork(struct sandbox *s, double timeout_s, unsigned count, struct serve_fork_result *out,
               char *err, size_t errlen)
{
        char root[PATH_MAX];
        int rc = cpaused_root(root, sizeof(root));
        if (rc < 0) {
                snprintf(err, errlen, "the paused store's directory: %s", strerror(-rc));
                return rc;
        }
        char(*keys)[72] = calloc(count, sizeof(*keys));
        if (!keys) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        for (unsigned i = 0; i < count && rc == 0; i++)
                if ((rc = sbx_new_key(s->rec.e.vmm, keys[i], sizeof(keys[i]))) < 0)
                        snprintf(err, errlen, "a key for fork %u: %s", i + 1, strerror(-rc));
        memset(out, 0, count * sizeof(*out));
        if (rc == 0 && (rc = lock_live_source(s, err, errlen)) == 0) {
                rc = fork_records(s, root, keys, count, out, err, errlen);
                pthread_mutex_unlock(&pausing);
        }
        /* Each fork resumes from its record as a copy of its own, or says why not. */
        for (unsigned i = 0; i < count && rc == 0; i++) {
                struct serve_fork_result *r = &out[i];
                if (r->rc < 0)
                        continue;
                int k = serve_resume(keys[i], timeout_s, &r->s, r->err, sizeof(r->err));
                r->rc = k < 0 ? k : 0;
                if (r->rc < 0) {
                        r->s = NULL;
                        (void)serve_paused_kill(keys[i]); /* a failed fork leaves nothing */
                }
        }
        free(keys);
        return rc;
}

struct sandbox *serve_wake(const char *id)
{
        bool wake = false;
        double timeout_s = SERVE_DEFAULT_TIMEOUT_S;
        pthread_mutex_lock(&serve.life); /* being paused now: it says, its record not yet */
        if (being_paused && strcmp(being_paused->id, id) == 0) {
                wake = being_paused->auto_resume && !being_paused->auto_pause_files_only;
                timeout_s = being_paused->resume_timeout_s;
        }
        pthread_mutex_unlock(&serve.life);
        char root[PATH_MAX], dir[PATH_MAX], archive[PATH_MAX + 32];
        if (!wake && sbx_paused_find(id, root, sizeof(root), dir, sizeof(dir)) == 0) {
                /* A filesystem-only record is resumed by connect only (E2B's). */
                snprintf(archive, sizeof(archive), "%s/%s", dir, CPAUSE_FS_ARCHIVE);
                json_t *j = access(archive, F_OK) == 0 ? NULL : load_serve_file(dir);
                wake = json_is_true(json_object_get(j, "autoResume"));
                timeout_s = serve_file_resume_timeout(j);
                json_decref(j);
        }
        if (!wake)
                return NULL;
        struct sandbox *s = NULL;
        char err[512];
        int64_t t0 = creg_now_ms();
        int rc = serve_resume(id, timeout_s, &s, err, sizeof(err));
        if (rc < 0) {
                fprintf(stderr, "cellvm serve: sandbox %s: its auto-resume: %s\n", id, err);
                return NULL;
        }
        if (rc > 0)
                fprintf(stderr,
                        "cellvm serve: sandbox %s resumed by a request (autoResume) in %lld ms "
                        "(timeout %g s)\n",
                        id, (long long)(creg_now_ms() - t0), timeout_s);
        return s;
}

/* Paused sandbox `key` of manifest `m` into `p`. */
static void fill_paused(const char *key, const struct csm *m, struct serve_paused *p)
{
        memset(p, 0, sizeof(*p));
        const char *id =
            m->sandbox_id[0] && strlen(m->sandbox_id) < sizeof(p->id) ? m->sandbox_id : key;
        snprintf(p->id, sizeof(p->id), "%s", id);
        snprintf(p->template_id, sizeof(p->template_id), "%s",
                 m->template_[0] && strlen(m->template_) < sizeof(p->template_id) ? m->template_
                                                                                  : "base");
        p->metadata = string_object(m->metadata);
        p->started_ms = (int64_t)(m->started_ms ? m->started_ms : m->created_ms);
        p->memory_mb = (unsigned)m->memory_mb;
        p->vcpus = (unsigned)m->vcpus;
}

/* Paused sandbox of record `dir` (named `key`) into `p`: 0 or a negative errno. */
static int read_paused(const char *dir, const char *key, struct serve_paused *p)
{
        struct csm m;
        if (csm_init(&m) < 0)
                return -ENOMEM;
        char err[PATH_MAX + 200];
        int rc = csm_read(dir, &m, err, sizeof(err));
        if (rc == 0 && strcmp(m.kind, "paused") != 0)
                rc = -ENOENT;
        if (rc == 0)
                fill_paused(key, &m, p);
        csm_free(&m);
        return rc;
}

struct paused_found {
        struct serve_paused *v;
        size_t n, max;
};

static int add_paused(const struct cpaused *p, const struct csm *m, void *ud)
{
        struct paused_found *f = ud;
        if (f->n == f->max) {
                size_t max = f->max ? 2 * f->max : 16;
                struct serve_paused *more = realloc(f->v, max * sizeof(*more));
                if (!more)
                        return -ENOMEM;
                f->v = more;
                f->max = max;
        }
        fill_paused(p->key, m, &f->v[f->n++]);
        return f->n == CPAUSED_MAX;
}

static int by_start(const void *a, const void *b)
{
        const struct serve_paused *x = a, *y = b;
        return x->started_ms < y->started_ms ? -1 : x->started_ms > y->started_ms;
}

int serve_paused_list(struct serve_paused **out, size_t *n)
{
        *out = NULL;
        *n = 0;
        char root[PATH_MAX];
        int rc = cpaused_root(root, sizeof(root));
        if (rc < 0)
                return rc;
        /* One more for the one being paused now. */
        struct paused_found f = {.v = malloc(sizeof(*f.v)), .max = 1};
        if (!f.v)
                return -ENOMEM;
        rc = cpaused_each(root, add_paused, &f, stderr);
        if (rc >= 0 && f.n == f.max) {
                struct serve_paused *more = realloc(f.v, (f.n + 1) * sizeof(*more));
                rc = more ? rc : -ENOMEM;
                f.v = more ? more : f.v;
        }
        if (rc < 0) {
                serve_paused_free(f.v, f.n);
                free(f.v);
                return rc;
        }
        if (describe_being_paused(NULL, &f.v[f.n]))
                f.n++;
        qsort(f.v, f.n, sizeof(*f.v), by_start);
        *out = f.v;
        *n = f.n;
        return 0;
}

void serve_paused_free(struct serve_paused *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                json_decref(v[i].metadata);
}

int serve_paused_get(const char *id, struct serve_paused *out)
{
        if (describe_being_paused(id, out))
                return 0;
        char root[PATH_MAX], dir[PATH_MAX];
        int rc = sbx_paused_find(id, root, sizeof(root), dir, sizeof(dir));
        if (rc < 0)
                return rc;
        const char *key = strrchr(dir, '/');
        return read_paused(dir, key ? key + 1 : dir, out);
}

json_t *serve_paused_shown(const char *id)
{
        char root[PATH_MAX], dir[PATH_MAX];
        if (sbx_paused_find(id, root, sizeof(root), dir, sizeof(dir)) < 0)
                return NULL;
        json_t *j = load_serve_file(dir);
        json_t *shown = json_object_get(j, "shown");
        json_t *out = json_is_object(shown) ? json_incref(shown) : NULL;
        json_decref(j);
        return out;
}

int serve_paused_kill(const char *id)
{
        pthread_mutex_lock(&pausing);
        char root[PATH_MAX];
        struct cpaused p;
        int rc = sbx_paused_find(id, root, sizeof(root), p.dir, sizeof(p.dir));
        if (rc == 0)
                rc = cpaused_remove(root, &p);
        pthread_mutex_unlock(&pausing);
        return rc == -ENOENT ? 0 : rc;
}
