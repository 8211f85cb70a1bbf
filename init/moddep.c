#include "moddep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { UNVISITED, VISITING, QUEUED };

int module_name_of(const char *path_or_name, char *out, size_t outsz)
{
        const char *base = strrchr(path_or_name, '/');
        size_t len;

        base = base ? base + 1 : path_or_name;
        const char *ko = strstr(base, ".ko");
        len = ko ? (size_t)(ko - base) : strlen(base);
        if (len == 0 || len >= outsz)
                return -EINVAL;
        for (size_t i = 0; i < len; i++)
                out[i] = base[i] == '-' ? '_' : base[i];
        out[len] = '\0';
        return 0;
}

void moddep_free(struct moddep *d)
{
        free(d->entries);
        free(d->text);
        d->entries = NULL;
        d->text = NULL;
        d->n = 0;
}

int moddep_parse(struct moddep *d, char *text)
{
        size_t cap = 0;

        d->text = text;
        d->entries = NULL;
        d->n = 0;
        for (char *line = text; line != NULL && *line != '\0';) {
                char *next = strchr(line, '\n');
                if (next != NULL)
                        *next++ = '\0';
                char *colon = strchr(line, ':');
                if (colon == NULL || colon == line) {
                        line = next; /* blank or malformed line: modules.dep has none */
                        continue;
                }
                *colon = '\0';
                if (d->n == cap) {
                        size_t ncap = cap ? cap * 2 : 256;
                        struct moddep_entry *e = realloc(d->entries, ncap * sizeof(*e));
                        if (e == NULL) {
                                moddep_free(d);
                                return -ENOMEM;
                        }
                        d->entries = e;
                        cap = ncap;
                }
                struct moddep_entry *e = &d->entries[d->n];
                e->path = line;
                e->deps = colon + 1;
                e->state = UNVISITED;
                if (module_name_of(line, e->name, sizeof(e->name)) < 0) {
                        line = next;
                        continue;
                }
                d->n++;
                line = next;
        }
        return 0;
}

static struct moddep_entry *find_by_name(struct moddep *d, const char *name)
{
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->entries[i].name, name) == 0)
                        return &d->entries[i];
        return NULL;
}

static struct moddep_entry *find_by_path(struct moddep *d, const char *path, size_t len)
{
        for (size_t i = 0; i < d->n; i++)
                if (strncmp(d->entries[i].path, path, len) == 0 && d->entries[i].path[len] == '\0')
                        return &d->entries[i];
        return NULL;
}

/* Depth-first, post-order: a module is queued after everything it needs, so
 * the result does not depend on the order depmod wrote the dependencies in. */
static int visit(struct moddep *d, struct moddep_entry *e, const char **order, size_t max,
                 size_t *n, unsigned depth)
{
        if (e->state == QUEUED)
                return 0;
        if (e->state == VISITING || depth > MODDEP_MAX_DEPTH)
                return -ELOOP;
        e->state = VISITING;
        for (const char *p = e->deps; *p != '\0';) {
                while (*p == ' ' || *p == '\t')
                        p++;
                size_t len = strcspn(p, " \t");
                if (len == 0)
                        break;
                struct moddep_entry *dep = find_by_path(d, p, len);
                if (dep == NULL)
                        return -ENOENT;
                int r = visit(d, dep, order, max, n, depth + 1);
                if (r < 0)
                        return r;
                p += len;
        }
        if (*n == max)
                return -ENOSPC;
        order[(*n)++] = e->path;
        e->state = QUEUED;
        return 0;
}

int moddep_add(struct moddep *d, const char *name, const char **order, size_t max, size_t *n)
{
        char canon[64];

        if (module_name_of(name, canon, sizeof(canon)) < 0)
                return -EINVAL;
        struct moddep_entry *e = find_by_name(d, canon);
        if (e == NULL)
                return -ENOENT;
        int r = visit(d, e, order, max, n, 0);
        if (r < 0) {
                /* Leave no half-visited entries behind for the next call. */
                for (size_t i = 0; i < d->n; i++)
                        if (d->entries[i].state == VISITING)
                                d->entries[i].state = UNVISITED;
        }
        return r;
}
