/*
 * SYS_STATS (docs/PROTOCOL.md section 11): the guest's CPU, memory and disk
 * counters, read by the agent so a host can sample a sandbox's use (E2B's
 * getMetrics) without starting a process in it. The counters are raw and
 * cumulative; a host takes two readings for a CPU percentage.
 */

#include "stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

#include "cbor_util.h"
#include "conn.h"
#include "msgtypes.h"
#include "small_file.h"
#include "svc.h"
#include "writer.h"

struct guest_stats {
        uint64_t cpu_count, cpu_busy, cpu_total; /* clock ticks of all CPUs since boot */
        uint64_t mem_total, mem_available, mem_cache;
        uint64_t disk_total, disk_used;
};

/* The "cpu" line of /proc/stat: busy is everything but idle and iowait. */
static int read_cpu(struct guest_stats *st)
{
        char buf[4096];
        int rc = small_file_read("/proc/stat", buf, sizeof(buf));
        if (rc < 0)
                return rc;
        if (strncmp(buf, "cpu ", 4) != 0)
                return -EPROTO;
        uint64_t f[10] = {0};
        int n = sscanf(buf + 4,
                       "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                       " %" SCNu64 " %" SCNu64,
                       &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7]);
        if (n < 4)
                return -EPROTO;
        uint64_t total = 0;
        for (int i = 0; i < n; i++)
                total += f[i];
        st->cpu_total = total;
        st->cpu_busy = total - f[3] - f[4];
        for (const char *p = buf; (p = strstr(p, "\ncpu")) != NULL; p++)
                if (p[4] >= '0' && p[4] <= '9')
                        st->cpu_count++;
        return st->cpu_count ? 0 : -EPROTO;
}

static uint64_t meminfo_kib(const char *buf, const char *key)
{
        const char *p = strstr(buf, key);
        uint64_t v = 0;
        if (p && sscanf(p + strlen(key), " %" SCNu64, &v) == 1)
                return v;
        return 0;
}

static int read_mem(struct guest_stats *st)
{
        char buf[8192];
        int rc = small_file_read("/proc/meminfo", buf, sizeof(buf));
        if (rc < 0)
                return rc;
        st->mem_total = meminfo_kib(buf, "MemTotal:") * 1024;
        st->mem_available = meminfo_kib(buf, "MemAvailable:") * 1024;
        st->mem_cache = meminfo_kib(buf, "\nCached:") * 1024;
        return st->mem_total ? 0 : -EPROTO;
}

/* The root file system, as `df /` counts it (blocks for unprivileged users). */
static int read_disk(struct guest_stats *st)
{
        struct statfs fs;
        if (statfs("/", &fs) < 0)
                return -errno;
        uint64_t bs = (uint64_t)fs.f_bsize;
        st->disk_total = (uint64_t)fs.f_blocks * bs;
        st->disk_used = ((uint64_t)fs.f_blocks - (uint64_t)fs.f_bfree) * bs;
        return 0;
}

void stats_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        (void)body;
        struct guest_stats st = {0};
        int rc;
        const char *what = "/proc/stat";
        if ((rc = read_cpu(&st)) < 0 || (what = "/proc/meminfo", rc = read_mem(&st)) < 0 ||
            (what = "/", rc = read_disk(&st)) < 0) {
                svc_send_errno(a, c, id, -rc, "read", what);
                return;
        }
        static const char *const keys[] = {"cpu_count",  "cpu_busy_ticks", "cpu_total_ticks",
                                           "mem_total",  "mem_available",  "mem_cache",
                                           "disk_total", "disk_used"};
        const uint64_t vals[] = {st.cpu_count,     st.cpu_busy,  st.cpu_total,  st.mem_total,
                                 st.mem_available, st.mem_cache, st.disk_total, st.disk_used};
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, sizeof(keys) / sizeof(keys[0]));
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                cv_enc_cstr(&c->out, keys[i]);
                cv_enc_uint(&c->out, vals[i]);
        }
        if (cv_out_end(&c->out, mark, CV_MSG_OK, id) < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply");
        conn_touch(c);
}
