/* cellvm-init: PID 1 of the cellvm micro-VM.
 *
 * Gets the machine from kernel hand-off to a serving agent, then supervises
 * it: early mounts, configuration from the kernel command line, modules and
 * switch_root when booted from an initramfs, network, entropy, the boot
 * timer, and finally the agent, restarted when it dies. Every orphan is
 * reaped here and every step is stamped with CLOCK_BOOTTIME (docs/INIT.md).
 * It never exits: PID 1 exiting panics the kernel. */
#include "boot_timer.h"
#include "cgroup.h"
#include "cmdline.h"
#include "config.h"
#include "devices.h"
#include "../common/entropy.h"
#include "log.h"
#include "modules.h"
#include "mounts.h"
#include "network.h"
#include "rootfs.h"
#include "shutdown.h"
#include "stamps.h"
#include "supervisor.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

static char cmdline[CMDLINE_MAX];

static void warn_key(void *ctx, const char *key, const char *why)
{
        (void)ctx;
        log_warn("kernel command line: %s: %s", key, why);
}

/* Masked in the command line as soon as it is parsed: the seed's only copy
 * is then cfg.entropy, wiped once used. */
#define ENTROPY_KEY "cellvm.entropy"

/* proc_r: mounts_proc()'s result, logged here once we know whether to. */
static void read_config(struct init_config *c, int proc_r)
{
        config_defaults(c);
        int r = cmdline_read(cmdline, sizeof(cmdline));
        if (r < 0) {
                log_error("read kernel command line: %s%s; using defaults", strerror(-r),
                          proc_r < 0 ? " (/proc not mounted)" : "");
                cmdline[0] = '\0';
        }
        config_parse(c, cmdline, warn_key, NULL);
        cmdline_mask(cmdline, ENTROPY_KEY);
        cmdline_mask_env(ENTROPY_KEY);
        log_set_debug(c->debug);
        log_debug("cellvm-init started as pid %d", (int)getpid());
        /* What happened before debug logging could be switched on. */
        log_debug("stamp init_start");
        if (proc_r > 0)
                log_debug("mounted proc on /proc");
        else if (proc_r == 0)
                log_debug("proc already mounted on /proc");
        log_debug("command line: %s", cmdline);
}

static void mount_cgroup_late(void)
{
        mounts_cgroup();
        stamp_record("cgroup_mounted");
}

int main(int argc, char **argv)
{
        struct init_config cfg;
        int r;

        (void)argc;
        (void)argv;
        uint64_t start = stamp_record("init_start");
        /* CLOCK_BOOTTIME starts with the kernel, so our first stamp is also the
         * kernel's share of the boot. */
        stamp_set("kernel_to_init", start);
        if ((r = supervisor_block_signals()) < 0)
                log_error("block signals: %s", strerror(-r));
        /* Recognisable as PID 1 whatever the file is called (/init in an initramfs). */
        if (prctl(PR_SET_NAME, "cellvm-init", 0, 0, 0) != 0)
                log_warn("PR_SET_NAME: %s", strerror(errno));
        umask(022);

        int proc_r = mounts_proc();
        read_config(&cfg, proc_r);
        if (proc_r < 0)
                log_warn("mount proc on /proc: %s", strerror(-proc_r));
        if (getpid() != 1)
                log_warn("running as pid %d, not 1: orphans are not ours to reap", (int)getpid());
        /* Ctrl-Alt-Del becomes SIGINT to us, handled as a shutdown. */
        if (reboot(RB_DISABLE_CAD) != 0)
                log_debug("RB_DISABLE_CAD: %s", strerror(errno));

        if ((r = mounts_early(cfg.test)) < 0)
                shutdown_machine(&cfg, cfg.shutdown, "essential mounts failed");
        if ((r = devices_console()) < 0)
                log_warn("console on fds 0-2: %s", strerror(-r));
        mounts_dev_links();
        stamp_record("mounts_done");

        bool initramfs = rootfs_in_initramfs(&cfg);
        if (!cfg.test) {
                r = modules_load_listed(MODULES_LIST, cmdline);
                if (r < 0)
                        log_error("loading modules from %s: %s", MODULES_LIST, strerror(-r));
                /* Failed or not, the step is over: its time is what the stamp tells. */
                stamp_record("modules_loaded");
        }
        if (initramfs) {
                if (rootfs_mount_and_switch(&cfg) < 0)
                        shutdown_machine(&cfg, cfg.shutdown, "no root filesystem");
                stamp_record("root_mounted");
                /* The new root's files differ; the name must not. */
                if (prctl(PR_SET_NAME, "cellvm-init", 0, 0, 0) != 0)
                        log_warn("PR_SET_NAME after switch_root: %s", strerror(errno));
        } else if (rootfs_read_only(&cfg)) {
                if (rootfs_overlay_in_place() < 0)
                        shutdown_machine(&cfg, cfg.shutdown, "no writable root filesystem");
                stamp_record("root_mounted");
        }
        if ((r = devices_virtio_ports()) < 0)
                log_warn("virtio port links: %s", strerror(-r));

        network_setup(&cfg);
        if (cfg.entropy[0] != '\0' && cfg.test) {
                /* The namespace shares the host's kernel: its pool is not ours to credit. */
                log_info("cellvm.test=1: the cellvm.entropy seed is not credited");
        } else if (cfg.entropy[0] != '\0') {
                if ((r = entropy_seed_hex(cfg.entropy)) < 0)
                        log_warn("entropy seed from command line: %s", strerror(-r));
                else
                        log_debug("entropy: %d bytes from the command line credited, CRNG "
                                  "reseeded",
                                  r);
        }
        explicit_bzero(cfg.entropy, sizeof(cfg.entropy));
        bool limits = cfg.mem_limit != 0 || cfg.pids_limit != 0;
        if (limits)
                mounts_cgroup();
        r = cgroup_user_setup(cfg.mem_limit, cfg.pids_limit);
        bool user_cgroup = r > 0;
        if (r < 0)
                log_warn("user code limits (cgroup %s): %s", CGROUP_USER_PATH, strerror(-r));
        stamp_record("system_ready");
        if ((r = boot_timer_signal(cfg.boot_timer, cfg.boot_timer_addr)) < 0)
                log_warn("boot timer: %s",
                         r == -EADDRINUSE ? "its address is RAM here, not written" : strerror(-r));
        else if (r > 0 && cfg.boot_timer == BOOT_TIMER_PIO)
                log_debug("boot timer: wrote 123 to port 0x3f0");
        else if (r > 0)
                log_debug("boot timer: wrote 123 to MMIO 0x%llx",
                          (unsigned long long)cfg.boot_timer_addr);

        supervise(&cfg, user_cgroup, limits ? NULL : mount_cgroup_late);
}
