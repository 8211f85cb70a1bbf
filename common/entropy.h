/* Seeds the kernel's CRNG so getrandom() does not block or start predictable
 * in a freshly cloned VM: cellvm-init from cellvm.entropy=<hex>, cellvm-agent
 * from the host's ADD_ENTROPY. */
#ifndef CELLVM_COMMON_ENTROPY_H
#define CELLVM_COMMON_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

#define ENTROPY_MAX_BYTES 512

int hex_decode(const char *hex, uint8_t *out, size_t outsz, size_t *outlen);
/* Credits the bytes to the pool (RNDADDENTROPY) and forces a reseed
 * (RNDRESEEDCRNG). Needs CAP_SYS_ADMIN. Returns the number of bytes. */
int entropy_seed_hex(const char *hex);

/* The same for raw bytes (1 to ENTROPY_MAX_BYTES): the agent uses it for a
 * seed the host sends later. Returns the bytes credited or a negative errno. */
int entropy_seed(const uint8_t *seed, size_t len);

#endif
