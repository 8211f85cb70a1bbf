/* envd's own wording of the agent's files-service errors (serve_envd_words.c). */
#ifndef CELLVM_CLIENT_SERVE_ENVD_WORDS_H
#define CELLVM_CLIENT_SERVE_ENVD_WORDS_H

#include <stdbool.h>
#include <stddef.h>

/* The agent's "<op> <path>: <strerror> (<ERRNO>)" (docs/PROTOCOL.md 9) in
 * envd's words, into out (NUL-terminated, cut to size): true if E2B's envd
 * words that (op, errno) itself, else false and out untouched. The same table
 * as client/python/cellvm/exceptions.py _E2B_FILE_MESSAGES. */
bool envd_words(const char *msg, size_t len, char *out, size_t size);

#endif
