/* Launching Firecracker or Cloud Hypervisor and connecting to the agent over
 * their hybrid vsock: see vmm_hybrid.h. */
#include "vmm_hybrid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hybrid_vsock.h"
#include "mono_clock.h"
#include "vmm_cloud_hypervisor.h"
#include "vmm_firecracker.h"
#include "vmm_vsock.h"

/* Writes `text` to a new file `path` (0600). */
static int write_new_file(const char *path, const char *text, char *err, size_t errlen)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        size_t len = strlen(text), done = 0;
        int rc = 0;
        while (done < len) {
                ssize_t n = write(fd, text + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        rc = -errno;
                        break;
                }
                done += (size_t)n;
        }
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        if (rc < 0)
                snprintf(err, errlen, "writing %s: %s", path, strerror(-rc));
        return rc;
}

/* The argv of the launch of `o` in vm->dir (Firecracker: its config file written). */
static int render(const struct cvm_opts *o, struct cvm *vm, struct cvm_argv *a, char *err,
                  size_t errlen)
{
        static struct cvm_launch l; /* large; the CLI starts one VM at a time */
        /* Firecracker's command line takes the TCG words where KVM cannot run the
         * guest; Cloud Hypervisor needs KVM. */
        bool tcg = o->vmm == CVM_VMM_FIRECRACKER && !cvm_kvm_usable();
        int rc = cvm_boot_params(o, tcg, &l, err, errlen);
        if (rc < 0)
                return rc;
        if (o->vmm == CVM_VMM_CLOUD_HYPERVISOR) {
                rc = cvm_cloud_hypervisor_argv(o, &l, vm->dir, o->api ? vm->api : NULL, a);
        } else {
                static char config[2 * CVM_CMDLINE_MAX + 4 * PATH_MAX];
                rc = cvm_firecracker_config(o, &l, config, sizeof(config));
                if (rc == 0)
                        rc = write_new_file(vm->config, config, err, errlen);
                else
                        snprintf(err, errlen, "Firecracker configuration too long");
                if (rc < 0)
                        return rc;
                rc = cvm_firecracker_argv(o->qemu, vm->config, o->api ? vm->api : NULL, a);
        }
        if (rc < 0)
                snprintf(err, errlen, "%s command line too long", cvm_vmm_name(o->vmm));
        return rc;
}

int cvm_hybrid_start(const struct cvm_opts *o, struct cvm *vm, char *err, size_t errlen)
{
        if (o->user_net) { /* a NIC of theirs needs a tap device */
                snprintf(err, errlen, "%s: only --network none is supported", cvm_vmm_name(o->vmm));
                return -EINVAL;
        }
        int rc = cvm_make_dir(vm, o->vmm, err, errlen);
        if (rc < 0)
                return rc;
        vm->opts = o;
        vm->kvm = true; /* both need KVM: the guest's clock has no TCG slack (launch.py) */
        static struct cvm_argv a;
        rc = render(o, vm, &a, err, errlen);
        if (rc == 0)
                rc = cvm_fork_exec(vm, a.argv, -1, err, errlen);
        if (rc == -ENOENT && vm->pid == 0)
                snprintf(err, errlen,
                         "%s: the `%s` binary was not found on PATH; install it (docs/VMM.md) or "
                         "use --vmm qemu",
                         cvm_vmm_name(o->vmm), a.argv[0] ? a.argv[0] : cvm_vmm_name(o->vmm));
        if (rc < 0)
                cvm_kill(vm);
        return rc;
}

static int alive_cb(void *ud)
{
        return cvm_alive(ud);
}

int cvm_hybrid_connect(struct cvm *vm, int timeout_ms, struct cvc **out)
{
        *out = NULL;
        vm->error[0] = '\0';
        int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
        int fd;
        char why[sizeof(vm->error) - 32];
        int rc = cvm_hybrid_vsock_connect(vm->sock, CVM_AGENT_VSOCK_PORT, timeout_ms, alive_cb, vm,
                                          &fd, why, sizeof(why));
        if (rc < 0) {
                snprintf(vm->error, sizeof(vm->error), "%s: %s", cvm_vmm_name(vm->vmm), why);
                return rc;
        }
        int64_t left = deadline - mono_ms();
        /* A stream: HELLO is not lost as over a serial port, so it is sent once. */
        struct cvc_connect_opts co = {
            .timeout_ms = left > 0 ? (int)left : 1,
            .still_alive = alive_cb,
            .ud = vm,
        };
        return cvc_connect_fd(fd, &co, out);
}
