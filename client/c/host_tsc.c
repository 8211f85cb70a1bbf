/* The host's TSC frequency: see host_tsc.h (why measured, why this way). */
#include "host_tsc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#endif

#include "registry.h"

#define CACHE_FORMAT "cellvm-host-tsc 1"
#define INTERVAL_NS 50000000L
#define ROUNDS 3
#define BRACKETS 64
/* Plausible TSC frequencies: what falls outside is a failed measurement. */
#define MIN_KHZ 100000u
#define MAX_KHZ 10000000u

static bool plausible(uint64_t khz)
{
        return khz >= MIN_KHZ && khz <= MAX_KHZ;
}

#ifdef HAVE_RDTSC
static uint64_t raw_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tightest of BRACKETS (rdtsc, clock, rdtsc) reads: a preemption inside one
 * widens it and it is not chosen. The TSC is the middle of the bracket. */
static void bracket(uint64_t *tsc, uint64_t *ns)
{
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < BRACKETS; i++) {
                uint64_t t0 = __rdtsc();
                uint64_t c = raw_ns();
                uint64_t t1 = __rdtsc();
                if (t1 >= t0 && t1 - t0 < best) {
                        best = t1 - t0;
                        *tsc = t0 + (t1 - t0) / 2;
                        *ns = c;
                }
        }
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int cvm_host_tsc_measure(uint64_t *khz)
{
        double got[ROUNDS];
        int n = 0;
        for (int r = 0; r < ROUNDS; r++) {
                uint64_t t0 = 0, c0 = 0, t1 = 0, c1 = 0;
                bracket(&t0, &c0);
                struct timespec pause = {0, INTERVAL_NS};
                while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
                        ;
                bracket(&t1, &c1);
                if (c1 > c0 && t1 > t0)
                        got[n++] = (double)(t1 - t0) * 1e6 / (double)(c1 - c0);
        }
        if (n == 0)
                return -EIO;
        qsort(got, (size_t)n, sizeof(got[0]), cmp_double);
        uint64_t v = (uint64_t)(got[n / 2] + 0.5);
        if (!plausible(v))
                return -ERANGE;
        *khz = v;
        return 0;
}
#else
int cvm_host_tsc_measure(uint64_t *khz)
{
        (void)khz;
        return -ENOTSUP;
}
#endif

int cvm_tsc_cache_parse(const char *text, const char *boot_id, uint64_t *khz)
{
        size_t fl = strlen(CACHE_FORMAT), bl = strlen(boot_id);
        if (strncmp(text, CACHE_FORMAT " ", fl + 1) != 0 || bl == 0)
                return -EINVAL;
        text += fl + 1;
        if (strncmp(text, boot_id, bl) != 0 || text[bl] != ' ')
                return -EINVAL;
        text += bl + 1;
        char *end;
        if (*text < '0' || *text > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || (*end != '\n' && *end != '\0') || !plausible(v))
                return -EINVAL;
        *khz = v;
        return 0;
}

int cvm_tcg_cmdline(const char *image_tcg, uint64_t khz, char *out, size_t outlen)
{
        size_t len = 0;
        bool has_tsc = false;
        if (outlen == 0)
                return -E2BIG;
        out[0] = '\0';
        for (const char *w = image_tcg; *w;) {
                size_t n = strcspn(w, " ");
                has_tsc = has_tsc || (n >= 4 && strncmp(w, "tsc=", 4) == 0);
                if (n && !(khz && strncmp(w, "tsc_early_khz=", 14) == 0)) {
                        if (len + n + 2 > outlen)
                                return -E2BIG;
                        if (len)
                                out[len++] = ' ';
                        memcpy(out + len, w, n);
                        len += n;
                        out[len] = '\0';
                }
                w += n;
                w += strspn(w, " ");
        }
        int k = 0;
        if (khz)
                k = snprintf(out + len, outlen - len, "%stsc_early_khz=%" PRIu64, len ? " " : "",
                             khz);
        if (k < 0 || (size_t)k >= outlen - len)
                return -E2BIG;
        len += (size_t)k;
        if (!has_tsc) {
                k = snprintf(out + len, outlen - len, "%stsc=reliable", len ? " " : "");
                if (k < 0 || (size_t)k >= outlen - len)
                        return -E2BIG;
        }
        return 0;
}

/* The host's boot id (a new one at each boot of the host), without its newline. */
static int boot_id(char *out, size_t size)
{
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, out, size - 1);
        int e = errno;
        close(fd);
        if (n <= 0)
                return n < 0 ? -e : -EIO;
        out[n] = '\0';
        out[strcspn(out, "\n")] = '\0';
        return out[0] ? 0 : -EIO;
}

static int cache_path(char *out, size_t size)
{
        struct creg r;
        char err[256];
        int rc = creg_open(&r, err, sizeof(err));
        if (rc < 0)
                return rc;
        if ((size_t)snprintf(out, size, "%s/%s", r.dir, CVM_TSC_CACHE_NAME) >= size)
                return -ENAMETOOLONG;
        return 0;
}

static int read_cache(const char *path, const char *boot, uint64_t *khz)
{
        char text[256];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0)
                return -EINVAL;
        text[n] = '\0';
        return cvm_tsc_cache_parse(text, boot, khz);
}

/* Best effort: another process measures again if this fails. */
static void write_cache(const char *path, const char *boot, uint64_t khz)
{
        char tmp[700];
        if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= sizeof(tmp))
                return;
        FILE *f = fopen(tmp, "we");
        if (!f)
                return;
        bool ok = fprintf(f, CACHE_FORMAT " %s %" PRIu64 "\n", boot, khz) > 0;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) < 0)
                (void)unlink(tmp);
}

int cvm_host_tsc_khz(uint64_t *khz)
{
        const char *forced = getenv("CELLVM_TSC_KHZ");
        if (forced && *forced) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(forced, &end, 10);
                if (errno || *end || forced[0] < '0' || forced[0] > '9' || !plausible(v))
                        return -EINVAL;
                *khz = v;
                return 0;
        }
        char boot[64], path[600];
        bool cacheable = boot_id(boot, sizeof(boot)) == 0 && cache_path(path, sizeof(path)) == 0;
        if (cacheable && read_cache(path, boot, khz) == 0)
                return 0;
        int rc = cvm_host_tsc_measure(khz);
        if (rc == 0 && cacheable)
                write_cache(path, boot, *khz);
        return rc;
}
