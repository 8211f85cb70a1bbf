/*
 * Requests about the guest itself (docs/PROTOCOL.md section 11): the host sets
 * the clock and feeds entropy after boot, which matters most for VMs restored
 * from a snapshot (same CRNG state, stale clock in every clone); the snapshot
 * requests themselves are generation.c's.
 */

#include "system.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/entropy.h"
#include "../common/init_signal.h"
#include "agent.h"
#include "cbor_util.h"
#include "conn.h"
#include "log.h"
#include "msgtypes.h"
#include "svc.h"
#include "writer.h"

static void reply_ok(struct agent *a, struct conn *c, uint32_t id, const char *key, uint64_t v)
{
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, key ? 1 : 0);
        if (key) {
                cv_enc_cstr(&c->out, key);
                cv_enc_uint(&c->out, v);
        }
        if (cv_out_end(&c->out, mark, CV_MSG_OK, id) < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply");
        conn_touch(c);
}

bool system_under_init(void)
{
        const char *init = getenv("CELLVM_INIT");
        return init && strcmp(init, "1") == 0;
}

int system_set_realtime(uint64_t ns)
{
        struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                              .tv_nsec = (long)(ns % 1000000000u)};
        return clock_settime(CLOCK_REALTIME, &ts) < 0 ? -errno : 0;
}

void system_set_time_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        uint64_t ns;
        if (cv_map_get_uint(body, "realtime_ns", &ns) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`realtime_ns` must be an unsigned integer");
                return;
        }
        /* Outside a VM the clock is the host's: a dev-mode agent run as root must
         * not step it (NEW_GENERATION skips its clock for the same reason). */
        if (!system_under_init()) {
                conn_send_error(a, c, id, "unsupported",
                                "the agent was not started by cellvm-init: the clock is the "
                                "host's, not set");
                return;
        }
        int rc = system_set_realtime(ns);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "set", "CLOCK_REALTIME");
                return;
        }
        log_info("conn %u: clock set by the host", c->num);
        reply_ok(a, c, id, NULL, 0);
}

void system_add_entropy_request(struct agent *a, struct conn *c, uint32_t id,
                                const cbor_item_t *body)
{
        const uint8_t *seed;
        size_t len;
        if (cv_map_get_bytes(body, "seed", &seed, &len) < 0 || len == 0 ||
            len > ENTROPY_MAX_BYTES) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`seed` must be 1 to %d bytes",
                                ENTROPY_MAX_BYTES);
                return;
        }
        int rc = entropy_seed(seed, len);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "add entropy to", "/dev/random");
                return;
        }
        reply_ok(a, c, id, "credited_bits", (uint64_t)rc * 8u);
}

/*
 * cellvm-init's signal contract (docs/INIT.md): SIGUSR2 powers off, SIGTERM
 * shuts down with the action cellvm.shutdown configures (reboot by default;
 * with the kernel's reboot=k Firecracker exits on it).
 */
void system_shutdown_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        bool poweroff = false;
        int rc = cv_map_get_bool(body, "poweroff", &poweroff);
        if (rc < 0 && rc != -ENOENT) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`poweroff` must be a boolean");
                return;
        }
        if (!system_under_init()) {
                conn_send_error(a, c, id, "unsupported",
                                "the agent was not started by cellvm-init: nothing to shut down");
                return;
        }
        log_info("conn %u: %s requested by the host", c->num, poweroff ? "power-off" : "shutdown");
        a->init_signal = poweroff ? SIGUSR2 : SIGTERM;
        reply_ok(a, c, id, NULL, 0);
}

/*
 * SET_DEADLINE: init owns the deadline (it must hold while the agent restarts
 * or dies), so the agent only relays it, as a queued signal whose value is the
 * milliseconds left (docs/INIT.md, "Deadline").
 */
void system_set_deadline_request(struct agent *a, struct conn *c, uint32_t id,
                                 const cbor_item_t *body)
{
        uint64_t ms;
        int rc = cv_map_get_uint(body, "timeout_ms", &ms);
        if (rc < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`timeout_ms` (milliseconds from now, 0 for none) is required");
                return;
        }
        if (ms > (uint64_t)UINTPTR_MAX) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`timeout_ms` is too large");
                return;
        }
        if (!system_under_init()) {
                conn_send_error(a, c, id, "unsupported",
                                "the agent was not started by cellvm-init (dev mode): its "
                                "lifetime belongs to whoever started it, there is no deadline");
                return;
        }
        union sigval v = {.sival_ptr = (void *)(uintptr_t)ms};
        if (sigqueue(1, INIT_SIG_DEADLINE, v) < 0) {
                svc_send_errno(a, c, id, errno, "signal the deadline to", "cellvm-init (pid 1)");
                return;
        }
        log_info("conn %u: deadline in %llu ms set by the host", c->num, (unsigned long long)ms);
        reply_ok(a, c, id, NULL, 0);
}

void system_signal_init(struct agent *a)
{
        int sig = a->init_signal;
        if (!sig)
                return;
        a->init_signal = 0;
        if (kill(1, sig) < 0)
                log_error("kill(1, %s) for the requested shutdown: %s", strsignal(sig),
                          strerror(errno));
}
