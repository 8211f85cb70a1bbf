/* Boot stamps for HELLO: CLOCK_BOOTTIME nanoseconds by stage name. */

#include "boot.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"

#define STAMP_ENV_PREFIX "CELLVM_STAMP_"

extern char **environ;

void boot_stamp(struct agent *a, const char *name, uint64_t ns)
{
        for (size_t i = 0; i < a->nboot; i++) {
                if (strcmp(a->boot[i].name, name) == 0) {
                        a->boot[i].ns = ns;
                        return;
                }
        }
        if (a->nboot == BOOT_MAX_STAMPS || strlen(name) >= sizeof(a->boot[0].name)) {
                log_warn("boot stamp %s dropped", name);
                return;
        }
        struct boot_stamp *s = &a->boot[a->nboot++];
        strcpy(s->name, name);
        s->ns = ns;
}

/* cellvm-init passes its stamps as CELLVM_STAMP_<NAME>=<ns>; the map key is <name> lowercased. */
void boot_stamps_from_env(struct agent *a)
{
        for (char **e = environ; *e; e++) {
                if (strncmp(*e, STAMP_ENV_PREFIX, strlen(STAMP_ENV_PREFIX)) != 0)
                        continue;
                const char *name = *e + strlen(STAMP_ENV_PREFIX);
                const char *eq = strchr(name, '=');
                if (!eq || eq == name || (size_t)(eq - name) >= sizeof(a->boot[0].name))
                        continue;
                char key[sizeof(a->boot[0].name)];
                size_t n = (size_t)(eq - name);
                for (size_t i = 0; i < n; i++)
                        key[i] = (char)tolower((unsigned char)name[i]);
                key[n] = 0;
                char *end;
                errno = 0;
                unsigned long long ns = strtoull(eq + 1, &end, 10);
                if (errno || end == eq + 1 || *end || eq[1] == '-') {
                        log_warn("ignoring %s: not a nanosecond count", *e);
                        continue;
                }
                boot_stamp(a, key, ns);
        }
}
