/*
 * The tsc_early_khz=N word of a launch's kernel command line, which a
 * template's name and its fit treat apart: the host's TSC frequency is
 * measured anew per host boot and varies by a few kHz, and a clone's kernel
 * keeps its template's calibration whatever its command line says
 * (docs/SNAPSHOTS.md).
 */
#ifndef CELLVM_CLIENT_TSC_WORD_H
#define CELLVM_CLIENT_TSC_WORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Farther apart than this, a template's frequency does not fit this host's. */
#define CTSC_TOLERANCE_PPM 100

/* `in` with each word (between spaces or tabs) tsc_early_khz=<digits> as
 * tsc_early_khz=host: malloc'd, or NULL (out of memory). */
char *ctsc_neutral(const char *in);
/* The value of the first such word of `s`: whether there is one. */
bool ctsc_khz_of(const char *s, uint64_t *khz);
/* Why the words of two command lines equal but for their values (ctsc_neutral)
 * do not fit, into `out` (1), or 0 when they do (none, or within
 * CTSC_TOLERANCE_PPM). */
int ctsc_mismatch(const char *have, const char *want, char *out, size_t outlen);

#endif
