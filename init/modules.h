/* Loads the kernel modules the image lists (/etc/cellvm/modules, one name a
 * line) with finit_module, dependencies first (modules.dep), passing the
 * <module>.<param>=<value> options of the kernel command line. */
#ifndef CELLVM_INIT_MODULES_H
#define CELLVM_INIT_MODULES_H

#include <stddef.h>

#define MODULES_LIST "/etc/cellvm/modules"

/* Builds "p1=v1 p2=\"v 2\"" for module `name` from cmdline. */
int module_params(const char *cmdline, const char *name, char *out, size_t outsz);
/* Returns the number of modules loaded, 0 when there is no list or no
 * /lib/modules/$(uname -r) (drivers built in), or a
 * negative errno (the first failure; every failure is logged). */
int modules_load_listed(const char *list_path, const char *cmdline);

#endif
