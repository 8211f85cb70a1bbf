/*
 * A streaming multipart/form-data reader (RFC 7578) for /files uploads: the
 * body is fed in pieces as it arrives and each part's data is handed on
 * without being kept whole. Part headers are bounded (MP_HEADER_MAX), as are
 * the number of parts; a filename is kept raw, directories and all (E2B's
 * envd writes to the part's filename when the query has no path).
 */
#ifndef CELLVM_CLIENT_SERVE_MULTIPART_H
#define CELLVM_CLIENT_SERVE_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#define MP_BOUNDARY_MAX 70 /* RFC 2046 */
#define MP_HEADER_MAX 8192 /* one part's headers */
#define MP_MAX_PARTS 1000
#define MP_NAME_MAX 4096

struct mp_callbacks {
        /* A part starts: its form name and filename ("" when absent). */
        int (*begin)(void *ud, const char *name, const char *filename);
        int (*data)(void *ud, const char *p, size_t len);
        int (*end)(void *ud);
        void *ud;
};

struct mp {
        char delim[MP_BOUNDARY_MAX + 5]; /* "\r\n--" boundary */
        size_t dlen;
        int state;
        char *buf; /* bytes not yet decided on */
        size_t len, cap;
        unsigned parts;
        struct mp_callbacks cb;
        char why[160];
};

/* From a Content-Type header's boundary parameter. 0 or -EINVAL (m->why). */
int mp_init(struct mp *m, const char *content_type, const struct mp_callbacks *cb);
/* The next piece of the body. 0, -EINVAL (malformed: m->why), -ENOMEM, or a
 * callback's negative return. */
int mp_feed(struct mp *m, const char *p, size_t len);
/* The body ended: 0 if the closing delimiter was seen, else -EINVAL. */
int mp_finish(struct mp *m);
void mp_free(struct mp *m);

#endif
