/* A snapshot's manifest: see manifest.h and docs/SNAPSHOTS.md, "Manifest". */
#include "manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"       /* cv_write_all */
#include "cbor_util.h" /* cv_utf8_valid */
#include "tsc_word.h"

enum kind { STR, NUM, LIST };

struct field {
        const char *name;
        enum kind kind;
        size_t off;
};

#define F(name, kind, member)                                                                      \
        {                                                                                          \
                name, kind, offsetof(struct csm, member)                                           \
        }

/* In the order docs/SNAPSHOTS.md lists them (and tests/snapshot_format.py writes them). */
static const struct field fields[] = {
    F("kind", STR, kind),
    F("vmm", STR, vmm),
    F("vmm_version", STR, vmm_version),
    F("vmm_binary", STR, vmm_binary),
    F("accel", STR, accel),
    F("memory_mb", NUM, memory_mb),
    F("vcpus", NUM, vcpus),
    F("image", STR, image),
    F("cmdline", STR, cmdline),
    F("file", LIST, file),
    F("state", STR, state),
    F("state_size", NUM, state_size),
    F("memory", STR, memory),
    F("memory_size", NUM, memory_size),
    F("instance_dir", STR, instance_dir),
    F("generation", NUM, generation),
    F("created_ms", NUM, created_ms),
    F("build_ms", NUM, build_ms),
    F("started_ms", NUM, started_ms),
    F("sandbox_id", STR, sandbox_id),
    F("registry_key", STR, registry_key),
    F("template", STR, template_),
    F("timeout_s", STR, timeout_s),
    F("metadata", STR, metadata),
    F("envs", STR, envs),
    F("filesystem", STR, filesystem),
    F("fork_of", STR, fork_of),
    F("on_timeout", STR, on_timeout),
    F("request", LIST, request),
    F("arg", LIST, arg),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Fields a manifest must have. */
static const char *const required[] = {"kind", "vmm", "state"};

static const struct field *field_named(const char *name, size_t len)
{
        for (size_t i = 0; i < NFIELDS; i++)
                if (strlen(fields[i].name) == len && memcmp(fields[i].name, name, len) == 0)
                        return &fields[i];
        return NULL;
}

static char **str_at(struct csm *m, const struct field *f)
{
        return (char **)((char *)m + f->off);
}

static const char *cstr_at(const struct csm *m, const struct field *f)
{
        const char *s = *(char *const *)((const char *)m + f->off);
        return s ? s : "";
}

static int set_str(char **dst, const char *v)
{
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(*dst);
        *dst = s;
        return 0;
}

int csm_init(struct csm *m)
{
        memset(m, 0, sizeof(*m));
        for (size_t i = 0; i < NFIELDS; i++)
                if (fields[i].kind == STR && set_str(str_at(m, &fields[i]), "") < 0)
                        goto nomem;
        if (set_str(&m->state, "state") < 0 || set_str(&m->metadata, "{}") < 0 ||
            set_str(&m->envs, "{}") < 0)
                goto nomem;
        return 0;
nomem:
        csm_free(m);
        return -ENOMEM;
}

static void list_free(struct csm_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        l->v = NULL;
        l->n = 0;
}

void csm_free(struct csm *m)
{
        for (size_t i = 0; i < NFIELDS; i++) {
                if (fields[i].kind == STR) {
                        free(*str_at(m, &fields[i]));
                        *str_at(m, &fields[i]) = NULL;
                } else if (fields[i].kind == LIST) {
                        list_free((struct csm_list *)((char *)m + fields[i].off));
                }
        }
}

/* A decimal number below 2^64, digits only (what str(int) writes). */
static int parse_u64(const char *s, uint64_t *out)
{
        uint64_t v = 0;
        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                unsigned d = (unsigned)(*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *out = v;
        return 0;
}

static int list_add(struct csm_list *l, const char *v)
{
        if (l->n >= CSM_MAX_LIST)
                return -E2BIG;
        if ((l->n & (l->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to the next power of two */
                char **nv = realloc(l->v, (l->n ? l->n * 2 : 1) * sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                l->v = nv;
        }
        if (!(l->v[l->n] = strdup(v)))
                return -ENOMEM;
        l->n++;
        return 0;
}

static int set_field(struct csm *m, const struct field *f, const char *value)
{
        if (strpbrk(value, "\r\n"))
                return -EINVAL;
        switch (f->kind) {
        case STR:
                return set_str(str_at(m, f), value);
        case NUM:
                return parse_u64(value, (uint64_t *)((char *)m + f->off));
        case LIST:
        default:
                return list_add((struct csm_list *)((char *)m + f->off), value);
        }
}

int csm_set(struct csm *m, const char *name, const char *value)
{
        const struct field *f = field_named(name, strlen(name));
        return f ? set_field(m, f, value) : -ENOENT;
}

int csm_set_u64(struct csm *m, const char *name, uint64_t v)
{
        const struct field *f = field_named(name, strlen(name));
        if (!f || f->kind != NUM)
                return -ENOENT;
        *(uint64_t *)((char *)m + f->off) = v;
        return 0;
}

static int fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t whylen, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* `s` (n bytes) as a quoted excerpt of at most `max` bytes, for messages. */
static void excerpt(char *out, size_t outlen, const char *s, size_t n, size_t max)
{
        size_t k = 0;
        if (outlen < 8)
                return;
        out[k++] = '\'';
        for (size_t i = 0; i < n && i < max && k + 6 < outlen; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
                        k += (size_t)snprintf(out + k, outlen - k, "\\x%02x", c);
                else
                        out[k++] = (char)c;
        }
        out[k++] = '\'';
        out[k] = '\0';
}

/* excerpt of x and of y from a little before where they first differ ("..."
 * before a cut start), so two long command lines that share a prefix show
 * what differs. */
static void differing_excerpts(char *a, size_t alen, char *b, size_t blen, const char *x,
                               const char *y, size_t max)
{
        size_t i = 0;
        while (x[i] && x[i] == y[i])
                i++;
        size_t from = i > 40 ? i - 40 : 0;
        size_t lx = strlen(x), ly = strlen(y);
        if (from == 0) {
                excerpt(a, alen, x, lx, max);
                excerpt(b, blen, y, ly, max);
                return;
        }
        if (alen < 4 || blen < 4)
                return;
        memcpy(a, "...", 3);
        memcpy(b, "...", 3);
        excerpt(a + 3, alen - 3, x + from, lx - from, max);
        excerpt(b + 3, blen - 3, y + from, ly - from, max);
}

int csm_parse(const char *text, size_t len, struct csm *m, char *why, size_t whylen)
{
        char ex[128];
        if (len > CSM_MAX_BYTES)
                return fail(why, whylen, "larger than %u bytes: not a cellvm manifest",
                            CSM_MAX_BYTES);
        if (memchr(text, '\0', len))
                return fail(why, whylen, "holds a NUL byte: not a cellvm manifest");
        if (!cv_utf8_valid((const uint8_t *)text, len))
                return fail(why, whylen, "not UTF-8 text: not a cellvm manifest");
        const char *end = text + len;
        const char *nl = memchr(text, '\n', len);
        size_t first = nl ? (size_t)(nl - text) : len;
        if (first != strlen(CSM_FORMAT) || memcmp(text, CSM_FORMAT, first) != 0) {
                excerpt(ex, sizeof(ex), text, first, 60);
                return fail(why, whylen,
                            "not a cellvm snapshot manifest (first line %s, expected '%s')", ex,
                            CSM_FORMAT);
        }
        if (text[len - 1] != '\n')
                return fail(why, whylen, "truncated: its last line has no line break");
        bool seen[NFIELDS] = {false};
        char *line = malloc(len + 1);
        if (!line)
                return -ENOMEM;
        int rc = 0;
        for (const char *p = nl + 1; p < end && rc == 0;) {
                const char *e = memchr(p, '\n', (size_t)(end - p));
                size_t n = (size_t)(e - p); /* every line ends with '\n' (checked above) */
                const char *eq = memchr(p, '=', n);
                if (n == 0) {
                        /* empty lines are skipped */
                } else if (!eq) {
                        excerpt(ex, sizeof(ex), p, n, 80);
                        rc = fail(why, whylen, "line without '=': %s", ex);
                } else {
                        const struct field *f = field_named(p, (size_t)(eq - p));
                        if (f) { /* else a newer writer's field: ignored */
                                size_t vlen = n - (size_t)(eq + 1 - p);
                                memcpy(line, eq + 1, vlen);
                                line[vlen] = '\0';
                                seen[f - fields] = true;
                                if (memchr(line, '\r', vlen)) {
                                        rc = fail(why, whylen,
                                                  "%s holds a carriage return (a line break)",
                                                  f->name);
                                        break;
                                }
                                rc = set_field(m, f, line);
                                if (rc == -EINVAL) {
                                        excerpt(ex, sizeof(ex), line, vlen, 40);
                                        rc = fail(why, whylen, "%s is not a number: %s", f->name,
                                                  ex);
                                } else if (rc == -E2BIG) {
                                        rc = fail(why, whylen, "more than %d %s lines",
                                                  CSM_MAX_LIST, f->name);
                                }
                        }
                }
                p = e + 1;
        }
        free(line);
        if (rc < 0)
                return rc;
        char missing[64] = "";
        for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
                const struct field *f = field_named(required[i], strlen(required[i]));
                if (!seen[f - fields])
                        snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
                                 "%s%s", missing[0] ? ", " : "", required[i]);
        }
        if (missing[0])
                return fail(why, whylen, "incomplete manifest: no %s", missing);
        return 0;
}

int csm_read(const char *dir, struct csm *m, char *err, size_t errlen)
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, CSM_FILE) >= sizeof(path)) {
                snprintf(err, errlen, "%s: path too long", dir);
                return -ENAMETOOLONG;
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                int e = errno;
                if (e == ENOENT)
                        snprintf(err, errlen, "%s not found: not a complete snapshot", path);
                else
                        snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        char *buf = malloc(CSM_MAX_BYTES + 1);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        size_t len = 0;
        int rc = 0;
        while (len < CSM_MAX_BYTES + 1) {
                ssize_t n = read(fd, buf + len, CSM_MAX_BYTES + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        rc = -errno;
                        snprintf(err, errlen, "%s: %s", path, strerror(errno));
                        break;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        close(fd);
        if (rc == 0) {
                char why[256];
                rc = csm_parse(buf, len, m, why, sizeof(why));
                if (rc == -EINVAL)
                        snprintf(err, errlen, "%s: %s", path, why);
                else if (rc < 0)
                        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        }
        free(buf);
        return rc;
}

int csm_copy(struct csm *dst, const struct csm *src)
{
        char *text, why[256];
        size_t len;
        int rc = csm_format(src, &text, &len);
        if (rc < 0)
                return rc;
        rc = csm_init(dst);
        if (rc == 0 && (rc = csm_parse(text, len, dst, why, sizeof(why))) < 0)
                csm_free(dst);
        free(text);
        return rc;
}

/* A growing text buffer for csm_format. */
struct text {
        char *p;
        size_t len, cap;
        int err;
};

static void put(struct text *t, const char *a, const char *b, const char *c)
{
        const char *parts[] = {a, b, c};
        for (size_t i = 0; i < 3 && !t->err; i++) {
                size_t n = strlen(parts[i]);
                if (t->len + n + 1 > t->cap) {
                        size_t cap = (t->len + n + 1) * 2;
                        char *np = realloc(t->p, cap);
                        if (!np) {
                                t->err = -ENOMEM;
                                return;
                        }
                        t->p = np, t->cap = cap;
                }
                memcpy(t->p + t->len, parts[i], n + 1);
                t->len += n;
        }
}

static void put_line(struct text *t, const char *name, const char *value)
{
        if (strpbrk(value, "\r\n"))
                t->err = t->err ? t->err : -EINVAL;
        put(t, name, "=", value);
        put(t, "\n", "", "");
}

int csm_format(const struct csm *m, char **out, size_t *len)
{
        struct text t = {0};
        put(&t, CSM_FORMAT, "\n", "");
        for (size_t i = 0; i < NFIELDS; i++) {
                const struct field *f = &fields[i];
                if (f->kind == STR) {
                        put_line(&t, f->name, cstr_at(m, f));
                } else if (f->kind == NUM) {
                        char num[24];
                        snprintf(num, sizeof(num), "%" PRIu64,
                                 *(const uint64_t *)((const char *)m + f->off));
                        put_line(&t, f->name, num);
                } else {
                        const struct csm_list *l =
                            (const struct csm_list *)((const char *)m + f->off);
                        for (size_t k = 0; k < l->n; k++)
                                put_line(&t, f->name, l->v[k]);
                }
        }
        if (t.err) {
                free(t.p);
                return t.err;
        }
        *out = t.p;
        *len = t.len;
        return 0;
}

int csm_write(const char *dir, const struct csm *m, char *err, size_t errlen)
{
        char *text;
        size_t len;
        int rc = csm_format(m, &text, &len);
        if (rc < 0) {
                snprintf(err, errlen, "manifest for %s: %s", dir,
                         rc == -EINVAL ? "a value holds a line break" : strerror(-rc));
                return rc;
        }
        unsigned char rnd[3];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
                rc = -errno;
                snprintf(err, errlen, "getrandom: %s", strerror(errno));
                free(text);
                return rc;
        }
        char path[4096], tmp[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, CSM_FILE);
        snprintf(tmp, sizeof(tmp), "%s.tmp-%d-%02x%02x%02x", path, (int)getpid(), rnd[0], rnd[1],
                 rnd[2]);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
                rc = -errno;
                snprintf(err, errlen, "creating %s: %s", tmp, strerror(errno));
                free(text);
                return rc;
        }
        const char *step = "writing";
        rc = cv_write_all(fd, text, len);
        if (rc == 0 && fsync(fd) < 0)
                rc = -errno, step = "fsync of";
        if (close(fd) < 0 && rc == 0)
                rc = -errno, step = "closing";
        if (rc == 0 && rename(tmp, path) < 0)
                rc = -errno, step = "renaming";
        if (rc < 0) {
                snprintf(err, errlen, "%s %s: %s", step, tmp, strerror(-rc));
                (void)unlink(tmp); /* the error reported is the first one */
        }
        free(text);
        return rc;
}

int csm_add_file(struct csm *m, const char *role, const char *path, char *err, size_t errlen)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        int64_t mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        size_t n = strlen(role) + strlen(path) + 64;
        char *line = malloc(n);
        if (!line)
                return -ENOMEM;
        snprintf(line, n, "%s %lld %" PRId64 " %s", role, (long long)st.st_size, mtime_ns, path);
        int rc = csm_set(m, "file", line);
        free(line);
        if (rc < 0)
                snprintf(err, errlen, "file line of %s: %s", path,
                         rc == -EINVAL ? "the path holds a line break" : strerror(-rc));
        return rc;
}

/* One of the snapshot's files: `name` must be a plain name in `snapdir`. */
static int check_one(const char *snapdir, const char *name, uint64_t want, const char *what,
                     char *err, size_t errlen)
{
        char path[4096];
        if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
                snprintf(err, errlen, "%s/%s: the manifest's %s '%s' is not a file name", snapdir,
                         CSM_FILE, what, name);
                return -EINVAL;
        }
        snprintf(path, sizeof(path), "%s/%s", snapdir, name);
        struct stat st;
        if (stat(path, &st) < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s: the snapshot's %s is missing", path, strerror(e),
                         what);
                return -e;
        }
        if ((uint64_t)st.st_size != want) {
                snprintf(err, errlen,
                         "%s is %lld bytes, its manifest says %" PRIu64 ": truncated or replaced",
                         path, (long long)st.st_size, want);
                return -EINVAL;
        }
        return 0;
}

int csm_check_files(const struct csm *m, const char *snapdir, char *err, size_t errlen)
{
        int rc = check_one(snapdir, m->state, m->state_size, "device state", err, errlen);
        if (rc == 0 && m->memory[0])
                rc = check_one(snapdir, m->memory, m->memory_size, "memory file", err, errlen);
        return rc;
}

/* Appends a difference (separated by "; "). */
static void add_diff(char *out, size_t outlen, int *count, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_diff(char *out, size_t outlen, int *count, const char *fmt, ...)
{
        size_t len = strlen(out);
        if (*count && len + 2 < outlen) {
                memcpy(out + len, "; ", 3);
                len += 2;
        }
        va_list ap;
        va_start(ap, fmt);
        if (len < outlen)
                vsnprintf(out + len, outlen - len, fmt, ap);
        va_end(ap);
        (*count)++;
}

/* The `file` line of `role` without its role ("<size> <mtime_ns> <path>"), or NULL. */
static const char *file_of(const struct csm *m, const char *role)
{
        size_t rl = strlen(role);
        const char *found = NULL;
        for (size_t i = 0; i < m->file.n; i++)
                if (strncmp(m->file.v[i], role, rl) == 0 && m->file.v[i][rl] == ' ')
                        found = m->file.v[i] + rl + 1; /* the last one, as a dict keeps it */
        return found;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether two command-line strings are equal but for their TSC frequency
 * (tsc_word.h): 1, 0, or -ENOMEM. */
static int neutral_equal(const char *x, const char *y)
{
        if (strcmp(x, y) == 0)
                return 1;
        char *a = ctsc_neutral(x), *b = ctsc_neutral(y);
        int rc = a && b ? strcmp(a, b) == 0 : -ENOMEM;
        free(a);
        free(b);
        return rc;
}

int csm_differences(const struct csm *have, const struct csm *want, char *out, size_t outlen)
{
        int count = 0;
        char a[160], b[160];
        if (outlen)
                out[0] = '\0';
        static const char *const strs[] = {"vmm", "vmm_version", "accel"};
        for (size_t i = 0; i < 3; i++) {
                const struct field *f = field_named(strs[i], strlen(strs[i]));
                const char *x = cstr_at(have, f), *y = cstr_at(want, f);
                if (strcmp(x, y) != 0) {
                        excerpt(a, sizeof(a), x, strlen(x), 120);
                        excerpt(b, sizeof(b), y, strlen(y), 120);
                        add_diff(out, outlen, &count, "%s: snapshot has %s, now %s", f->name, a, b);
                }
        }
        if (have->memory_mb != want->memory_mb)
                add_diff(out, outlen, &count, "memory_mb: snapshot has %" PRIu64 ", now %" PRIu64,
                         have->memory_mb, want->memory_mb);
        if (have->vcpus != want->vcpus)
                add_diff(out, outlen, &count, "vcpus: snapshot has %" PRIu64 ", now %" PRIu64,
                         have->vcpus, want->vcpus);
        int same = neutral_equal(have->cmdline, want->cmdline);
        if (same < 0)
                return same;
        char tsc[200];
        if (!same) {
                differing_excerpts(a, sizeof(a), b, sizeof(b), have->cmdline, want->cmdline, 150);
                add_diff(out, outlen, &count, "cmdline: snapshot has %s, now %s", a, b);
        } else if (ctsc_mismatch(have->cmdline, want->cmdline, tsc, sizeof(tsc))) {
                add_diff(out, outlen, &count, "%s", tsc);
        }
        /* The roles of both, sorted and once each (a set, as in Python). */
        const char *roles[32];
        char names[32][32];
        size_t nroles = 0;
        const struct csm *both[] = {have, want};
        for (size_t k = 0; k < 2; k++)
                for (size_t i = 0; i < both[k]->file.n && nroles < 32; i++) {
                        const char *line = both[k]->file.v[i];
                        size_t rl = strcspn(line, " ");
                        if (rl >= sizeof(names[0]))
                                rl = sizeof(names[0]) - 1;
                        memcpy(names[nroles], line, rl);
                        names[nroles][rl] = '\0';
                        bool dup = false;
                        for (size_t j = 0; j < nroles; j++)
                                dup = dup || strcmp(roles[j], names[nroles]) == 0;
                        if (!dup) {
                                roles[nroles] = names[nroles];
                                nroles++;
                        }
                }
        qsort(roles, nroles, sizeof(roles[0]), cmp_str);
        for (size_t i = 0; i < nroles; i++) {
                const char *x = file_of(have, roles[i]), *y = file_of(want, roles[i]);
                if (x && y && strcmp(x, y) == 0)
                        continue;
                excerpt(a, sizeof(a), x ? x : "none", strlen(x ? x : "none"), 150);
                excerpt(b, sizeof(b), y ? y : "none", strlen(y ? y : "none"), 150);
                add_diff(out, outlen, &count,
                         "%s file: snapshot was taken with %s (size mtime_ns path), now %s",
                         roles[i], a, b);
        }
        if (count)
                return count;
        bool args_differ = have->arg.n != want->arg.n;
        for (size_t i = 0; i < have->arg.n && i < want->arg.n && !args_differ; i++) {
                if ((same = neutral_equal(have->arg.v[i], want->arg.v[i])) < 0)
                        return same;
                args_differ = !same;
        }
        if (!args_differ)
                return 0;
        char detail[1024] = "";
        int shown = 0;
        for (size_t i = 0; i < have->arg.n && i < want->arg.n && shown < 4; i++) {
                if ((same = neutral_equal(have->arg.v[i], want->arg.v[i])) < 0)
                        return same;
                if (same)
                        continue;
                excerpt(a, sizeof(a), have->arg.v[i], strlen(have->arg.v[i]), 100);
                excerpt(b, sizeof(b), want->arg.v[i], strlen(want->arg.v[i]), 100);
                size_t dl = strlen(detail);
                snprintf(detail + dl, sizeof(detail) - dl, "%s%s -> %s", shown ? "; " : "", a, b);
                shown++;
        }
        if (have->arg.n != want->arg.n && shown < 4) {
                size_t dl = strlen(detail);
                snprintf(detail + dl, sizeof(detail) - dl, "%s%zu arguments -> %zu",
                         shown ? "; " : "", have->arg.n, want->arg.n);
        }
        add_diff(out, outlen, &count, "the VMM's command line: %s", detail);
        return count;
}
