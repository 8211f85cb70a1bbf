/*
 * Unit tests of client/c/fs_snapshot.c against a scripted agent (a fake
 * cfs_link that answers each request with prepared messages, decoded by the
 * real cvc_event_decode): what the host asks (the tool through CMD_START's
 * `system`, the archive's path as root), what it does with what comes back
 * (the archive's bytes, the tool's stderr in the error, an ERROR, silence),
 * and that a guest sending more than the bound is refused. The real tool in
 * a real guest: tests/test_serve_pause.py and tests/test_cli_pause.py.
 */
#include "../../client/c/fs_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "check.h"
#include "msgtypes.h"

#define MAX_REPLIES 8

/* One scripted reply: a message type and its CBOR body. */
struct reply {
        uint16_t type;
        struct cv_buf body;
};

/* What the fake agent answers to the next requests, in order, and what it saw. */
static struct {
        struct reply replies[4][MAX_REPLIES]; /* per request */
        size_t nreplies[4], at[4];
        size_t nreq;       /* requests begun */
        uint16_t types[4]; /* their types */
        char first_body[4][512];
        size_t first_len[4];
        struct cv_buf uploaded; /* FILE_DATA bytes */
        bool eof;
        bool silent; /* next() times out */
} fake;

static void reset(void)
{
        for (size_t r = 0; r < 4; r++)
                for (size_t i = 0; i < fake.nreplies[r]; i++)
                        cv_buf_free(&fake.replies[r][i].body);
        cv_buf_free(&fake.uploaded);
        memset(&fake, 0, sizeof(fake));
        cv_buf_init(&fake.uploaded);
}

static struct cv_buf *add(size_t req, uint16_t type)
{
        struct reply *r = &fake.replies[req][fake.nreplies[req]++];
        r->type = type;
        cv_buf_init(&r->body);
        return &r->body;
}

static void add_ok_exit(size_t req, int code)
{
        struct cv_buf *b = add(req, CV_MSG_CMD_STARTED);
        cv_enc_map(b, 1);
        cv_enc_cstr(b, "pid");
        cv_enc_uint(b, 42);
        b = add(req, CV_MSG_OK);
        cv_enc_map(b, 1);
        cv_enc_cstr(b, "exit_code");
        cv_enc_int(b, code);
}

static void add_output(size_t req, uint16_t type, const char *stream, const char *data)
{
        struct cv_buf *b = add(req, type);
        cv_enc_map(b, stream ? 2 : 1);
        if (stream) {
                cv_enc_cstr(b, "stream");
                cv_enc_cstr(b, stream);
        }
        cv_enc_cstr(b, "data");
        cv_enc_bytes(b, data, strlen(data));
}

static void add_ok(size_t req)
{
        struct cv_buf *b = add(req, CV_MSG_OK);
        cv_enc_map(b, 0);
}

static int f_begin(void *ud, uint16_t type, struct cv_buf *body, void **req)
{
        (void)ud;
        if (fake.nreq >= 4)
                return -EPROTO;
        size_t n = cv_buf_pending(body) < 512 ? cv_buf_pending(body) : 512;
        memcpy(fake.first_body[fake.nreq], cv_buf_head(body), n);
        fake.first_len[fake.nreq] = n;
        fake.types[fake.nreq] = type;
        *req = (void *)(uintptr_t)(fake.nreq++ + 1);
        return 0;
}

static int f_more(void *req, uint16_t type, struct cv_buf *body)
{
        (void)req;
        cbor_item_t *item = NULL;
        struct cbor_load_result res;
        item = cbor_load(cv_buf_head(body), cv_buf_pending(body), &res);
        const uint8_t *p;
        size_t n;
        bool eof = false;
        if (type == CV_MSG_FILE_DATA && item && cv_map_get_bytes(item, "data", &p, &n) == 0)
                cv_buf_append(&fake.uploaded, p, n);
        if (item && cv_map_get_bool(item, "eof", &eof) == 0 && eof)
                fake.eof = true;
        if (item)
                cbor_decref(&item);
        return 0;
}

static int f_next(void *req, int timeout_ms, struct cvc_event *ev)
{
        (void)timeout_ms;
        size_t r = (size_t)(uintptr_t)req - 1;
        if (fake.silent || fake.at[r] >= fake.nreplies[r])
                return 0;
        struct reply *x = &fake.replies[r][fake.at[r]++];
        int rc = cvc_event_decode(x->type, (uint32_t)r, cv_buf_head(&x->body),
                                  cv_buf_pending(&x->body), ev);
        return rc < 0 ? rc : 1;
}

static void f_end(void *req)
{
        (void)req;
}

static const struct cfs_link fake_link = {
    .ud = NULL, .begin = f_begin, .more = f_more, .next = f_next, .end = f_end};

/* The text `t` appears in request `r`'s first message (CBOR text is its bytes). */
static bool sent(size_t r, const char *t)
{
        return memmem(fake.first_body[r], fake.first_len[r], t, strlen(t)) != NULL;
}

static char tmpdir[] = "/tmp/cellvm-test-fs-XXXXXX";

static void read_back(const char *path, char *out, size_t outlen)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, out, outlen - 1) : -1;
        out[n > 0 ? n : 0] = '\0';
        if (fd >= 0)
                close(fd);
}

static void test_pack(void)
{
        char path[128], err[512], got[64];
        snprintf(path, sizeof(path), "%s/a.tar", tmpdir);
        reset();
        add_ok_exit(0, 0);
        add_output(1, CV_MSG_FILE_CHUNK, NULL, "abc");
        add_output(1, CV_MSG_FILE_CHUNK, NULL, "def");
        add_ok(1);
        CHECK(cfs_pack(&fake_link, path, 1 << 20, err, sizeof(err)) == 0);
        CHECK(fake.nreq == 2 && fake.types[0] == CV_MSG_CMD_START &&
              fake.types[1] == CV_MSG_FILE_READ);
        CHECK(sent(0, "/usr/lib/cellvm/fs-snapshot") && sent(0, "pack") && sent(0, "system") &&
              sent(0, "root") && sent(0, "/run/cellvm-rw/fs.tar"));
        CHECK(sent(1, "/run/cellvm-rw/fs.tar") && sent(1, "root"));
        read_back(path, got, sizeof(got));
        CHECK(strcmp(got, "abcdef") == 0);
        /* The file is new: an existing one is not overwritten. */
        reset();
        add_ok_exit(0, 0);
        CHECK(cfs_pack(&fake_link, path, 1 << 20, err, sizeof(err)) == -EEXIST);
        unlink(path);
}

static void test_pack_failures(void)
{
        char path[128], err[512];
        snprintf(path, sizeof(path), "%s/b.tar", tmpdir);
        /* The tool fails: its stderr is in the message, no file is made. */
        reset();
        add_output(0, CV_MSG_CMD_OUTPUT, "stdout", "noise");
        add_output(0, CV_MSG_CMD_OUTPUT, "stderr", "fs-snapshot: boom\n");
        add_ok_exit(0, 2);
        CHECK(cfs_pack(&fake_link, path, 1 << 20, err, sizeof(err)) == -EIO);
        CHECK(strstr(err, "exit status 2: fs-snapshot: boom") != NULL);
        CHECK(strstr(err, "noise") == NULL);
        CHECK(access(path, F_OK) != 0);
        /* An ERROR reply names its code and message. */
        reset();
        struct cv_buf *b = add(0, CV_MSG_ERROR);
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "code");
        cv_enc_cstr(b, "bad_request");
        cv_enc_cstr(b, "message");
        cv_enc_cstr(b, "`system` runs nothing else");
        CHECK(cfs_pack(&fake_link, path, 1 << 20, err, sizeof(err)) == -EREMOTEIO);
        CHECK(strstr(err, "bad_request: `system` runs nothing else") != NULL);
        /* Silence is a timeout. */
        reset();
        fake.silent = true;
        CHECK(cfs_pack(&fake_link, path, 1 << 20, err, sizeof(err)) == -ETIMEDOUT);
        /* A guest that sends more than the bound is refused mid-download. */
        reset();
        add_ok_exit(0, 0);
        add_output(1, CV_MSG_FILE_CHUNK, NULL, "0123456789");
        add_output(1, CV_MSG_FILE_CHUNK, NULL, "0123456789");
        add_ok(1);
        CHECK(cfs_pack(&fake_link, path, 15, err, sizeof(err)) == -EFBIG);
        CHECK(strstr(err, "more than the guest's memory holds") != NULL);
        unlink(path);
}

static void test_unpack(void)
{
        char path[128], err[512];
        snprintf(path, sizeof(path), "%s/c.tar", tmpdir);
        /* Larger than one piece: it goes in several FILE_DATA, then eof. */
        size_t size = (3u << 20) / 2;
        char *data = malloc(size);
        for (size_t i = 0; i < size; i++)
                data[i] = (char)(i * 7);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size);
        close(fd);
        reset();
        add_ok(0);
        add_ok_exit(1, 0);
        CHECK(cfs_unpack(&fake_link, path, err, sizeof(err)) == 0);
        CHECK(fake.nreq == 2 && fake.types[0] == CV_MSG_FILE_WRITE &&
              fake.types[1] == CV_MSG_CMD_START);
        CHECK(sent(0, "/run/cellvm-rw/fs.tar") && sent(1, "unpack") && sent(1, "system"));
        CHECK(fake.eof && cv_buf_pending(&fake.uploaded) == size &&
              memcmp(cv_buf_head(&fake.uploaded), data, size) == 0);
        /* A failed upload does not run the tool. */
        reset();
        struct cv_buf *b = add(0, CV_MSG_ERROR);
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "code");
        cv_enc_cstr(b, "io");
        cv_enc_cstr(b, "message");
        cv_enc_cstr(b, "no space");
        CHECK(cfs_unpack(&fake_link, path, err, sizeof(err)) == -EREMOTEIO && fake.nreq == 1);
        CHECK(cfs_unpack(&fake_link, "/nonexistent/x.tar", err, sizeof(err)) == -ENOENT);
        free(data);
        unlink(path);
}

int main(void)
{
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        test_pack();
        test_pack_failures();
        test_unpack();
        reset();
        rmdir(tmpdir);
        return check_report("test_client_fs_snapshot");
}
