#include "uuid.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>

int uuid4_text(char out[UUID_TEXT_LEN + 1])
{
        uint8_t b[16];
        size_t got = 0;
        while (got < sizeof(b)) {
                ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)n;
        }
        b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
        b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
        snprintf(out, UUID_TEXT_LEN + 1,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                 b[15]);
        return 0;
}
