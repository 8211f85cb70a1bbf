#include "entropy.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
/* The kernel header first: musl's <sys/ioctl.h> then keeps its _IO macros. */
#include <linux/random.h>
#include <sys/ioctl.h>

/* struct rand_pool_info with room for the seed (its buf[] is a flexible array). */
struct seed_pool {
        int entropy_count;
        int buf_size;
        uint32_t buf[ENTROPY_MAX_BYTES / 4];
};

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int hex_decode(const char *hex, uint8_t *out, size_t outsz, size_t *outlen)
{
        size_t len = strlen(hex);

        if (len % 2 != 0)
                return -EINVAL;
        if (len / 2 > outsz)
                return -E2BIG;
        for (size_t i = 0; i < len / 2; i++) {
                int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i] = (uint8_t)(hi << 4 | lo);
        }
        *outlen = len / 2;
        return 0;
}

int entropy_seed(const uint8_t *seed, size_t len)
{
        struct seed_pool pool;
        if (len == 0 || len > sizeof(pool.buf))
                return -EINVAL;
        memcpy(pool.buf, seed, len);
        pool.buf_size = (int)len;
        pool.entropy_count = (int)len * 8;
        int r;
        int fd = open("/dev/random", O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        if (ioctl(fd, RNDADDENTROPY, &pool) != 0 || ioctl(fd, RNDRESEEDCRNG) != 0)
                r = -errno;
        else
                r = (int)len;
        if (close(fd) != 0 && r >= 0)
                r = -errno;
out:
        /* The seed must not outlive its use in our memory. */
        explicit_bzero(&pool, sizeof(pool));
        return r;
}

int entropy_seed_hex(const char *hex)
{
        uint8_t seed[ENTROPY_MAX_BYTES];
        size_t len;
        int r = hex_decode(hex, seed, sizeof(seed), &len);
        if (r == 0)
                r = entropy_seed(seed, len);
        explicit_bzero(seed, sizeof(seed));
        return r;
}
