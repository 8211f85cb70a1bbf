/* Random UUID4 text for context ids. */
#ifndef CELLVM_AGENT_UUID_H
#define CELLVM_AGENT_UUID_H

#define UUID_TEXT_LEN 36

/* Writes a random (version 4) UUID as 36 lowercase hex-and-dash characters plus NUL. Returns 0 or
 * -errno. */
int uuid4_text(char out[UUID_TEXT_LEN + 1]);

#endif
