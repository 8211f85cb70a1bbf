#include "config.h"

#include "../common/parse_num.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_AGENT "/usr/bin/cellvm-agent"
#define DEFAULT_VSOCK_PORT 1024
#define DEFAULT_SERIAL "cellvm"
#define DEFAULT_WORKDIR "/home/user"
#define DEFAULT_HOSTNAME "cellvm"
#define DEFAULT_ROOT "/dev/vda"

/* Firecracker's boot-timer device, the first device on its MMIO bus. x86-64
 * releases since the 2025 re-layout for PCI (PR #5249) put it at 0xc0000000:
 * cellvm.boot_timer_addr=0xc0000000 there (docs/INIT.md). */
#if defined(__aarch64__)
#define DEFAULT_BOOT_TIMER_ADDR 0x40000000ull
#else
#define DEFAULT_BOOT_TIMER_ADDR 0xd0000000ull
#endif

void config_defaults(struct init_config *c)
{
        memset(c, 0, sizeof(*c));
        snprintf(c->agent, sizeof(c->agent), "%s", DEFAULT_AGENT);
        c->vsock_port = DEFAULT_VSOCK_PORT;
        snprintf(c->serial, sizeof(c->serial), "%s", DEFAULT_SERIAL);
        snprintf(c->workdir, sizeof(c->workdir), "%s", DEFAULT_WORKDIR);
        snprintf(c->hostname, sizeof(c->hostname), "%s", DEFAULT_HOSTNAME);
        c->net = NET_LOOPBACK;
        c->boot_timer_addr = DEFAULT_BOOT_TIMER_ADDR;
        snprintf(c->root, sizeof(c->root), "%s", DEFAULT_ROOT);
        c->root_timeout_ms = 5000;
        c->shutdown = SHUTDOWN_REBOOT;
        c->shutdown_timeout_ms = 2000;
        c->restart_max_ms = 5000;
}

static int parse_bool(const char *s, bool *out)
{
        if (strcmp(s, "1") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "on") == 0) {
                *out = true;
                return 0;
        }
        if (strcmp(s, "0") == 0 || strcmp(s, "no") == 0 || strcmp(s, "off") == 0) {
                *out = false;
                return 0;
        }
        return -EINVAL;
}

static int set_string(char *dst, size_t cap, const char *value)
{
        if (strlen(value) >= cap)
                return -E2BIG;
        memcpy(dst, value, strlen(value) + 1);
        return 0;
}

static bool is_hex(const char *s)
{
        for (; *s != '\0'; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') ||
                      (*s >= 'A' && *s <= 'F')))
                        return false;
        return true;
}

static int apply_u32(const char *v, uint64_t max, unsigned *out)
{
        uint64_t x;
        int r = parse_uint(v, max, &x);
        if (r == 0)
                *out = (unsigned)x;
        return r;
}

/* Applies one cellvm.* key; returns 0, -ENOENT for an unknown key, or another
 * negative errno for a bad value. */
static int apply_key(struct init_config *c, const char *key, const char *v)
{
        uint64_t x;
        bool b;
        int r;

#define STR(name, field)                                                                           \
        if (strcmp(key, name) == 0)                                                                \
        return set_string(c->field, sizeof(c->field), v)
        STR("agent", agent);
        STR("agent_args", agent_args);
        STR("workdir", workdir);
        STR("gateway", gateway);
        STR("dns", dns);
#undef STR
        if (strcmp(key, "serial") == 0)
                return set_string(c->serial, sizeof(c->serial), strcmp(v, "none") == 0 ? "" : v);
        if (strcmp(key, "hostname") == 0) {
                if (v[0] == '\0')
                        return -EINVAL;
                return set_string(c->hostname, sizeof(c->hostname), v);
        }
        if (strcmp(key, "vsock_port") == 0)
                return apply_u32(v, UINT32_MAX, &c->vsock_port);
        if (strcmp(key, "ip") == 0) {
                if (strchr(v, '/') == NULL)
                        return -EINVAL;
                return set_string(c->ip, sizeof(c->ip), v);
        }
        if (strcmp(key, "net") == 0) {
                if (strcmp(v, "none") == 0 || strcmp(v, "loopback") == 0)
                        c->net = NET_LOOPBACK;
                else if (strcmp(v, "static") == 0)
                        c->net = NET_STATIC;
                else
                        return -EINVAL;
                return 0;
        }
        if (strcmp(key, "mem_limit") == 0)
                return parse_size(v, &c->mem_limit);
        if (strcmp(key, "pids_limit") == 0)
                return parse_uint(v, UINT32_MAX, &c->pids_limit);
        if (strcmp(key, "entropy") == 0) {
                if (!is_hex(v) || strlen(v) % 2 != 0)
                        return -EINVAL;
                return set_string(c->entropy, sizeof(c->entropy), v);
        }
        if (strcmp(key, "debug") == 0 || strcmp(key, "test") == 0) {
                r = parse_bool(v, &b);
                if (r == 0 && key[0] == 'd')
                        c->debug = b;
                else if (r == 0)
                        c->test = b;
                return r;
        }
        if (strcmp(key, "boot_timer") == 0) {
                if (strcmp(v, "pio") == 0) {
                        c->boot_timer = BOOT_TIMER_PIO;
                        return 0;
                }
                if (strcmp(v, "mmio") == 0) {
                        c->boot_timer = BOOT_TIMER_MMIO;
                        return 0;
                }
                r = parse_bool(v, &b);
                if (r == 0)
                        c->boot_timer = b ? BOOT_TIMER_MMIO : BOOT_TIMER_OFF;
                return r;
        }
        if (strcmp(key, "boot_timer_addr") == 0)
                return parse_uint(v, UINT64_MAX, &c->boot_timer_addr);
        if (strcmp(key, "root_timeout_ms") == 0)
                return apply_u32(v, 600000, &c->root_timeout_ms);
        if (strcmp(key, "shutdown_timeout_ms") == 0)
                return apply_u32(v, 600000, &c->shutdown_timeout_ms);
        if (strcmp(key, "restart_max_ms") == 0)
                return apply_u32(v, 600000, &c->restart_max_ms);
        if (strcmp(key, "deadline_ms") == 0)
                return parse_uint(v, UINT64_MAX / 1000000ull, &c->deadline_ms);
        if (strcmp(key, "shutdown") == 0) {
                if (strcmp(v, "reboot") == 0)
                        c->shutdown = SHUTDOWN_REBOOT;
                else if (strcmp(v, "poweroff") == 0)
                        c->shutdown = SHUTDOWN_POWEROFF;
                else
                        return -EINVAL;
                return 0;
        }
        (void)x;
        return -ENOENT;
}

int config_parse(struct init_config *c, const char *cmdline, config_warn_fn warn, void *ctx)
{
        struct cmdline_arg arg;
        const char *cursor = cmdline;
        int problems = 0;
        int r;

        while ((r = cmdline_next(&cursor, &arg)) != 0) {
                if (r < 0) {
                        warn(ctx, arg.key, "too long, ignored");
                        problems++;
                        continue;
                }
                if (strcmp(arg.key, "root") == 0 && arg.has_value) {
                        r = set_string(c->root, sizeof(c->root), arg.value);
                } else if (strcmp(arg.key, "rootfstype") == 0 && arg.has_value) {
                        r = set_string(c->rootfstype, sizeof(c->rootfstype), arg.value);
                } else if (strncmp(arg.key, "cellvm.", 7) == 0) {
                        /* A bare "cellvm.debug" means "cellvm.debug=1", as the kernel does
                         * for its own boolean flags. */
                        r = apply_key(c, arg.key + 7, arg.has_value ? arg.value : "1");
                } else {
                        continue;
                }
                if (r == -ENOENT) {
                        warn(ctx, arg.key, "unknown key, ignored");
                        problems++;
                } else if (r < 0) {
                        warn(ctx, arg.key, "bad value, default kept");
                        problems++;
                }
        }
        /* The last argument parsed may be cellvm.entropy: no copy left on the stack. */
        explicit_bzero(&arg, sizeof(arg));
        if (c->net == NET_STATIC && c->ip[0] == '\0') {
                warn(ctx, "cellvm.net", "static needs cellvm.ip; using loopback only");
                c->net = NET_LOOPBACK;
                problems++;
        }
        return problems;
}
