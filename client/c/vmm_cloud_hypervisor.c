/* Cloud Hypervisor's command line: see vmm_cloud_hypervisor.h. */
#include "vmm_cloud_hypervisor.h"

#include <errno.h>
#include <string.h>

#include "hybrid_vsock.h"
#include "vmm_hybrid.h"

int cvm_cloud_hypervisor_argv(const struct cvm_opts *o, const struct cvm_launch *l, const char *dir,
                              const char *api_sock, struct cvm_argv *a)
{
        memset(a, 0, sizeof(*a));
        cvm_argv_add(a, "%s", o->qemu ? o->qemu : CVM_CLOUD_HYPERVISOR_DEFAULT);
        cvm_argv_add(a, "--kernel");
        cvm_argv_add(a, "%s", l->kernel);
        if (l->initramfs[0]) {
                cvm_argv_add(a, "--initramfs");
                cvm_argv_add(a, "%s", l->initramfs);
        }
        cvm_argv_add(a, "--cmdline");
        cvm_argv_add(a, "%s", l->cmdline);
        cvm_argv_add(a, "--disk");
        cvm_argv_add(a, "path=%s,readonly=on", l->rootfs);
        cvm_argv_add(a, "--cpus");
        cvm_argv_add(a, "boot=%u", o->vcpus);
        cvm_argv_add(a, "--memory");
        cvm_argv_add(a, "size=%uM", o->memory_mb);
        cvm_argv_add(a, "--rng");
        cvm_argv_add(a, "src=/dev/urandom");
        cvm_argv_add(a, "--vsock");
        cvm_argv_add(a, "cid=%u,socket=%s/%s", CVM_HYBRID_GUEST_CID, dir, CVM_HYBRID_VSOCK_SOCKET);
        cvm_argv_add(a, "--serial");
        cvm_argv_add(a, "file=%s/console.log", dir);
        cvm_argv_add(a, "--console");
        cvm_argv_add(a, "off");
        if (api_sock) {
                cvm_argv_add(a, "--api-socket");
                cvm_argv_add(a, "%s", api_sock);
        }
        return a->overflow ? -E2BIG : 0;
}

int cvm_cloud_hypervisor_api_argv(const char *binary, const char *api_sock, struct cvm_argv *a)
{
        memset(a, 0, sizeof(*a));
        cvm_argv_add(a, "%s", binary ? binary : CVM_CLOUD_HYPERVISOR_DEFAULT);
        cvm_argv_add(a, "--api-socket");
        cvm_argv_add(a, "%s", api_sock);
        return a->overflow ? -E2BIG : 0;
}
