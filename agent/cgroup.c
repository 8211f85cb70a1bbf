/* Per-context cgroup v2 groups (see cgroup.h). */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "small_file.h"

/* Rounds of "read cgroup.procs, kill each" when cgroup.kill is missing: a fork
 * bomb may fork between the read and the kill. */
#define KILL_ROUNDS 64

static int write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = strlen(text);
        ssize_t n = write(fd, text, len);
        int rc = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        return rc;
}

static int ctx_path(char *out, size_t size, const char *parent, const char *id, const char *file)
{
        int n = snprintf(out, size, "%s/ctx-%s%s%s", parent, id, file ? "/" : "", file ? file : "");
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static bool has_word(const char *list, const char *word)
{
        size_t wl = strlen(word);
        for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
                bool start = p == list || p[-1] == ' ';
                bool end = p[wl] == 0 || p[wl] == ' ' || p[wl] == '\n';
                if (start && end)
                        return true;
        }
        return false;
}

int cgroup_parent_setup(const char *parent, char *why, size_t why_size)
{
        struct statfs sf;
        char path[PATH_MAX], list[512];
        if (statfs(parent, &sf) < 0) {
                int err = -errno;
                snprintf(why, why_size, "%s: %s", parent, strerror(-err));
                return err;
        }
        if (sf.f_type != CGROUP2_SUPER_MAGIC) {
                snprintf(why, why_size, "%s is not a cgroup v2 directory", parent);
                return -ENOTSUP;
        }
        snprintf(path, sizeof(path), "%s/cgroup.controllers", parent);
        int rc = small_file_read(path, list, sizeof(list));
        if (rc < 0) {
                snprintf(why, why_size, "%s: %s", path, strerror(-rc));
                return rc;
        }
        if (!has_word(list, "memory") || !has_word(list, "pids")) {
                snprintf(why, why_size, "%s offers no memory and pids controllers (\"%.*s\")",
                         parent, (int)strcspn(list, "\n"), list);
                return -ENOTSUP;
        }
        snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
        rc = write_file(path, "+memory +pids");
        if (rc < 0) {
                snprintf(why, why_size, "enabling memory and pids in %s: %s", path, strerror(-rc));
                return rc;
        }
        /* cpu.weight is a nicety: a kernel without the cpu controller still confines. */
        if (has_word(list, "cpu"))
                (void)write_file(path, "+cpu");
        return 0;
}

static int write_limit(const char *parent, const char *id, const char *file, uint64_t v)
{
        char path[PATH_MAX], text[32];
        int rc = ctx_path(path, sizeof(path), parent, id, file);
        if (rc < 0)
                return rc;
        snprintf(text, sizeof(text), "%" PRIu64, v);
        return write_file(path, text);
}

int cgroup_context_create(const char *parent, const char *id, const struct cgroup_limits *lim)
{
        char path[PATH_MAX];
        int rc = ctx_path(path, sizeof(path), parent, id, NULL);
        if (rc < 0)
                return rc;
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (lim->memory_max && (rc = write_limit(parent, id, "memory.max", lim->memory_max)) < 0)
                return rc;
        /* Swap would let a hog outlive memory.max at the cost of the whole guest. */
        (void)write_limit(parent, id, "memory.swap.max", 0);
        /* An OOM kills the whole context, not a random one of its processes. */
        (void)write_limit(parent, id, "memory.oom.group", 1);
        if (lim->pids_max && (rc = write_limit(parent, id, "pids.max", lim->pids_max)) < 0)
                return rc;
        if (lim->cpu_weight)
                (void)write_limit(parent, id, "cpu.weight", lim->cpu_weight);
        return 0;
}

int cgroup_context_add(const char *parent, const char *id, pid_t pid)
{
        return write_limit(parent, id, "cgroup.procs", (uint64_t)pid);
}

/* Kills the pids listed in cgroup.procs; returns how many it found, or -errno. */
static int kill_listed(const char *procs)
{
        char buf[16384];
        int rc = small_file_read(procs, buf, sizeof(buf));
        if (rc < 0)
                return rc;
        int found = 0;
        for (char *p = buf, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                        found++;
                while (*end == '\n')
                        end++;
        }
        return found;
}

int cgroup_context_kill(const char *parent, const char *id)
{
        char path[PATH_MAX];
        int rc = ctx_path(path, sizeof(path), parent, id, "cgroup.kill");
        if (rc < 0)
                return rc;
        rc = write_file(path, "1");
        if (rc != -ENOENT)
                return rc;
        /* Before Linux 5.14: freeze, kill one by one, thaw so the kills land. */
        char freeze[PATH_MAX];
        if ((rc = ctx_path(freeze, sizeof(freeze), parent, id, "cgroup.freeze")) < 0 ||
            (rc = ctx_path(path, sizeof(path), parent, id, "cgroup.procs")) < 0)
                return rc;
        (void)write_file(freeze, "1");
        for (int i = 0; i < KILL_ROUNDS && (rc = kill_listed(path)) > 0; i++)
                ;
        (void)write_file(freeze, "0");
        return rc < 0 ? rc : 0;
}

int cgroup_context_remove(const char *parent, const char *id)
{
        char path[PATH_MAX];
        int rc = ctx_path(path, sizeof(path), parent, id, NULL);
        if (rc < 0)
                return rc;
        rc = cgroup_context_kill(parent, id);
        if (rc < 0 && rc != -ENOENT)
                return rc;
        /* The kill is asynchronous: give the dying a moment to leave. */
        for (int i = 0; i < 50; i++) {
                if (rmdir(path) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY)
                        return -errno;
                usleep(2000);
        }
        return -EBUSY;
}

uint64_t cgroup_mem_total(void)
{
        char buf[4096];
        if (small_file_read("/proc/meminfo", buf, sizeof(buf)) < 0)
                return 0;
        const char *p = strstr(buf, "MemTotal:");
        if (!p)
                return 0;
        unsigned long long kib = strtoull(p + strlen("MemTotal:"), NULL, 10);
        return (uint64_t)kib * 1024u;
}
