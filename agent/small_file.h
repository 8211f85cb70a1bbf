/* Reading a small file whole (/proc, cgroup files) into a caller's buffer (small_file.c). */
#ifndef CELLVM_AGENT_SMALL_FILE_H
#define CELLVM_AGENT_SMALL_FILE_H

#include <stddef.h>

/* At most size-1 bytes of `path` into `out`, NUL-terminated: the bytes read,
 * or -errno. A longer file is cut at the bound. */
int small_file_read(const char *path, char *out, size_t size);

#endif
