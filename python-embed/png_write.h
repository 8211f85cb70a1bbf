/* PNG encoding of an 8-bit RGBA image with libpng, tuned for speed (figures). */
#ifndef CELLVM_PNG_WRITE_H
#define CELLVM_PNG_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Largest width or height accepted (libpng's own user limit is 1e6). */
#define PNG_WRITE_MAX_SIDE 100000u

/*
 * Appends the PNG of `rgba` (`height` rows of `width` straight-alpha RGBA
 * pixels, no padding) to `out`. With `dpi` > 0 a pHYs chunk carries it in
 * pixels per metre, rounded as Pillow does for matplotlib's savefig. Uses zlib
 * level 1 and the Up filter. Calls no Python: safe without the GIL.
 * Returns 0, -EINVAL (bad size) or -ENOMEM / -EIO (libpng failure).
 */
int png_write_rgba(const uint8_t *rgba, uint32_t width, uint32_t height, double dpi,
                   struct cv_buf *out);

#endif
