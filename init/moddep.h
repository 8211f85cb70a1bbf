/* modules.dep: which .ko files a module needs, and the order to load them.
 * Pure data handling (no syscalls) so the ordering is unit-testable. */
#ifndef CELLVM_INIT_MODDEP_H
#define CELLVM_INIT_MODDEP_H

#include <stddef.h>

#define MODDEP_MAX_DEPTH 64

struct moddep_entry {
        const char *path; /* relative to /lib/modules/<release>/ */
        char name[64];    /* module name: basename without .ko*, '-' as '_' */
        const char *deps; /* space-separated paths, as written in modules.dep */
        unsigned char state;
};

struct moddep {
        char *text; /* owned copy of the file, split in place */
        struct moddep_entry *entries;
        size_t n;
};

/* Parses the text of modules.dep; takes ownership of text (malloc'd). */
int moddep_parse(struct moddep *d, char *text);
void moddep_free(struct moddep *d);

/* Writes the canonical module name of a path or name ("virtio-blk",
 * "kernel/drivers/block/virtio_blk.ko.xz" -> "virtio_blk"). */
int module_name_of(const char *path_or_name, char *out, size_t outsz);

/* Appends to order[] the paths needed for module `name`, dependencies first,
 * each path once across calls on the same moddep. Returns 0, -ENOENT when
 * `name` (or one of its dependencies) is not in modules.dep, -ELOOP on a
 * dependency cycle, -ENOSPC when order[] is full. */
int moddep_add(struct moddep *d, const char *name, const char **order, size_t max, size_t *n);

#endif
