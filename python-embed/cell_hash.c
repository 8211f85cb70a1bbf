/*
 * ipykernel names a cell's file after a hash of its source
 * (<tmp>/ipykernel_<pid>/<murmur2_x86(source)>.py), and that name shows in
 * warnings, logging's %(filename)s, inspect and pickling errors. The same
 * hash here gives the same names; in C because a cell runs it every time.
 */
#include "cell_hash.h"

uint32_t cell_hash_murmur2(const unsigned char *data, size_t len, uint32_t seed)
{
        const uint32_t m = 0x5BD1E995u;
        /* ipykernel hashes the UTF-8 bytes and mixes in their count mod 2^32. */
        uint32_t h = seed ^ (uint32_t)len;
        size_t rounded_end = len & ~(size_t)3;
        for (size_t i = 0; i < rounded_end; i += 4) {
                uint32_t k = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 |
                             (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24;
                k *= m;
                k ^= k >> 24;
                k *= m;
                h *= m;
                h ^= k;
        }
        uint32_t k = 0;
        switch (len & 3) {
        case 3:
                k = (uint32_t)data[rounded_end + 2] << 16;
                /* fall through */
        case 2:
                k |= (uint32_t)data[rounded_end + 1] << 8;
                /* fall through */
        case 1:
                k |= data[rounded_end];
                h ^= k;
                h *= m;
                break;
        default:
                break;
        }
        h ^= h >> 13;
        h *= m;
        h ^= h >> 15;
        return h;
}
