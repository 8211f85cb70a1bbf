/* The registry of live sandboxes: see registry.h and docs/VMM.md. */
#include "registry.h"

#include "paused.h" /* CPAUSED_ROOT_ENV */
#include "user_dirs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FORMAT_LINE "cellvm-sandbox 1"
#define SUFFIX ".sandbox"
#define MAX_ENTRY_BYTES (64 * 1024)

static double env_number(const char *name, double def)
{
        const char *s = getenv(name);
        if (!s || !*s)
                return def;
        char *end;
        double v = strtod(s, &end);
        return *end || !(v >= 0) ? def : v;
}

bool creg_pauses_at_timeout(const struct creg_entry *e)
{
        return strcmp(e->on_timeout, "pause") == 0;
}

double creg_grace_s(void)
{
        return env_number("CELLVM_DEADLINE_GRACE", CREG_DEFAULT_GRACE_S);
}

unsigned creg_max_sandboxes(void)
{
        return (unsigned)env_number("CELLVM_MAX_SANDBOXES", CREG_DEFAULT_MAX_SANDBOXES);
}

double creg_max_timeout_s(void)
{
        return env_number("CELLVM_MAX_TIMEOUT", CREG_DEFAULT_MAX_TIMEOUT_S);
}

int64_t creg_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t creg_proc_start(pid_t pid)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        /* comm may hold spaces and ')': the fields start after the last ')'. */
        char *p = strrchr(buf, ')');
        if (!p)
                return 0;
        p++;
        char state = 0;
        unsigned long long start = 0;
        /* state is field 3, starttime field 22: 19 fields after the state. */
        if (sscanf(p,
                   " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
                   "%*d %llu",
                   &state, &start) != 2)
                return 0;
        if (state == 'Z' || state == 'X')
                return 0;
        return start;
}

int creg_open(struct creg *r, char *err, size_t errlen)
{
        const char *env = getenv("CELLVM_RUNTIME_DIR");
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        int n;
        r->lock_fd = -1;
        if (env && *env)
                n = snprintf(r->dir, sizeof(r->dir), "%s", env);
        else if (xdg && *xdg)
                n = snprintf(r->dir, sizeof(r->dir), "%s/cellvm", xdg);
        else
                n = snprintf(r->dir, sizeof(r->dir), "/tmp/cellvm-%u", (unsigned)getuid());
        if (n < 0 || (size_t)n >= sizeof(r->dir)) {
                snprintf(err, errlen, "runtime directory path too long");
                return -ENAMETOOLONG;
        }
        if (mkdir(r->dir, 0700) < 0 && errno != EEXIST) {
                int e = errno;
                snprintf(err, errlen, "cellvm runtime directory %s: %s", r->dir, strerror(e));
                return -e;
        }
        struct stat st;
        if (lstat(r->dir, &st) < 0) {
                int e = errno;
                snprintf(err, errlen, "cellvm runtime directory %s: %s", r->dir, strerror(e));
                return -e;
        }
        if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
                snprintf(err, errlen,
                         "cellvm runtime directory %s is not a directory of this user writable "
                         "only by it; set $CELLVM_RUNTIME_DIR to another",
                         r->dir);
                return -EPERM;
        }
        return 0;
}

int creg_lock(struct creg *r)
{
        char path[600];
        snprintf(path, sizeof(path), "%s/lock", r->dir);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_EX) < 0) {
                if (errno != EINTR) {
                        int e = errno;
                        close(fd);
                        return -e;
                }
        }
        r->lock_fd = fd;
        return 0;
}

void creg_unlock(struct creg *r)
{
        if (r->lock_fd >= 0) {
                close(r->lock_fd); /* releases the lock */
                r->lock_fd = -1;
        }
}

static int set_str(char *dst, size_t cap, const char *v)
{
        if (strlen(v) >= cap)
                return -E2BIG;
        strcpy(dst, v);
        return 0;
}

static int set_num(const char *v, int64_t *out)
{
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno)
                return -EINVAL;
        *out = x;
        return 0;
}

int creg_parse(const char *text, const char *key, struct creg_entry *e, char *why, size_t whylen)
{
        memset(e, 0, sizeof(*e));
        size_t flen = strlen(FORMAT_LINE);
        if (strncmp(text, FORMAT_LINE, flen) != 0 || text[flen] != '\n') {
                snprintf(why, whylen, "first line is not '%s'", FORMAT_LINE);
                return -EINVAL;
        }
        unsigned have = 0; /* bits of the required fields seen */
        const char *p = text + flen + 1;
        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                char line[1024];
                if (len >= sizeof(line)) {
                        p += len + (nl ? 1 : 0);
                        continue; /* metadata may be long: not read here */
                }
                memcpy(line, p, len);
                line[len] = '\0';
                p += len + (nl ? 1 : 0);
                if (!len)
                        continue;
                char *eq = strchr(line, '=');
                if (!eq) {
                        snprintf(why, whylen, "line without '='");
                        return -EINVAL;
                }
                *eq = '\0';
                const char *k = line, *v = eq + 1;
                int64_t x = 0;
                int rc = 0;
#define STR(name, field, bit)                                                                      \
        else if (strcmp(k, name) == 0)                                                             \
        {                                                                                          \
                rc = set_str(e->field, sizeof(e->field), v);                                       \
                have |= bit;                                                                       \
        }
#define NUM(name, bit, assign)                                                                     \
        else if (strcmp(k, name) == 0)                                                             \
        {                                                                                          \
                rc = set_num(v, &x);                                                               \
                if (rc == 0) {                                                                     \
                        assign;                                                                    \
                }                                                                                  \
                have |= bit;                                                                       \
        }
                if (0) {
                }
                STR("key", key, 1u)
                STR("id", id, 2u)
                STR("vmm", vmm, 4u)
                STR("accel", accel, 0)
                STR("address", address, 0)
                STR("dir", dir, 0)
                STR("image", image, 0)
                STR("template", template_, 0)
                STR("network", network, 0)
                STR("on_timeout", on_timeout, 0)
                NUM("pid", 8u, e->pid = (pid_t)x)
                NUM("pid_start", 16u, e->pid_start = (uint64_t)x)
                NUM("started_ms", 32u, e->started_ms = x)
                NUM("deadline_ms", 64u, e->deadline_ms = x)
                NUM("memory_mb", 0, e->memory_mb = (unsigned)x)
                NUM("vcpus", 0, e->vcpus = (unsigned)x)
                NUM("creator_pid", 0, e->creator_pid = (pid_t)x)
                NUM("creator_start", 0, e->creator_start = (uint64_t)x)
                NUM("keeper_pid", 0, e->keeper_pid = (pid_t)x)
                NUM("holder_pid", 0, e->holder_pid = (pid_t)x)
                NUM("holder_start", 0, e->holder_start = (uint64_t)x)
#undef STR
#undef NUM
                if (rc < 0) {
                        snprintf(why, whylen, "bad value of %s", k);
                        return -EINVAL;
                }
        }
        if (have != 127u) {
                snprintf(why, whylen, "a required field is missing");
                return -EINVAL;
        }
        if (strcmp(e->key, key) != 0) {
                snprintf(why, whylen, "key %s does not match the file name", e->key);
                return -EINVAL;
        }
        if (e->pid <= 1 || e->pid_start == 0) {
                snprintf(why, whylen, "implausible pid %d", (int)e->pid);
                return -EINVAL;
        }
        return 0;
}

int creg_write(struct creg *r, const struct creg_entry *e)
{
        char final[sizeof(r->dir) + 100], tmp[sizeof(r->dir) + 130];
        snprintf(final, sizeof(final), "%s/%s" SUFFIX, r->dir, e->key);
        snprintf(tmp, sizeof(tmp), "%s.tmp-%d", final, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        FILE *f = fdopen(fd, "w");
        if (!f) {
                int err = -errno;
                close(fd);
                unlink(tmp);
                return err;
        }
        fprintf(f,
                FORMAT_LINE "\nkey=%s\nid=%s\nvmm=%s\npid=%d\npid_start=%" PRIu64
                            "\nstarted_ms=%" PRId64 "\ndeadline_ms=%" PRId64
                            "\nmemory_mb=%u\nvcpus=%u\ncreator_pid=%d\ncreator_start=%" PRIu64
                            "\nholder_pid=%d\nholder_start=%" PRIu64
                            "\nkeeper_pid=%d\naccel=%s\naddress=%s\ndir=%s\nimage=%s\ntemplate=%s\n"
                            "network=%s\non_timeout=%s\nmetadata=%s\n",
                e->key, e->id, e->vmm, (int)e->pid, e->pid_start, e->started_ms, e->deadline_ms,
                e->memory_mb, e->vcpus, (int)e->creator_pid, e->creator_start, (int)e->holder_pid,
                e->holder_start, (int)e->keeper_pid, e->accel, e->address, e->dir, e->image,
                e->template_, e->network[0] ? e->network : "none",
                creg_pauses_at_timeout(e) ? "pause" : "kill",
                e->metadata && !strpbrk(e->metadata, "\r\n") ? e->metadata : "{}");
        int bad = ferror(f);
        if (fclose(f) != 0 || bad) {
                unlink(tmp);
                return -EIO;
        }
        if (rename(tmp, final) < 0) {
                int err = -errno;
                unlink(tmp);
                return err;
        }
        return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        if (flag == FTW_DP)
                (void)rmdir(path);
        else
                (void)unlink(path);
        return 0;
}

/* A cellvm VMM temp dir of this user: an absolute, real directory named cellvm-*. */
static bool our_vmm_dir(const char *path)
{
        const char *base = strrchr(path, '/');
        struct stat st;
        return path[0] == '/' && base && strncmp(base + 1, "cellvm-", 7) == 0 &&
               lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid();
}

void creg_remove(struct creg *r, const struct creg_entry *e, bool with_dir)
{
        char path[sizeof(r->dir) + 300];
        snprintf(path, sizeof(path), "%s/%s" SUFFIX, r->dir, e->key);
        (void)unlink(path);
        if (with_dir && e->dir[0] && our_vmm_dir(e->dir))
                (void)nftw(e->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int creg_kill_vmm(const struct creg_entry *e)
{
        int fd = (int)syscall(SYS_pidfd_open, e->pid, 0);
        if (fd < 0)
                return 0;
        int done = 0;
        /* Checked after the pidfd exists: the signal reaches the process checked. */
        if (creg_proc_start(e->pid) == e->pid_start &&
            syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0)
                done = 1;
        close(fd);
        return done;
}

static bool valid_key(const char *k)
{
        size_t n = strlen(k);
        if (n == 0 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '-'))
                        return false;
        return true;
}

/* Reads the file `name` of the registry into buf; 0, or -E2BIG/-errno. */
static int read_file(struct creg *r, const char *name, char *buf, size_t cap)
{
        char path[sizeof(r->dir) + 300];
        snprintf(path, sizeof(path), "%s/%s", r->dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == cap - 1) {
                        close(fd);
                        return -E2BIG;
                }
        }
        close(fd);
        buf[len] = '\0';
        return memchr(buf, '\0', len) ? -EINVAL : 0;
}

static int by_start(const void *a, const void *b)
{
        const struct creg_entry *x = a, *y = b;
        return (x->started_ms > y->started_ms) - (x->started_ms < y->started_ms);
}

int creg_sweep(struct creg *r, struct creg_entry *out, size_t max, FILE *log)
{
        DIR *d = opendir(r->dir);
        if (!d)
                return -errno;
        char *buf = malloc(MAX_ENTRY_BYTES + 1);
        if (!buf) {
                closedir(d);
                return -ENOMEM;
        }
        size_t n = 0;
        int64_t grace_ms = (int64_t)(creg_grace_s() * 1000);
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name), slen = strlen(SUFFIX);
                if (len <= slen || strcmp(de->d_name + len - slen, SUFFIX) != 0)
                        continue;
                char key[80];
                if (len - slen >= sizeof(key))
                        continue;
                memcpy(key, de->d_name, len - slen);
                key[len - slen] = '\0';
                struct creg_entry e;
                char why[160] = "";
                int rc =
                    valid_key(key) ? read_file(r, de->d_name, buf, MAX_ENTRY_BYTES + 1) : -EINVAL;
                if (rc == -ENOENT)
                        continue;
                if (rc == 0)
                        rc = creg_parse(buf, key, &e, why, sizeof(why));
                else
                        snprintf(why, sizeof(why), "%s", strerror(-rc));
                if (rc < 0) {
                        fprintf(log,
                                "cellvm: removed damaged registry entry %s/%s: %s (its process "
                                "was not touched)\n",
                                r->dir, de->d_name, why);
                        char path[sizeof(r->dir) + 300];
                        snprintf(path, sizeof(path), "%s/%s", r->dir, de->d_name);
                        (void)unlink(path);
                        continue;
                }
                if (creg_proc_start(e.pid) != e.pid_start) {
                        fprintf(log,
                                "cellvm: removed stale registry entry %s (%s): its VMM pid %d "
                                "has exited\n",
                                e.key, e.id, (int)e.pid);
                        creg_remove(r, &e, true);
                        continue;
                }
                int64_t now = creg_now_ms();
                int64_t margin_ms =
                    creg_pauses_at_timeout(&e) ? (int64_t)(CREG_PAUSE_MARGIN_S * 1000) : 0;
                if (now > e.deadline_ms + grace_ms + margin_ms) {
                        fprintf(log,
                                "cellvm: sandbox %s (%s) is %.1f s past its deadline (grace "
                                "%.0f s): killing its VMM pid %d\n",
                                e.key, e.id, (double)(now - e.deadline_ms) / 1000.0,
                                (double)grace_ms / 1000.0, (int)e.pid);
                        creg_kill_vmm(&e);
                        creg_remove(r, &e, true);
                        continue;
                }
                if (n < max)
                        out[n++] = e;
        }
        closedir(d);
        free(buf);
        qsort(out, n, sizeof(*out), by_start);
        return (int)n;
}

int creg_new_key(struct creg *r, const char *vmm, char *key, size_t keylen)
{
        for (int tries = 0; tries < 100; tries++) {
                uint32_t rnd;
                if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                        return -EIO;
                snprintf(key, keylen, "%.16s-%08x", vmm, rnd);
                char path[sizeof(r->dir) + 300];
                struct stat st;
                snprintf(path, sizeof(path), "%s/%s" SUFFIX, r->dir, key);
                if (lstat(path, &st) == 0 || errno != ENOENT)
                        continue;
                /* nor a paused sandbox's: its id comes back at its resume */
                char paused[PATH_MAX];
                if (cvm_user_dir(CPAUSED_ROOT_ENV, "XDG_STATE_HOME", ".local/state",
                                 "cellvm/paused", paused, sizeof(paused)) == 0 &&
                    (size_t)snprintf(path, sizeof(path), "%s/%s", paused, key) < sizeof(path) &&
                    lstat(path, &st) == 0)
                        continue;
                return 0;
        }
        return -EEXIST;
}
