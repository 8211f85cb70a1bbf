/* The languages a context can run: canonical names and the aliases clients may use. */

#include "language.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct language {
        const char *name;           /* canonical: what OK and CONTEXT_LIST report */
        const char *const *aliases; /* NULL-terminated */
};

static const char *const python_aliases[] = {"python3", NULL};
static const char *const bash_aliases[] = {NULL};
/* E2B's names ("js", "ts"); both run cellvm's driver in Node.js (node-executor/). */
static const char *const javascript_aliases[] = {"js", NULL};
static const char *const typescript_aliases[] = {"ts", NULL};

/* The executor's zygote must know each of these (python-embed/executor_language.c). */
static const struct language languages[] = {
    {"python", python_aliases},
    {"bash", bash_aliases},
    {"javascript", javascript_aliases},
    {"typescript", typescript_aliases},
};

#define NLANGUAGES (sizeof(languages) / sizeof(languages[0]))

static bool same(const char *known, const char *s, size_t n)
{
        return strlen(known) == n && strncasecmp(known, s, n) == 0;
}

const char *language_canonical(const char *s, size_t n)
{
        for (size_t i = 0; i < NLANGUAGES; i++) {
                if (same(languages[i].name, s, n))
                        return languages[i].name;
                for (const char *const *al = languages[i].aliases; *al; al++)
                        if (same(*al, s, n))
                                return languages[i].name;
        }
        return NULL;
}

void language_names(char *out, size_t size)
{
        size_t k = 0;
        out[0] = '\0';
        for (size_t i = 0; i < NLANGUAGES && k < size; i++) {
                k += (size_t)snprintf(out + k, size - k, "%s\"%s\"", k ? ", " : "",
                                      languages[i].name);
                for (const char *const *al = languages[i].aliases; *al && k < size; al++)
                        k += (size_t)snprintf(out + k, size - k, " (or \"%s\")", *al);
        }
}
