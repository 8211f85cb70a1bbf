/* One record of the kernel log as /dev/kmsg gives it (Documentation/ABI/testing/dev-kmsg). */
#ifndef CELLVM_AGENT_KMSG_H
#define CELLVM_AGENT_KMSG_H

#include <stdbool.h>
#include <stddef.h>

struct kmsg_record {
        unsigned facility; /* 0: the kernel's own; what user space writes has LOG_USER or more */
        unsigned level;
        const char *text; /* the message, without the newline; not NUL-terminated */
        size_t text_len;
};

/* Parses the first line of `line` ("PRI,SEQ,USEC,FLAGS[,...];TEXT"). 0, or -EINVAL for
 * anything else (a continuation line " KEY=VALUE", garbage). */
int kmsg_parse(const char *line, size_t len, struct kmsg_record *out);

/* The notice the kernel logs when the vmgenid driver saw the VM generation ID change
 * (random.c's add_vmfork_randomness, Linux 5.18 on): true only for the kernel's own. */
bool kmsg_is_vmfork_notice(const char *line, size_t len);

#endif
