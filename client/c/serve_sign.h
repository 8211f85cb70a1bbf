/* Signed /files URLs, as E2B's envd checks them: `signature` is "v1_" and
 * the unpadded base64 of SHA-256("<path>:<read|write>:<user>:<token>" plus
 * ":<expiration>" when one is given), `signature_expiration` unix seconds. */
#ifndef CELLVM_CLIENT_SERVE_SIGN_H
#define CELLVM_CLIENT_SERVE_SIGN_H

#include <stddef.h>

#include "serve.h"

/* 0 when `signature` signs the request with `s`'s token and has not expired;
 * a negative errno with `why` set otherwise. NULL arguments are absent ones. */
int serve_check_signature(const struct sandbox *s, const char *path, const char *op,
                          const char *user, const char *signature, const char *expiration,
                          char *why, size_t whylen);
/* The live sandbox whose token made the signature (referenced), or NULL. */
struct sandbox *serve_find_signed(const char *path, const char *op, const char *user,
                                  const char *signature, const char *expiration, char *why,
                                  size_t whylen);

#endif
