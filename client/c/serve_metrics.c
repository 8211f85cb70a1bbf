/*
 * E2B's sandbox metrics (GET /sandboxes/{id}/metrics): a sampler thread asks
 * every sandbox's agent for its counters (SYS_STATS, docs/PROTOCOL.md section
 * 11) every SERVE_METRICS_PERIOD_S seconds, as E2B collects in 5 s buckets,
 * and keeps the last SERVE_METRICS_KEEP samples per sandbox. A CPU percentage
 * needs two readings, so a sandbox's first sample comes one period after its
 * first reading.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbor_util.h"
#include "msgtypes.h"
#include "serve.h"
#include "serve_http.h"

struct metric_sample {
        int64_t ts_ms;
        double cpu_pct;
        uint64_t cpu_count, mem_used, mem_total, mem_cache, disk_used, disk_total;
};

struct serve_metrics {
        bool primed; /* a first reading is in `busy` / `total` */
        uint64_t busy, total;
        size_t head, count; /* ring: the newest sample is at (head + count - 1) % KEEP */
        struct metric_sample ring[SERVE_METRICS_KEEP];
};

/* The rings of every sandbox: the sampler writes, HTTP threads read. */
static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;

void serve_metrics_free(struct sandbox *s)
{
        free(s->metrics);
        s->metrics = NULL;
}

struct reading {
        uint64_t v[8];
};
static const char *const reading_keys[8] = {"cpu_count",  "cpu_busy_ticks", "cpu_total_ticks",
                                            "mem_total",  "mem_available",  "mem_cache",
                                            "disk_total", "disk_used"};

static int read_guest(struct sandbox *s, struct reading *r)
{
        struct cv_buf body;
        cv_buf_init(&body);
        cv_enc_map(&body, 0);
        cbor_item_t *reply = NULL;
        char err[256];
        int rc = mux_call(&s->mux, CV_MSG_SYS_STATS, &body, 2000, &reply, err, sizeof(err));
        cv_buf_free(&body);
        if (rc < 0)
                return rc;
        for (size_t i = 0; i < 8 && rc == 0; i++)
                if (cv_map_get_uint(reply, reading_keys[i], &r->v[i]) < 0)
                        rc = -EPROTO;
        cbor_decref(&reply);
        return rc;
}

static void record(struct sandbox *s, const struct reading *r, int64_t now_ms)
{
        pthread_mutex_lock(&metrics_lock);
        struct serve_metrics *m = s->metrics;
        if (!m)
                m = s->metrics = calloc(1, sizeof(*m));
        if (m) {
                uint64_t busy = r->v[1], total = r->v[2];
                if (m->primed && total > m->total && busy >= m->busy) {
                        struct metric_sample *x =
                            &m->ring[(m->head + m->count) % SERVE_METRICS_KEEP];
                        if (m->count == SERVE_METRICS_KEEP)
                                m->head = (m->head + 1) % SERVE_METRICS_KEEP;
                        else
                                m->count++;
                        double pct = 100.0 * (double)(busy - m->busy) / (double)(total - m->total);
                        *x = (struct metric_sample){
                            .ts_ms = now_ms,
                            .cpu_pct = pct > 100.0 ? 100.0 : pct,
                            .cpu_count = r->v[0],
                            .mem_total = r->v[3],
                            .mem_used = r->v[3] > r->v[4] ? r->v[3] - r->v[4] : 0,
                            .mem_cache = r->v[5],
                            .disk_total = r->v[6],
                            .disk_used = r->v[7],
                        };
                }
                m->primed = true;
                m->busy = busy;
                m->total = total;
        }
        pthread_mutex_unlock(&metrics_lock);
}

void *serve_metrics_sampler(void *arg)
{
        (void)arg;
        while (!serve.stopping) {
                struct sandbox **all = NULL;
                size_t n = 0;
                if (serve_list(&all, &n) == 0) {
                        for (size_t i = 0; i < n; i++) {
                                struct reading r;
                                if (!serve.stopping && read_guest(all[i], &r) == 0)
                                        record(all[i], &r, creg_now_ms());
                                serve_put(all[i]);
                        }
                        free(all);
                }
                for (int t = 0; t < SERVE_METRICS_PERIOD_S * 4 && !serve.stopping; t++) {
                        struct timespec ts = {.tv_sec = 0, .tv_nsec = 250 * 1000000L};
                        nanosleep(&ts, NULL);
                }
        }
        return NULL;
}

static json_t *sample_json(const struct metric_sample *x)
{
        char when[40];
        iso_time(when, sizeof(when), x->ts_ms);
        return json_pack(
            "{s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I}", "timestamp", when, "timestampUnix",
            (json_int_t)(x->ts_ms / 1000), "cpuCount", (json_int_t)x->cpu_count, "cpuUsedPct",
            (double)(int64_t)(x->cpu_pct * 100.0 + 0.5) / 100.0, "memUsed", (json_int_t)x->mem_used,
            "memTotal", (json_int_t)x->mem_total, "memCache", (json_int_t)x->mem_cache, "diskUsed",
            (json_int_t)x->disk_used, "diskTotal", (json_int_t)x->disk_total);
}

json_t *serve_metrics_json(struct sandbox *s, int64_t start_s, int64_t end_s)
{
        json_t *out = json_array();
        pthread_mutex_lock(&metrics_lock);
        const struct serve_metrics *m = s->metrics;
        for (size_t i = 0; m && out && i < m->count; i++) {
                const struct metric_sample *x = &m->ring[(m->head + i) % SERVE_METRICS_KEEP];
                int64_t t = x->ts_ms / 1000;
                if ((start_s >= 0 && t < start_s) || (end_s >= 0 && t > end_s))
                        continue;
                json_t *j = sample_json(x);
                if (!j || json_array_append_new(out, j) < 0) {
                        json_decref(out);
                        out = NULL;
                }
        }
        pthread_mutex_unlock(&metrics_lock);
        return out;
}
