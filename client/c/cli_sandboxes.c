/* `cellvm ps`, `cellvm kill`, and the registry record of run/shell's VM. */
#include "cli_sandboxes.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli_egress.h"
#include "egress_keeper.h"
#include "cli_help.h"
#include "cli_snapshot.h"
#include "host_tsc.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "manifest.h"
#include "paused.h"
#include "registry.h"

/* A TCG guest that could not be told the host's TSC frequency keeps time up to
 * 30% off: its own deadline then gets this slack (docs/SDK.md, "Lifetime"). */
#define TCG_CLOCK_SLACK 0.3

static struct creg reg = {.lock_fd = -1};
/* `reg` (its lock fd) is one per process; cellvm serve calls these from many
 * threads: held from sbx_reserve to sbx_record/sbx_release, and around
 * every other use of `reg` below. */
static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;

double sbx_guest_timeout_s(double s, bool kvm)
{
        uint64_t khz;
        if (kvm || cvm_host_tsc_khz(&khz) == 0)
                return s; /* the guest's clock advances at the host's rate */
        return s * (1 + TCG_CLOCK_SLACK) + 2.0;
}

static void fmt_duration(char *out, size_t cap, int64_t ms)
{
        const char *sign = ms < 0 ? "-" : "";
        int64_t s = (ms < 0 ? -ms : ms) / 1000;
        if (s >= 3600)
                snprintf(out, cap, "%s%" PRId64 "h%02" PRId64 "m", sign, s / 3600, s / 60 % 60);
        else if (s >= 60)
                snprintf(out, cap, "%s%" PRId64 "m%02" PRId64 "s", sign, s / 60, s % 60);
        else
                snprintf(out, cap, "%s%" PRId64 "s", sign, s);
}

/* VmRSS in MiB and the state letter of /proc/PID. */
static void proc_info(pid_t pid, unsigned long *rss_mb, char *state)
{
        char path[64], line[256];
        *rss_mb = 0;
        *state = '?';
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                unsigned long kb;
                char st;
                if (sscanf(line, "VmRSS: %lu", &kb) == 1)
                        *rss_mb = kb / 1024;
                else if (sscanf(line, "State: %c", &st) == 1)
                        *state = st;
        }
        fclose(f);
}

static int open_locked(void)
{
        char err[600];
        int rc = creg_open(&reg, err, sizeof(err));
        if (rc < 0) {
                fprintf(stderr, "cellvm: %s\n", err);
                return rc;
        }
        rc = creg_lock(&reg);
        if (rc < 0)
                fprintf(stderr, "cellvm: locking %s/lock: %s\n", reg.dir, strerror(-rc));
        return rc;
}

static struct creg_entry entries[CREG_MAX_ENTRIES];
static struct cpaused paused[CPAUSED_MAX];

/* The paused store's records into `paused`: their count, or -1 (said on stderr). */
static int read_paused(char *root, size_t rootlen)
{
        int rc = cpaused_root(root, rootlen);
        if (rc < 0) {
                fprintf(stderr, "cellvm: the paused store's directory: %s\n", strerror(-rc));
                return -1;
        }
        int n = cpaused_list(root, paused, CPAUSED_MAX, stderr);
        if (n < 0) {
                fprintf(stderr, "cellvm: reading %s: %s\n", root, strerror(-n));
                return -1;
        }
        return n;
}

/* The `metadata=` line of `key`'s entry (one line of JSON) into `out`;
 * "{}" when it has none or a longer one than fits. Call locked. */
static void read_metadata(const char *key, char *out, size_t outlen)
{
        snprintf(out, outlen, "{}");
        char path[sizeof(((struct sbx_rec *)0)->path)];
        if (snprintf(path, sizeof(path), "%s/%s.sandbox", reg.dir, key) >= (int)sizeof(path))
                return;
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) > 0) {
                if (strncmp(line, "metadata=", 9) != 0)
                        continue;
                if (line[len - 1] == '\n')
                        line[--len] = '\0';
                if ((size_t)len - 9 < outlen)
                        memcpy(out, line + 9, (size_t)len - 9 + 1);
                break;
        }
        free(line);
        fclose(f);
}

/* Adds `text` (JSON, an object) to `o` as `name`; an empty object when it
 * does not parse as one. */
static void set_json_text(json_t *o, const char *name, const char *text)
{
        json_t *v = json_loads(text, 0, NULL);
        if (!json_is_object(v)) {
                json_decref(v);
                v = json_object();
        }
        json_object_set_new(o, name, v);
}

/* The guest's own deadline for a lifetime of `s` seconds of sandbox `e`: one
 * paused at its timeout keeps running long enough for the pause. */
static uint64_t entry_guest_ms(const struct creg_entry *e, double s)
{
        double margin = creg_pauses_at_timeout(e) ? CREG_PAUSE_MARGIN_S : 0;
        return (uint64_t)((sbx_guest_timeout_s(s, strcmp(e->accel, "kvm") == 0) + margin) * 1000);
}

/* The guest's SET_DEADLINE timeout_ms for a sandbox ending at `deadline_ms`. */
static uint64_t guest_timeout_ms(const struct creg_entry *e, int64_t deadline_ms)
{
        int64_t left = deadline_ms - creg_now_ms();
        return entry_guest_ms(e, left > 1 ? (double)left / 1000.0 : 0.001);
}

/* The holder of `e`'s channel still runs (its pid has the recorded start time). */
bool sbx_held(const struct creg_entry *e)
{
        return e->holder_pid > 0 && creg_proc_start(e->holder_pid) == e->holder_start;
}

/* An entry as `cellvm ps --json` and `cellvm create --json` print it; `path`
 * is its file, which a holder watches for new deadlines (docs/SDK.md). */
static json_t *sbx_entry_json(const struct creg_entry *e, const char *metadata, const char *path)
{
        json_t *o = json_object();
        json_object_set_new(o, "sandbox_id", json_string(e->id));
        json_object_set_new(o, "key", json_string(e->key));
        json_object_set_new(o, "state", json_string("running"));
        json_object_set_new(o, "vmm", json_string(e->vmm));
        json_object_set_new(o, "accel", json_string(e->accel));
        json_object_set_new(o, "pid", json_integer(e->pid));
        json_object_set_new(o, "address", json_string(e->address));
        json_object_set_new(o, "dir", json_string(e->dir));
        json_object_set_new(o, "image", json_string(e->image));
        json_object_set_new(o, "template", json_string(e->template_));
        json_object_set_new(o, "network", json_string(e->network[0] ? e->network : "none"));
        json_object_set_new(o, "on_timeout",
                            json_string(creg_pauses_at_timeout(e) ? "pause" : "kill"));
        json_object_set_new(o, "started_ms", json_integer(e->started_ms));
        json_object_set_new(o, "deadline_ms", json_integer(e->deadline_ms));
        json_object_set_new(o, "memory_mb", json_integer(e->memory_mb));
        json_object_set_new(o, "vcpus", json_integer(e->vcpus));
        json_object_set_new(o, "keeper_pid", json_integer(e->keeper_pid));
        json_object_set_new(o, "holder_pid", json_integer(e->holder_pid));
        json_object_set_new(o, "holder_start", json_integer((json_int_t)e->holder_start));
        json_object_set_new(o, "held", json_boolean(sbx_held(e)));
        json_object_set_new(o, "guest_timeout_ms",
                            json_integer((json_int_t)guest_timeout_ms(e, e->deadline_ms)));
        json_object_set_new(o, "entry", json_string(path));
        set_json_text(o, "metadata", metadata ? metadata : "{}");
        /* A sandbox with egress rules: the variables its user processes need. */
        char rules[sizeof(e->dir) + sizeof(CVM_EGRESS_RULES) + 1];
        snprintf(rules, sizeof(rules), "%s/" CVM_EGRESS_RULES, e->dir);
        if (e->dir[0] && access(rules, F_OK) == 0)
                json_object_set_new(o, "egress_envs", cli_egress_envs());
        return o;
}

/* Prints `o` as one line and frees it; 0, or 3 when it could not be printed. */
static int print_json_line(json_t *o)
{
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!text) {
                fputs("cellvm: out of memory\n", stderr);
                return 3;
        }
        puts(text);
        free(text);
        return 0;
}

/* A JSON object of the manifest's one-line JSON text `text`, or an empty
 * one (the store is ours: a damaged field is not worth failing a list). */
static json_t *json_field(const char *text)
{
        json_t *v = text ? json_loads(text, 0, NULL) : NULL;
        if (json_is_object(v))
                return v;
        json_decref(v);
        return json_object();
}

/* A paused sandbox as `ps --json` lists it: what the SDK's list, info,
 * connect (its resume) and kill need of it, from its manifest `m`. NULL
 * when out of memory. */
json_t *sbx_paused_json(const struct cpaused *p, const struct csm *m)
{
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_object_set_new(o, "sandbox_id",
                            json_string(p->sandbox_id[0] ? p->sandbox_id : p->key));
        json_object_set_new(o, "key", json_string(p->key));
        json_object_set_new(o, "state", json_string("paused"));
        json_object_set_new(o, "vmm", json_string(p->vmm));
        json_object_set_new(o, "record", json_string(p->dir));
        json_object_set_new(
            o, "started_ms",
            json_integer((json_int_t)(m->started_ms ? m->started_ms : m->created_ms)));
        json_object_set_new(o, "paused_ms", json_integer((json_int_t)m->created_ms));
        json_object_set_new(o, "memory_mb", json_integer((json_int_t)m->memory_mb));
        json_object_set_new(o, "vcpus", json_integer((json_int_t)m->vcpus));
        json_object_set_new(o, "image", json_string(m->image ? m->image : ""));
        json_object_set_new(o, "template", json_string(m->template_ ? m->template_ : ""));
        json_object_set_new(o, "metadata", json_field(m->metadata));
        json_object_set_new(o, "envs", json_field(m->envs));
        json_object_set_new(o, "on_timeout",
                            json_string(strcmp(m->on_timeout, "pause") == 0 ? "pause" : "kill"));
        return o;
}

static int add_paused_json(const struct cpaused *p, const struct csm *m, void *ud)
{
        json_t *o = sbx_paused_json(p, m);
        return o ? json_array_append_new(ud, o) : -ENOMEM;
}

static int by_key(const void *a, const void *b)
{
        const char *x = json_string_value(json_object_get(*(json_t *const *)a, "key"));
        const char *y = json_string_value(json_object_get(*(json_t *const *)b, "key"));
        return strcmp(x ? x : "", y ? y : "");
}

/* The paused sandboxes' `ps --json` entries, appended to `all` by key, each
 * manifest read once: 0, or -1 (said on stderr). */
static int append_paused_json(json_t *all)
{
        char root[PATH_MAX];
        json_t *found = json_array();
        int rc = found ? cpaused_root(root, sizeof(root)) : -ENOMEM;
        if (rc == 0)
                rc = cpaused_each(root, add_paused_json, found, stderr);
        size_t n = json_array_size(found);
        json_t **v = rc < 0 ? NULL : malloc((n ? n : 1) * sizeof(*v));
        if (!v) {
                fprintf(stderr, "cellvm: reading the paused store: %s\n",
                        strerror(rc < 0 ? -rc : ENOMEM));
                json_decref(found);
                return -1;
        }
        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(found, i);
        qsort(v, n, sizeof(*v), by_key);
        for (size_t i = 0; i < n; i++)
                json_array_append(all, v[i]);
        free(v);
        json_decref(found);
        return 0;
}

/* `cellvm ps --json`: one JSON array of the live (oldest first), then the paused. */
static int ps_json(int n)
{
        json_t *all = json_array();
        static char metadata[64 * 1024];
        if (open_locked() == 0) {
                for (int i = 0; i < n; i++) {
                        char path[sizeof(((struct sbx_rec *)0)->path)];
                        if (snprintf(path, sizeof(path), "%s/%s.sandbox", reg.dir,
                                     entries[i].key) >= (int)sizeof(path))
                                path[0] = '\0'; /* cannot happen: the sizes add up */
                        read_metadata(entries[i].key, metadata, sizeof(metadata));
                        json_array_append_new(all, sbx_entry_json(&entries[i], metadata, path));
                }
                creg_unlock(&reg);
        }
        int failed = append_paused_json(all);
        int rc = print_json_line(all);
        return failed ? 3 : rc;
}

int cmd_ps(int argc, char **argv)
{
        static const char ps_usage[] =
            "usage: cellvm ps [--json]\n"
            "Lists this user's live sandboxes (key, age, time left, VMM pid, memory, state,\n"
            "sandbox id), then the paused ones; ends those past deadline + grace.\n";
        if (argc == 2 && cli_is_help(argv[1])) {
                fputs(ps_usage, stdout);
                return 0;
        }
        bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
        if (argc != 1 && !json) {
                fprintf(stderr, "cellvm: ps: unexpected %s (usage: cellvm ps [--json])\n", argv[1]);
                return 2;
        }
        if (open_locked() < 0)
                return 3;
        int n = creg_sweep(&reg, entries, CREG_MAX_ENTRIES, stderr);
        creg_unlock(&reg);
        if (n < 0) {
                fprintf(stderr, "cellvm: reading %s: %s\n", reg.dir, strerror(-n));
                return 3;
        }
        if (json)
                return ps_json(n);
        printf("%-16s %-8s %-8s %-14s %-13s %-9s %s\n", "KEY", "AGE", "LEFT", "VMM", "MEMORY",
               "STATE", "SANDBOX ID");
        int64_t now = creg_now_ms();
        for (int i = 0; i < n; i++) {
                const struct creg_entry *e = &entries[i];
                char age[24], left[24], vmm[48], mem[32];
                unsigned long rss;
                char st;
                fmt_duration(age, sizeof(age), now - e->started_ms);
                fmt_duration(left, sizeof(left), e->deadline_ms - now);
                snprintf(vmm, sizeof(vmm), "%s %d", e->vmm, (int)e->pid);
                proc_info(e->pid, &rss, &st);
                snprintf(mem, sizeof(mem), "%luM/%uM", rss, e->memory_mb);
                const char *state = st == 'T' || st == 't' ? "frozen"
                                    : now > e->deadline_ms ? "expiring"
                                                           : "running";
                printf("%-16s %-8s %-8s %-14s %-13s %-9s %s\n", e->key, age, left, vmm, mem, state,
                       e->id);
        }
        /* Paused ones too, as Sandbox.list() shows them (E2B's state "paused"). */
        char root[PATH_MAX];
        int np = read_paused(root, sizeof(root));
        for (int i = 0; i < np; i++) {
                const struct cpaused *p = &paused[i];
                char age[24], vmm[48], mem[32];
                fmt_duration(age, sizeof(age), now - (int64_t)p->started_ms);
                snprintf(vmm, sizeof(vmm), "%s -", p->vmm);
                snprintf(mem, sizeof(mem), "-/%" PRIu64 "M", p->memory_mb);
                printf("%-16s %-8s %-8s %-14s %-13s %-9s %s\n", p->key, age, "-", vmm, mem,
                       "paused", p->sandbox_id[0] ? p->sandbox_id : p->key);
        }
        return np < 0 ? 3 : 0;
}

/* E2B's kill of a paused sandbox: its record (saved state and all) removed.
 * Whether `ident` named one; a failure sets *status. */
static bool kill_paused(const char *ident, int *status)
{
        char root[PATH_MAX];
        int n = read_paused(root, sizeof(root));
        if (n < 0) {
                *status = 3;
                return false;
        }
        for (int i = 0; i < n; i++) {
                const struct cpaused *p = &paused[i];
                if (strcmp(ident, p->key) != 0 && strcmp(ident, p->sandbox_id) != 0)
                        continue;
                int rc = cpaused_remove(root, p);
                if (rc < 0) {
                        fprintf(stderr, "cellvm: removing %s: %s\n", p->dir, strerror(-rc));
                        *status = 3;
                } else {
                        printf("killed %s (%s, paused: its saved state removed)\n", p->key,
                               p->sandbox_id[0] ? p->sandbox_id : p->key);
                }
                return true;
        }
        return false;
}

int cmd_kill(int argc, char **argv)
{
        if (argc == 2 && cli_is_help(argv[1])) {
                fputs("usage: cellvm kill ID... | kill --all\n"
                      "Stops live sandboxes (ID: the key or the sandbox id, as cellvm ps shows);\n"
                      "kill ID of a paused one removes its saved state; --all stops the running\n"
                      "ones and keeps the paused.\n"
                      "exit status: 0 done, 1 an ID matched nothing, 2 usage, 3 failed.\n",
                      stdout);
                return 0;
        }
        bool all = argc == 2 && strcmp(argv[1], "--all") == 0;
        if (argc < 2 || (!all && argv[1][0] == '-')) {
                fprintf(stderr, "cellvm: kill: %s (usage: cellvm kill ID... | kill --all)\n",
                        argc < 2 ? "no ID given" : "unknown option");
                return 2;
        }
        if (open_locked() < 0)
                return 3;
        int n = creg_sweep(&reg, entries, CREG_MAX_ENTRIES, stderr);
        if (n < 0) {
                creg_unlock(&reg);
                fprintf(stderr, "cellvm: reading %s: %s\n", reg.dir, strerror(-n));
                return 3;
        }
        int status = 0;
        for (int a = all ? 0 : 1; a < (all ? 1 : argc); a++) {
                bool found = false;
                for (int i = 0; i < n; i++) {
                        struct creg_entry *e = &entries[i];
                        if (!e->key[0])
                                continue; /* killed already */
                        if (!all && strcmp(argv[a], e->key) != 0 && strcmp(argv[a], e->id) != 0 &&
                            (!e->address[0] || strcmp(argv[a], e->address) != 0))
                                continue;
                        /* Said killed once it is gone: the caller's next look finds no VMM. */
                        int pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
                        /* Opened before the directory goes: its egress keeper ends too. */
                        int egress = e->dir[0] ? cegress_keeper_lock_open(e->dir) : -ENOENT;
                        bool signalled = creg_kill_vmm(e) == 1;
                        creg_remove(&reg, e, true);
                        if (pidfd >= 0) {
                                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                                while (signalled && poll(&p, 1, 10000) < 0 && errno == EINTR)
                                        ;
                                close(pidfd);
                        }
                        if (egress >= 0 && cegress_keeper_wait(egress, 5000) < 0)
                                fprintf(stderr,
                                        "cellvm: kill %s: its egress keeper is still "
                                        "running after 5 s\n",
                                        e->key);
                        printf("killed %s (%s)\n", e->key, e->id);
                        e->key[0] = '\0';
                        found = true;
                }
                if (!all && !found)
                        found = kill_paused(argv[a], &status);
                if (!all && !found) {
                        fprintf(stderr,
                                "cellvm: no live or paused sandbox %s (cellvm ps lists them)\n",
                                argv[a]);
                        status = 1;
                }
        }
        creg_unlock(&reg);
        return status;
}

void sbx_sweep(void)
{
        char err[600];
        if (creg_open(&reg, err, sizeof(err)) < 0 || creg_lock(&reg) < 0)
                return; /* no registry here: nothing of ours to enforce */
        (void)creg_sweep(&reg, entries, CREG_MAX_ENTRIES, stderr);
        creg_unlock(&reg);
}

int sbx_reserve(double lifetime_s)
{
        double max_t = creg_max_timeout_s();
        if (lifetime_s > max_t) {
                if (max_t >= 3600 && max_t == (double)(long)(max_t / 3600) * 3600)
                        fprintf(stderr, "cellvm: Timeout cannot be greater than %ld hours\n",
                                (long)(max_t / 3600));
                else
                        fprintf(stderr, "cellvm: Timeout cannot be greater than %g seconds\n",
                                max_t);
                fputs("cellvm: (the maximum sandbox timeout, $CELLVM_MAX_TIMEOUT)\n", stderr);
                return -EINVAL;
        }
        pthread_mutex_lock(&reg_mutex);
        if (open_locked() < 0) {
                pthread_mutex_unlock(&reg_mutex);
                return -EIO;
        }
        int n = creg_sweep(&reg, entries, CREG_MAX_ENTRIES, stderr);
        unsigned limit = creg_max_sandboxes();
        if (n >= 0 && (unsigned)n >= limit) {
                creg_unlock(&reg);
                pthread_mutex_unlock(&reg_mutex);
                fprintf(stderr,
                        "cellvm: Rate limit exceeded, please try again later: you have reached the "
                        "maximum number of concurrent sandboxes (%u); kill one (cellvm kill ID) or "
                        "raise $CELLVM_MAX_SANDBOXES\n",
                        limit);
                return -EAGAIN;
        }
        return 0;
}

void sbx_release(void)
{
        creg_unlock(&reg);
        pthread_mutex_unlock(&reg_mutex);
}

bool sbx_envs_arg_ok(const char *arg)
{
        json_t *v = json_loads(arg, 0, NULL);
        bool ok = json_is_object(v) && !strpbrk(arg, "\r\n");
        json_decref(v);
        if (!ok)
                fputs("cellvm: --envs takes a JSON object on one line\n", stderr);
        return ok;
}

int sbx_default_timeout(double *t)
{
        const char *def = getenv("CELLVM_DEFAULT_TIMEOUT");
        char *end = NULL;
        *t = def && def[0] ? strtod(def, &end) : 300;
        if (end && (*end || !(*t > 0))) {
                fputs("cellvm: $CELLVM_DEFAULT_TIMEOUT takes seconds > 0\n", stderr);
                return -EINVAL;
        }
        return 0;
}

int sbx_new_key(const char *vmm, char *key, size_t keylen)
{
        pthread_mutex_lock(&reg_mutex);
        int rc = open_locked();
        if (rc == 0) {
                rc = creg_new_key(&reg, vmm, key, keylen);
                if (rc < 0)
                        fprintf(stderr, "cellvm: a new sandbox key: %s\n", strerror(-rc));
                creg_unlock(&reg);
        }
        pthread_mutex_unlock(&reg_mutex);
        return rc;
}

int sbx_record_as(struct sbx_rec *rec, const char *key, const char *template_, const struct cvm *vm,
                  const char *image, unsigned memory_mb, unsigned vcpus, double boot_budget_s,
                  double lifetime_s)
{
        struct creg_entry *e = &rec->e;
        memset(e, 0, sizeof(*e));
        rec->path[0] = '\0';
        int rc = 0;
        if (!key) {
                /* The key's prefix: the VMM's name in [a-z0-9], at most 16 characters. */
                char prefix[17];
                size_t plen = 0;
                for (const char *p = cvm_vmm_name(vm->vmm); *p && plen < sizeof(prefix) - 1; p++)
                        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
                                prefix[plen++] = *p;
                prefix[plen] = '\0';
                rc = creg_new_key(&reg, prefix, e->key, sizeof(e->key));
        } else if (strlen(key) >= sizeof(e->key)) {
                rc = -ENAMETOOLONG;
        } else {
                char path[sizeof(rec->path)];
                snprintf(path, sizeof(path), "%s/%s.sandbox", reg.dir, key);
                /* A live sandbox has it (under the lock: no one takes it meanwhile). */
                rc = access(path, F_OK) == 0 ? -EEXIST : 0;
                snprintf(e->key, sizeof(e->key), "%s", key);
        }
        if (template_ && strlen(template_) < sizeof(e->template_))
                strcpy(e->template_, template_);
        snprintf(e->vmm, sizeof(e->vmm), "%s", cvm_vmm_name(vm->vmm));
        snprintf(e->accel, sizeof(e->accel), "%s", vm->kvm ? "kvm" : "tcg");
        snprintf(e->network, sizeof(e->network), "%s", vm->user_net ? "user" : "none");
        if (vm->vmm != CVM_VMM_QEMU)
                e->address[0] = '\0'; /* hybrid vsock needs CONNECT first: no plain address */
        else if (vm->over_vsock)
                snprintf(e->address, sizeof(e->address), "vsock:%u:1024", vm->vsock_cid);
        else
                snprintf(e->address, sizeof(e->address), "unix:%s", vm->sock);
        memcpy(e->id, e->key, sizeof(e->key)); /* a VM's id is its key, as in the SDK */
        snprintf(e->dir, sizeof(e->dir), "%s", vm->dir);
        char abs[PATH_MAX];
        const char *img = realpath(image, abs) ? abs : image;
        if (strlen(img) < sizeof(e->image))
                strcpy(e->image, img); /* else left empty: informational only */
        e->pid = vm->pid;
        e->pid_start = creg_proc_start(vm->pid);
        e->started_ms = creg_now_ms();
        e->deadline_ms = e->started_ms + (int64_t)((boot_budget_s + lifetime_s) * 1000);
        e->memory_mb = memory_mb;
        e->vcpus = vcpus;
        e->creator_pid = getpid();
        e->creator_start = creg_proc_start(getpid());
        if (rc == 0 && e->pid_start != 0)
                rc = creg_write(&reg, e);
        else if (rc == 0)
                rc = -ESRCH;
        creg_unlock(&reg);
        pthread_mutex_unlock(&reg_mutex);
        if (rc < 0) {
                fprintf(stderr, "cellvm: recording the VM in %s as %s: %s\n", reg.dir,
                        key ? key : "a new key", strerror(-rc));
                return rc;
        }
        int n = snprintf(rec->path, sizeof(rec->path), "%s/%s.sandbox", reg.dir, e->key);
        if (n < 0 || (size_t)n >= sizeof(rec->path))
                rec->path[0] = '\0'; /* cannot happen: the sizes add up */
        return 0;
}

void sbx_record(struct sbx_rec *rec, const struct cvm *vm, const char *image, unsigned memory_mb,
                unsigned vcpus, double boot_budget_s, double lifetime_s)
{
        (void)sbx_record_as(rec, NULL, NULL, vm, image, memory_mb, vcpus, boot_budget_s,
                            lifetime_s); /* said on stderr; the VM still runs */
}

int sbx_find(const char *ident, struct creg_entry *out, char *metadata, size_t mlen)
{
        if (open_locked() < 0)
                return -EIO;
        int n = creg_sweep(&reg, entries, CREG_MAX_ENTRIES, stderr);
        int rc = n < 0 ? n : -ENOENT;
        for (int i = 0; i < n && rc == -ENOENT; i++) {
                if (strcmp(ident, entries[i].key) != 0 && strcmp(ident, entries[i].id) != 0 &&
                    (!entries[i].address[0] || strcmp(ident, entries[i].address) != 0))
                        continue;
                *out = entries[i];
                rc = 0;
        }
        if (rc == 0)
                read_metadata(out->key, metadata, mlen);
        else
                snprintf(metadata, mlen, "{}");
        creg_unlock(&reg);
        return rc;
}

void sbx_remove(const struct creg_entry *e)
{
        if (open_locked() < 0)
                return;
        creg_kill_vmm(e);
        creg_remove(&reg, e, true);
        creg_unlock(&reg);
}

static void rewrite(struct sbx_rec *rec)
{
        pthread_mutex_lock(&reg_mutex);
        if (creg_lock(&reg) == 0) {
                int rc = creg_write(&reg, &rec->e);
                if (rc < 0)
                        fprintf(stderr, "cellvm: updating %s: %s\n", rec->path, strerror(-rc));
                creg_unlock(&reg);
        }
        pthread_mutex_unlock(&reg_mutex);
}

void sbx_set_deadline(struct sbx_rec *rec, double lifetime_s)
{
        if (!rec->path[0])
                return;
        rec->e.deadline_ms = creg_now_ms() + (int64_t)(lifetime_s * 1000);
        rewrite(rec);
}

void sbx_start_clock(struct sbx_rec *rec, struct cvc *c, const struct cvm *vm, double lifetime_s)
{
        if (rec->path[0]) {
                struct creg_entry *e = &rec->e;
                /* The channel may have changed (vsock -> serial) during the connect. */
                if (vm->vmm == CVM_VMM_QEMU && !vm->over_vsock)
                        snprintf(e->address, sizeof(e->address), "unix:%s", vm->sock);
                memcpy(e->id, e->key, sizeof(e->key)); /* a VM's id is its key, as in the SDK */
                e->started_ms = creg_now_ms();
                e->deadline_ms = e->started_ms + (int64_t)(lifetime_s * 1000);
                rewrite(rec);
        }
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "timeout_ms");
        double margin = creg_pauses_at_timeout(&rec->e) ? CREG_PAUSE_MARGIN_S : 0;
        cv_enc_uint(&b, (uint64_t)((sbx_guest_timeout_s(lifetime_s, vm->kvm) + margin) * 1000));
        if (cvc_call_buf(c, CV_MSG_SET_DEADLINE, &b, NULL) < 0)
                fprintf(stderr, "cellvm: SET_DEADLINE: %s (the host still enforces it)\n",
                        cvc_errmsg(c));
        cv_buf_free(&b);
}

void sbx_forget(struct sbx_rec *rec)
{
        if (rec->path[0]) {
                (void)unlink(rec->path); /* async-signal-safe; gone already is fine */
                rec->path[0] = '\0';
        }
}

void sbx_describe(struct sbx_rec *rec, const char *template_, const char *metadata)
{
        if (template_ && strlen(template_) < sizeof(rec->e.template_))
                strcpy(rec->e.template_, template_);
        rec->e.metadata = metadata;
        if (rec->path[0])
                rewrite(rec);
}

int sbx_print_json(const struct sbx_rec *rec, const struct snap_report *report)
{
        json_t *o = sbx_entry_json(&rec->e, rec->e.metadata, rec->path);
        if (report) {
                /* ns after the VMM's spawn; a stage the restore had not is left out */
                const struct {
                        const char *name;
                        uint64_t ns;
                } stamps[] = {{"state_loaded", report->st.state_loaded},
                              {"running", report->st.running},
                              {"handshake", report->st.handshake},
                              {"new_generation", report->st.new_generation},
                              {"deadline", report->deadline}};
                json_t *r = json_object();
                json_object_set_new(r, "vmm_spawn", json_integer(0));
                for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++)
                        if (stamps[i].ns)
                                json_object_set_new(r, stamps[i].name,
                                                    json_integer((json_int_t)stamps[i].ns));
                json_object_set_new(o, "restore", r);
                if (report->snapdir[0])
                        json_object_set_new(o, "snapshot_dir", json_string(report->snapdir));
        }
        return print_json_line(o);
}

static const char set_timeout_usage[] =
    "usage: cellvm set-timeout [--registry-only] [--json] ID S\n"
    "\n"
    "Live sandbox ID (its key or id, as cellvm ps shows them) ends S seconds from now\n"
    "(at most $CELLVM_MAX_TIMEOUT): recorded in the registry, where every cellvm process\n"
    "enforces it, and sent to the guest's init (SET_DEADLINE) unless another process\n"
    "holds its channel (that process relays it) or --registry-only (the caller tells\n"
    "the guest itself: --json prints the guest_timeout_ms to send).\n"
    "exit status: 0 set, 1 no such live sandbox, 2 usage, 3 failed.\n";

int sbx_guest_call(const struct creg_entry *e, uint16_t type, struct cv_buf *b, char *err,
                   size_t errlen)
{
        struct cvc_connect_opts o = {.timeout_ms = 10000, .hello_resend_ms = CVC_HELLO_RESEND_MS};
        struct cvc *c = NULL;
        int rc = cvc_connect_ex(e->address, &o, &c);
        if (rc == 0)
                rc = cvc_call_buf(c, type, b, NULL);
        if (rc < 0)
                snprintf(err, errlen, "%s", c ? cvc_errmsg(c) : strerror(-rc));
        cvc_close(c); /* NULL-safe */
        return rc;
}

/* SET_DEADLINE to the agent of `e` over a connection of our own. */
static void tell_guest(const struct creg_entry *e, uint64_t timeout_ms)
{
        if (!e->address[0]) {
                fprintf(stderr,
                        "cellvm: set-timeout %s: recorded (the host enforces it); its "
                        "guest is reached over hybrid vsock only by its holder\n",
                        e->key);
                return;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "timeout_ms");
        cv_enc_uint(&b, timeout_ms);
        char why[512];
        if (sbx_guest_call(e, CV_MSG_SET_DEADLINE, &b, why, sizeof(why)) < 0)
                fprintf(stderr,
                        "cellvm: set-timeout %s: recorded (the host enforces it) but the guest "
                        "was not reached: %s\n",
                        e->key, why);
        cv_buf_free(&b);
}

/* Changes the entry of live sandbox `ident` under the lock if it is still the
 * same VM's: `change` edits *out (0: written, > 0: left as it was, < 0: that
 * error). *out is the entry as it is then. 0, -ENOENT or a negative errno. */
static int update_entry(const char *ident, int (*change)(struct creg_entry *e, void *arg),
                        void *arg, struct creg_entry *out)
{
        static char metadata[64 * 1024];
        pthread_mutex_lock(&reg_mutex);
        int rc = sbx_find(ident, out, metadata, sizeof(metadata));
        /* sbx_find unlocked: the entry is read again under the lock. */
        if (rc == 0 && (rc = creg_lock(&reg)) == 0) {
                char why[128], path[sizeof(((struct sbx_rec *)0)->path)], text[4096];
                struct creg_entry cur;
                snprintf(path, sizeof(path), "%s/%s.sandbox", reg.dir, out->key);
                FILE *f = fopen(path, "re");
                size_t len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
                if (f)
                        fclose(f);
                text[len] = '\0';
                if (!f || creg_parse(text, out->key, &cur, why, sizeof(why)) < 0 ||
                    cur.pid != out->pid || cur.pid_start != out->pid_start) {
                        rc = -ENOENT; /* ended meanwhile */
                } else {
                        *out = cur;
                        out->metadata = metadata;
                        rc = change(out, arg);
                        rc = rc == 0 ? creg_write(&reg, out) : rc > 0 ? 0 : rc;
                }
                creg_unlock(&reg);
        }
        pthread_mutex_unlock(&reg_mutex);
        return rc;
}

static int set_deadline_to(struct creg_entry *e, void *deadline_ms)
{
        e->deadline_ms = *(const int64_t *)deadline_ms;
        return 0;
}

int cmd_set_timeout(int argc, char **argv)
{
        bool registry_only = false, json = false, help = argc == 2 && cli_is_help(argv[1]);
        int a = 1;
        for (; a < argc && argv[a][0] == '-' && a + 2 < argc; a++) {
                if (strcmp(argv[a], "--registry-only") == 0)
                        registry_only = true;
                else if (strcmp(argv[a], "--json") == 0)
                        json = true;
                else
                        break;
        }
        if (help || argc - a != 2) {
                if (!help)
                        fprintf(stderr, "cellvm: set-timeout: %s\n",
                                a < argc && argv[a][0] == '-' ? "unknown option"
                                                              : "takes ID and S (seconds)");
                fputs(set_timeout_usage, help ? stdout : stderr);
                return help ? 0 : 2;
        }
        const char *id = argv[a];
        char *end;
        double timeout_s = strtod(argv[a + 1], &end);
        if (*end || !(timeout_s > 0)) {
                fputs("cellvm: set-timeout takes seconds > 0\n", stderr);
                return 2;
        }
        if (timeout_s > creg_max_timeout_s()) {
                fprintf(stderr,
                        "cellvm: Timeout cannot be greater than %g seconds (the maximum sandbox "
                        "timeout, $CELLVM_MAX_TIMEOUT)\n",
                        creg_max_timeout_s());
                return 2;
        }
        struct creg_entry e;
        int64_t deadline_ms = creg_now_ms() + (int64_t)(timeout_s * 1000);
        int rc = update_entry(id, set_deadline_to, &deadline_ms, &e);
        if (rc == -ENOENT) {
                fprintf(stderr, "cellvm: set-timeout %s: no live sandbox has that id or key\n", id);
                return 1;
        }
        if (rc < 0) {
                fprintf(stderr, "cellvm: set-timeout %s: %s\n", id, strerror(-rc));
                return 3;
        }
        uint64_t guest_ms = entry_guest_ms(&e, timeout_s);
        bool held = sbx_held(&e);
        if (!registry_only && !held)
                tell_guest(&e, guest_ms);
        if (!json)
                return 0;
        json_t *o = json_object();
        json_object_set_new(o, "sandbox_id", json_string(e.id));
        json_object_set_new(o, "deadline_ms", json_integer(e.deadline_ms));
        json_object_set_new(o, "guest_timeout_ms", json_integer((json_int_t)guest_ms));
        json_object_set_new(o, "held", json_boolean(held));
        return print_json_line(o);
}

static const char hold_usage[] =
    "usage: cellvm hold [--release] ID PID\n"
    "\n"
    "Records that process PID holds the agent channel of live sandbox ID (the SDK\n"
    "does, from its connect on); --release ends PID's own hold (its close). QEMU's\n"
    "serial channel serves one client at a time: holding one that another live\n"
    "process holds is refused, naming that process. cellvm set-timeout leaves a held\n"
    "sandbox's guest to its holder, which relays the new deadline (docs/SDK.md).\n"
    "exit status: 0 done, 1 no such live sandbox, 2 usage, 3 failed, 4 held by another.\n";

struct hold_change {
        pid_t pid;
        uint64_t start;
        bool release;
};

static int hold_change(struct creg_entry *e, void *arg)
{
        const struct hold_change *h = arg;
        if (h->release) {
                if (e->holder_pid != h->pid)
                        return 1; /* not its hold (another took it over, or none) */
                e->holder_pid = 0;
                e->holder_start = 0;
                return 0;
        }
        if (sbx_held(e) && e->holder_pid != h->pid && strncmp(e->address, "unix:", 5) == 0)
                return -EBUSY;
        e->holder_pid = h->pid;
        e->holder_start = h->start;
        return 0;
}

int sbx_parse_pid(const char *s, pid_t *pid)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 1 || v > INT_MAX)
                return -EINVAL;
        *pid = (pid_t)v;
        return 0;
}

void sbx_hold(struct sbx_rec *rec, pid_t pid)
{
        rec->e.holder_pid = pid;
        rec->e.holder_start = pid ? creg_proc_start(pid) : 0;
}

int cmd_hold(int argc, char **argv)
{
        bool help = argc == 2 && cli_is_help(argv[1]);
        struct hold_change h = {.release = argc == 4 && strcmp(argv[1], "--release") == 0};
        int a = h.release ? 2 : 1;
        if (help || argc - a != 2 || sbx_parse_pid(argv[a + 1], &h.pid) < 0) {
                if (!help && argc - a != 2)
                        fputs("cellvm: hold: takes [--release] ID PID\n", stderr);
                else if (!help)
                        fprintf(stderr, "cellvm: hold: bad PID %s (a process id > 1)\n",
                                argv[a + 1]);
                fputs(hold_usage, help ? stdout : stderr);
                return help ? 0 : 2;
        }
        h.start = creg_proc_start(h.pid);
        if (!h.release && !h.start) {
                fprintf(stderr, "cellvm: hold %s: process %d is not running\n", argv[a],
                        (int)h.pid);
                return 2;
        }
        struct creg_entry e;
        int rc = update_entry(argv[a], hold_change, &h, &e);
        if (rc == -ENOENT) {
                fprintf(stderr, "cellvm: hold %s: no live sandbox has that id or key\n", argv[a]);
                return 1;
        }
        if (rc == -EBUSY) {
                fprintf(stderr,
                        "cellvm: sandbox %s is in use by process %d: its channel (QEMU's "
                        "virtio-serial socket) serves one client at a time; list, get_info, "
                        "set_timeout and kill work meanwhile (vhost-vsock has no such limit)\n",
                        e.id, (int)e.holder_pid);
                return 4;
        }
        if (rc < 0) {
                fprintf(stderr, "cellvm: hold %s: %s\n", argv[a], strerror(-rc));
                return 3;
        }
        return 0;
}
