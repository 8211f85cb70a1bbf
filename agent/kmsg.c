/* Kernel log records (see kmsg.h). */
#include "kmsg.h"

#include <errno.h>
#include <string.h>

/* random.c's message, with its "random: " prefix (pr_fmt). */
static const char vmfork_notice[] = "random: crng reseeded due to virtual machine fork";

int kmsg_parse(const char *line, size_t len, struct kmsg_record *out)
{
        const char *nl = memchr(line, '\n', len);
        if (nl)
                len = (size_t)(nl - line);
        const char *semi = memchr(line, ';', len);
        if (!semi || len == 0 || line[0] < '0' || line[0] > '9')
                return -EINVAL;
        unsigned long prio = 0;
        size_t i = 0;
        for (; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
                prio = prio * 10 + (unsigned long)(line[i] - '0');
                if (prio > 0xffffffu) /* facility and level fit in 24 bits */
                        return -EINVAL;
        }
        if (i == len || line[i] != ',')
                return -EINVAL;
        out->facility = (unsigned)(prio >> 3);
        out->level = (unsigned)(prio & 7);
        out->text = semi + 1;
        out->text_len = len - (size_t)(semi + 1 - line);
        return 0;
}

bool kmsg_is_vmfork_notice(const char *line, size_t len)
{
        struct kmsg_record r;
        if (kmsg_parse(line, len, &r) < 0 || r.facility != 0)
                return false;
        return r.text_len == sizeof(vmfork_notice) - 1 &&
               memcmp(r.text, vmfork_notice, r.text_len) == 0;
}
