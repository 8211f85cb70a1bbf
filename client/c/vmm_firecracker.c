/* Firecracker's configuration file and command line: see vmm_firecracker.h. */
#include "vmm_firecracker.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hybrid_vsock.h"
#include "vmm_hybrid.h"

/* An output buffer that remembers an overflow. */
struct out {
        char *p;
        size_t cap, len;
        bool overflow;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
        if (o->overflow)
                return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= o->cap - o->len)
                o->overflow = true;
        else
                o->len += (size_t)n;
}

/* `s` as a JSON string (paths and the command line are the user's). */
static void put_str(struct out *o, const char *s)
{
        put(o, "\"");
        for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
                if (*c == '"' || *c == '\\')
                        put(o, "\\%c", *c);
                else if (*c < 0x20)
                        put(o, "\\u%04x", *c);
                else
                        put(o, "%c", *c);
        }
        put(o, "\"");
}

int cvm_firecracker_config(const struct cvm_opts *opts, const struct cvm_launch *l, char *out,
                           size_t outlen)
{
        struct out o = {.p = out, .cap = outlen};
        if (outlen == 0)
                return -E2BIG;
        put(&o, "{\n  \"boot-source\": {\n    \"kernel_image_path\": ");
        put_str(&o, l->kernel);
        if (l->initramfs[0]) {
                put(&o, ",\n    \"initrd_path\": ");
                put_str(&o, l->initramfs);
        }
        put(&o, ",\n    \"boot_args\": ");
        put_str(&o, l->cmdline);
        put(&o, "\n  },\n  \"drives\": [\n    {\n      \"drive_id\": \"root\",\n"
                "      \"path_on_host\": ");
        put_str(&o, l->rootfs);
        /* Not the root device: the initramfs (or root=/dev/vda) mounts it. */
        put(&o, ",\n      \"is_root_device\": false,\n      \"is_read_only\": true\n    }\n  ],\n");
        put(&o,
            "  \"machine-config\": {\n    \"vcpu_count\": %u,\n    \"mem_size_mib\": %u,\n"
            "    \"smt\": false\n  },\n",
            opts->vcpus, opts->memory_mb);
        put(&o, "  \"vsock\": {\n    \"guest_cid\": %u,\n    \"uds_path\": ", CVM_HYBRID_GUEST_CID);
        put_str(&o, CVM_HYBRID_VSOCK_SOCKET);
        put(&o, "\n  },\n  \"entropy\": {}\n}\n");
        return o.overflow ? -E2BIG : 0;
}

int cvm_firecracker_argv(const char *binary, const char *config, const char *api_sock,
                         struct cvm_argv *a)
{
        memset(a, 0, sizeof(*a));
        cvm_argv_add(a, "%s", binary ? binary : CVM_FIRECRACKER_DEFAULT);
        if (api_sock) {
                cvm_argv_add(a, "--api-sock");
                cvm_argv_add(a, "%s", api_sock);
        } else
                cvm_argv_add(a, "--no-api");
        if (config) {
                cvm_argv_add(a, "--config-file");
                cvm_argv_add(a, "%s", config);
        }
        return a->overflow ? -E2BIG : 0;
}
