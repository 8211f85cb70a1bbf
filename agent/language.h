/* The languages a context can run (language.c): canonical names and their aliases. */
#ifndef CELLVM_AGENT_LANGUAGE_H
#define CELLVM_AGENT_LANGUAGE_H

#include <stddef.h>

/* The canonical name of language or alias `s` (case-insensitive), or NULL if unknown. */
const char *language_canonical(const char *s, size_t n);
/* The known names and aliases, as text for an error message. */
void language_names(char *out, size_t size);

#endif
