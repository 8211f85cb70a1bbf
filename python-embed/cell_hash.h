/* The number ipykernel names a cell's file by (ipykernel/compiler.py). */
#ifndef CELLVM_CELL_HASH_H
#define CELLVM_CELL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* MurmurHash2, x86 32-bit, of `len` bytes with `seed`, as ipykernel's murmur2_x86. */
uint32_t cell_hash_murmur2(const unsigned char *data, size_t len, uint32_t seed);

/* ipykernel's get_tmp_hash_seed(). */
#define CELL_HASH_SEED 0xC70F6907u

#endif
