/* cellvm mcp's tools: their schemas and descriptions (what the model reads
 * to use them), argument checks, and write_file, read_file, list_files and
 * run_command over the files and commands services of the session's
 * sandbox (run_code: mcp_run_code.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "cbor_util.h"
#include "mcp.h"
#include "mcp_content.h"
#include "msgtypes.h"
#include "serve_http.h"

#define FILE_PIECE (256u << 10) /* FILE_DATA messages of at most this much */
#define FILE_WAIT_MS 120000     /* for a file request's next message */
#define GRACE_MS 30000          /* a command's wait past its timeout */

/* The schemas as the model sees them (JSON Schema, draft 2020-12 subset). */
static const char tools_json[] =
    "["
    "{\"name\":\"run_code\",\"title\":\"Run code\","
    "\"description\":\"Run code in a Jupyter-like kernel in this session's own Linux sandbox "
    "(Debian, Python 3 with pandas, numpy, matplotlib). State persists between calls: "
    "variables, imports and files stay. Returns stdout, stderr, the value of the last "
    "expression and every matplotlib figure as a PNG image. An exception returns "
    "isError with its name, value and traceback: fix the code and call again. "
    "Files live under /home/user (the working directory).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"code\":{\"type\":\"string\",\"description\":\"The code to run.\"},"
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"typescript\","
    "\"bash\"],\"description\":\"The kernel: python (default), javascript, typescript or "
    "bash; each language keeps its own state.\"},"
    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":3600,"
    "\"description\":\"Seconds before the cell is interrupted (default 30).\"}},"
    "\"required\":[\"code\"],\"additionalProperties\":false}},"

    "{\"name\":\"write_file\",\"title\":\"Write a file\","
    "\"description\":\"Create or replace a file in the sandbox, with its parent "
    "directories. Give `content` for text or `content_base64` for binary data, not both. "
    "Relative paths are under /home/user.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"Where to write, e.g. data/sales.csv.\"},"
    "\"content\":{\"type\":\"string\",\"description\":\"The file's text (UTF-8).\"},"
    "\"content_base64\":{\"type\":\"string\",\"contentEncoding\":\"base64\","
    "\"description\":\"The file's bytes, base64-encoded.\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false}},"

    "{\"name\":\"read_file\",\"title\":\"Read a file\","
    "\"description\":\"Read a file of the sandbox: its text, or the image itself for PNG, "
    "JPEG, GIF and WebP files; other binary files come back base64-encoded. Relative paths "
    "are under /home/user.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"The file to read.\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false}},"

    "{\"name\":\"list_files\",\"title\":\"List a directory\","
    "\"description\":\"List a directory of the sandbox: one entry a line with its type, "
    "size in bytes and name (directories end with /).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"The directory (default /home/user).\"}},"
    "\"additionalProperties\":false}},"

    "{\"name\":\"run_command\",\"title\":\"Run a shell command\","
    "\"description\":\"Run a bash command line in the sandbox as the user `user`, in "
    "/home/user, and wait for it. Returns stdout, stderr and the exit code; a non-zero exit "
    "or a timeout returns isError. Use it to install packages (pip install), inspect files "
    "or run programs.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"type\":\"string\",\"description\":\"The command line, run by bash -l -c.\"},"
    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":3600,"
    "\"description\":\"Seconds before the command is killed (default 30).\"}},"
    "\"required\":[\"command\"],\"additionalProperties\":false}}"
    "]";

json_t *mcp_tools_list(void)
{
        json_error_t e;
        return json_loads(tools_json, 0, &e);
}

/* --- arguments ------------------------------------------------------------ */

struct args {
        json_t *obj;
        const char *tool;
        char why[512];
};

/* A string argument: true with *out (NULL when absent and optional), false
 * with `why` set. */
static bool arg_string(struct args *a, const char *key, bool required, const char **out)
{
        json_t *v = json_object_get(a->obj, key);
        *out = NULL;
        if (!v || json_is_null(v)) {
                if (required)
                        snprintf(a->why, sizeof(a->why),
                                 "%s: the argument `%s` (a string) is required", a->tool, key);
                return !required;
        }
        if (!json_is_string(v)) {
                snprintf(a->why, sizeof(a->why), "%s: `%s` must be a string", a->tool, key);
                return false;
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
                snprintf(a->why, sizeof(a->why), "%s: `%s` must not contain NUL characters",
                         a->tool, key);
                return false;
        }
        *out = json_string_value(v);
        return true;
}

static bool arg_timeout(struct args *a, unsigned *out)
{
        json_t *v = json_object_get(a->obj, "timeout");
        *out = MCP_DEFAULT_TIMEOUT_S;
        if (!v || json_is_null(v))
                return true;
        double t = json_is_number(v) ? json_number_value(v) : -1;
        if (!(t > 0 && t <= MCP_MAX_TIMEOUT_S)) {
                snprintf(a->why, sizeof(a->why),
                         "%s: `timeout` must be a number of seconds, more than 0 and at most %d",
                         a->tool, MCP_MAX_TIMEOUT_S);
                return false;
        }
        *out = t < 1 ? 1 : (unsigned)(t + 0.5);
        return true;
}

/* Refuses arguments the schema does not name (additionalProperties: false). */
static bool only(struct args *a, const char *const *known)
{
        const char *k;
        json_t *v;
        json_object_foreach(a->obj, k, v)
        {
                size_t i = 0;
                while (known[i] && strcmp(known[i], k) != 0)
                        i++;
                if (!known[i]) {
                        snprintf(a->why, sizeof(a->why), "%s: unknown argument `%.100s`", a->tool,
                                 k);
                        return false;
                }
        }
        return true;
}

/* An agent ERROR as the tool's error. */
static json_t *agent_error(const char *what, const struct cvc_event *ev)
{
        return mcp_tool_error("%s: %.*s (%.*s)", what, (int)ev->u.fail.message_len,
                              ev->u.fail.message, (int)ev->u.fail.code_len, ev->u.fail.code);
}

static json_t *gone(int rc)
{
        return mcp_tool_error("the sandbox's agent did not answer (%s); if the sandbox ended, the "
                              "next call starts a new one",
                              strerror(-rc));
}

/* The session of the call in progress on this thread: its agent requests
 * are tracked for cancellation (set by mcp_tools_call). */
static __thread struct mcp_session *calling;

int mcp_request_open(struct sandbox *s, uint16_t type, struct cv_buf *b, struct mux_req **r)
{
        int rc = mux_open(&s->mux, r);
        if (rc == 0 && (rc = mux_send_buf(*r, type, b)) < 0)
                mux_close_req(*r);
        if (rc == 0 && calling)
                mcp_session_track(calling, (*r)->id);
        return rc;
}

/* Opens request `type` with `b` as its body (freed). */
static int start(struct sandbox *s, uint16_t type, struct cv_buf *b, struct mux_req **r)
{
        int rc = mcp_request_open(s, type, b, r);
        cv_buf_free(b);
        return rc;
}

/* --- files ---------------------------------------------------------------- */

/* A file request's body: {path, user: "user"} and `more` pairs the caller adds. */
static void enc_path(struct cv_buf *b, const char *path, size_t more)
{
        cv_buf_init(b);
        cv_enc_map(b, 2 + more);
        cv_enc_cstr(b, "path");
        cv_enc_cstr(b, path);
        cv_enc_cstr(b, "user");
        cv_enc_cstr(b, "user");
}

static json_t *write_file(struct sandbox *s, const char *path, const unsigned char *data, size_t n)
{
        struct cv_buf b;
        enc_path(&b, path, 0);
        struct mux_req *r;
        int rc = start(s, CV_MSG_FILE_WRITE, &b, &r);
        if (rc < 0)
                return gone(rc);
        size_t off = 0;
        do {
                size_t take = n - off < FILE_PIECE ? n - off : FILE_PIECE;
                bool eof = off + take == n;
                cv_buf_init(&b);
                cv_enc_map(&b, eof ? 2 : 1);
                cv_enc_cstr(&b, "data");
                cv_enc_bytes(&b, data + off, take);
                if (eof) {
                        cv_enc_cstr(&b, "eof");
                        cv_enc_bool(&b, true);
                }
                rc = mux_send_buf(r, CV_MSG_FILE_DATA, &b);
                cv_buf_free(&b);
                off += take;
        } while (rc == 0 && off < n);
        struct cvc_event ev;
        int got = rc < 0 ? rc : mux_next(r, FILE_WAIT_MS, &ev);
        mux_close_req(r);
        if (got <= 0)
                return gone(got ? got : -ETIMEDOUT);
        json_t *res;
        const char *abs;
        size_t al;
        if (ev.type == CV_MSG_ERROR)
                res = agent_error("write_file", &ev);
        else if (cv_map_get_str(ev.root, "path", &abs, &al) == 0) {
                char msg[600];
                snprintf(msg, sizeof(msg), "wrote %zu bytes to %.*s", n, (int)al, abs);
                json_t *content = json_array();
                (void)mcp_add_string(content, msg);
                res = mcp_tool_result(content, false);
        } else
                res = mcp_tool_error("write_file: the agent's answer had no path");
        cvc_event_free(&ev);
        return res;
}

static bool has_suffix(const char *path, const char *suffix)
{
        size_t pl = strlen(path), sl = strlen(suffix);
        return pl >= sl && strcasecmp(path + pl - sl, suffix) == 0;
}

static const char *image_mime(const char *path)
{
        if (has_suffix(path, ".png"))
                return "image/png";
        if (has_suffix(path, ".jpg") || has_suffix(path, ".jpeg"))
                return "image/jpeg";
        if (has_suffix(path, ".gif"))
                return "image/gif";
        if (has_suffix(path, ".webp"))
                return "image/webp";
        return NULL;
}

static json_t *read_file(struct sandbox *s, const char *path)
{
        struct cv_buf b;
        enc_path(&b, path, 0);
        struct mux_req *r;
        int rc = start(s, CV_MSG_FILE_READ, &b, &r);
        if (rc < 0)
                return gone(rc);
        struct mcp_text data = {.max = MCP_READ_MAX};
        json_t *res = NULL;
        for (;;) {
                struct cvc_event ev;
                int got = mux_next(r, FILE_WAIT_MS, &ev);
                if (got <= 0) {
                        res = gone(got ? got : -ETIMEDOUT);
                        break;
                }
                const uint8_t *p;
                size_t n;
                if (ev.type == CV_MSG_FILE_CHUNK && cv_map_get_bytes(ev.root, "data", &p, &n) == 0)
                        (void)mcp_text_add(&data, p, n);
                if (ev.type == CV_MSG_ERROR)
                        res = agent_error("read_file", &ev);
                bool end = cv_msg_is_terminal(ev.type);
                cvc_event_free(&ev);
                if (end)
                        break;
                if (data.cut) { /* past the bound: no need for the rest */
                        serve_cancel(s, r->id);
                        break;
                }
        }
        mux_close_req(r);
        if (res) {
                mcp_text_free(&data);
                return res;
        }
        json_t *content = json_array();
        const char *mime = image_mime(path);
        char note[200];
        if (mime && !data.cut && data.len <= MCP_IMAGE_MAX) {
                (void)mcp_add_image(content, mime, data.buf ? data.buf : "", data.len, false);
        } else if (data.len == 0 && !data.cut) {
                (void)mcp_add_string(content, "(empty file)");
        } else if (mcp_is_utf8(data.buf, data.len, data.cut > 0)) {
                data.max = MCP_OUTPUT_MAX * 4; /* the text returned: less than what is read */
                if (data.len > data.max) {
                        data.cut += data.len - data.max;
                        data.len = data.max;
                }
                (void)mcp_add_text(content, NULL, &data);
        } else {
                size_t n = data.len > MCP_OUTPUT_MAX * 4 ? MCP_OUTPUT_MAX * 4 : data.len;
                char *b64 = base64_encode((const unsigned char *)data.buf, n);
                snprintf(note, sizeof(note),
                         "binary file (not UTF-8 text), %s%zu bytes; base64%s:\n",
                         data.cut ? "more than " : "", data.len + data.cut,
                         n < data.len ? " of the first bytes" : "");
                struct mcp_text t = {.max = (MCP_OUTPUT_MAX * 6) + 1};
                (void)mcp_text_add(&t, note, strlen(note));
                if (b64)
                        (void)mcp_text_add(&t, b64, strlen(b64));
                free(b64);
                (void)mcp_add_text(content, NULL, &t);
                mcp_text_free(&t);
        }
        mcp_text_free(&data);
        return mcp_tool_result(content, false);
}

static json_t *list_files(struct sandbox *s, const char *path)
{
        struct cv_buf b;
        enc_path(&b, path, 1);
        cv_enc_cstr(&b, "depth");
        cv_enc_uint(&b, 1);
        cbor_item_t *reply = NULL, *entries = NULL;
        char err[600];
        int rc = mux_call(&s->mux, CV_MSG_FILE_LIST, &b, FILE_WAIT_MS, &reply, err, sizeof(err));
        cv_buf_free(&b);
        if (rc == -EREMOTEIO)
                return mcp_tool_error("list_files: %s", err);
        if (rc < 0)
                return gone(rc);
        if (cv_map_get_array(reply, "entries", &entries) < 0) {
                cbor_decref(&reply);
                return mcp_tool_error("list_files: the agent's answer had no entries");
        }
        struct mcp_text t = {.max = MCP_OUTPUT_MAX * 4};
        size_t total = cbor_array_size(entries);
        for (size_t i = 0; i < total && i < MCP_LIST_MAX; i++) {
                cbor_item_t *e = cbor_array_handle(entries)[i];
                const char *name, *type;
                size_t nl, tl;
                uint64_t size = 0;
                if (cv_map_get_str(e, "name", &name, &nl) < 0 ||
                    cv_map_get_str(e, "type", &type, &tl) < 0)
                        continue;
                (void)cv_map_get_uint(e, "size", &size);
                bool dir = tl == 3 && memcmp(type, "dir", 3) == 0;
                char line[64];
                snprintf(line, sizeof(line), "%-5.*s %12llu  ", (int)tl, type,
                         (unsigned long long)size);
                (void)mcp_text_add(&t, line, strlen(line));
                (void)mcp_text_add(&t, name, nl);
                (void)mcp_text_add(&t, dir ? "/\n" : "\n", dir ? 2 : 1);
        }
        if (total > MCP_LIST_MAX) {
                char more[100];
                snprintf(more, sizeof(more), "[cellvm: %zu more entries not shown]\n",
                         total - MCP_LIST_MAX);
                (void)mcp_text_add(&t, more, strlen(more));
        }
        if (total == 0)
                (void)mcp_text_add(&t, "(empty directory)", 17);
        cbor_decref(&reply);
        json_t *content = json_array();
        (void)mcp_add_text(content, NULL, &t);
        mcp_text_free(&t);
        return mcp_tool_result(content, false);
}

/* --- commands ------------------------------------------------------------- */

static json_t *run_command(struct sandbox *s, const char *command, unsigned timeout_s)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 3);
        cv_enc_cstr(&b, "cmd");
        cv_enc_cstr(&b, command);
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, "timeout_ms");
        cv_enc_uint(&b, (uint64_t)timeout_s * 1000);
        struct mux_req *r;
        int rc = start(s, CV_MSG_CMD_START, &b, &r);
        if (rc < 0)
                return gone(rc);
        struct mcp_text out = {.max = MCP_OUTPUT_MAX}, err = {.max = MCP_OUTPUT_MAX};
        int64_t exit_code = 0;
        char fail[600] = "";
        bool timed_out = false;
        for (;;) {
                struct cvc_event ev;
                int got = mux_next(r, (int)timeout_s * 1000 + GRACE_MS, &ev);
                if (got <= 0) {
                        if (got == 0)
                                serve_cancel(s, r->id);
                        snprintf(fail, sizeof(fail), "the command did not end: %s",
                                 strerror(got ? -got : ETIMEDOUT));
                        break;
                }
                const uint8_t *p;
                size_t n;
                const char *stream;
                size_t sl;
                if (ev.type == CV_MSG_CMD_OUTPUT &&
                    cv_map_get_bytes(ev.root, "data", &p, &n) == 0 &&
                    cv_map_get_str(ev.root, "stream", &stream, &sl) == 0)
                        (void)mcp_text_add(
                            sl == 6 && memcmp(stream, "stderr", 6) == 0 ? &err : &out, p, n);
                if (ev.type == CV_MSG_OK && cv_map_get_int(ev.root, "exit_code", &exit_code) < 0)
                        snprintf(fail, sizeof(fail), "the agent's answer had no exit code");
                if (ev.type == CV_MSG_ERROR) {
                        if (ev.u.fail.code_len == 7 && memcmp(ev.u.fail.code, "timeout", 7) == 0)
                                timed_out = true;
                        else
                                snprintf(fail, sizeof(fail), "run_command: %.*s (%.*s)",
                                         (int)ev.u.fail.message_len, ev.u.fail.message,
                                         (int)ev.u.fail.code_len, ev.u.fail.code);
                }
                bool end = cv_msg_is_terminal(ev.type);
                cvc_event_free(&ev);
                if (end)
                        break;
        }
        mux_close_req(r);
        json_t *content = json_array();
        if (out.len || out.cut)
                (void)mcp_add_text(content, "stdout:\n", &out);
        if (err.len || err.cut)
                (void)mcp_add_text(content, "stderr:\n", &err);
        char status[sizeof(fail)];
        if (timed_out)
                snprintf(status, sizeof(status),
                         "timeout: the command ran past %u s and was killed (pass a larger "
                         "`timeout`, at most %d s)",
                         timeout_s, MCP_MAX_TIMEOUT_S);
        else if (fail[0])
                snprintf(status, sizeof(status), "%s", fail);
        else
                snprintf(status, sizeof(status), "exit code: %lld", (long long)exit_code);
        (void)mcp_add_string(content, status);
        mcp_text_free(&out);
        mcp_text_free(&err);
        return mcp_tool_result(content, timed_out || fail[0] || exit_code != 0);
}

/* --- dispatch ------------------------------------------------------------- */

static json_t *sandbox_failure(const char *err)
{
        return mcp_tool_error("no sandbox for this session: %s", err);
}

json_t *mcp_tools_call(struct mcp_session *s, const char *name, json_t *args, int *rpc_code,
                       char *err, size_t errlen)
{
        struct args a = {.obj = args, .tool = name};
        const char *code, *lang, *path, *text, *b64, *cmd;
        unsigned timeout = 0;
        enum { RUN_CODE, WRITE_FILE, READ_FILE, LIST_FILES, RUN_COMMAND } tool;
        static const char *const run_code_args[] = {"code", "language", "timeout", NULL};
        static const char *const write_args[] = {"path", "content", "content_base64", NULL};
        static const char *const path_args[] = {"path", NULL};
        static const char *const command_args[] = {"command", "timeout", NULL};
        bool ok;
        if (strcmp(name, "run_code") == 0) {
                tool = RUN_CODE;
                ok = only(&a, run_code_args) && arg_string(&a, "code", true, &code) &&
                     arg_string(&a, "language", false, &lang) && arg_timeout(&a, &timeout);
        } else if (strcmp(name, "write_file") == 0) {
                tool = WRITE_FILE;
                ok = only(&a, write_args) && arg_string(&a, "path", true, &path) &&
                     arg_string(&a, "content", false, &text) &&
                     arg_string(&a, "content_base64", false, &b64);
                if (ok && !text == !b64) {
                        snprintf(a.why, sizeof(a.why),
                                 "write_file: give exactly one of `content` and `content_base64`");
                        ok = false;
                }
        } else if (strcmp(name, "read_file") == 0) {
                tool = READ_FILE;
                ok = only(&a, path_args) && arg_string(&a, "path", true, &path);
        } else if (strcmp(name, "list_files") == 0) {
                tool = LIST_FILES;
                ok = only(&a, path_args) && arg_string(&a, "path", false, &path);
        } else if (strcmp(name, "run_command") == 0) {
                tool = RUN_COMMAND;
                ok = only(&a, command_args) && arg_string(&a, "command", true, &cmd) &&
                     arg_timeout(&a, &timeout);
        } else {
                *rpc_code = -32602;
                snprintf(err, errlen,
                         "Unknown tool: %.200s (tools: run_code, write_file, read_file, "
                         "list_files, run_command)",
                         name);
                return NULL;
        }
        if (!ok)
                return mcp_tool_error("%s", a.why);
        if ((tool == WRITE_FILE || tool == READ_FILE) && !path[0])
                return mcp_tool_error("%s: `path` must not be empty", name);
        unsigned char *bytes = NULL;
        size_t nbytes = 0;
        if (tool == WRITE_FILE && b64) {
                bytes = base64_decode(b64, strlen(b64), &nbytes);
                if (!bytes)
                        return mcp_tool_error("write_file: `content_base64` is not valid base64");
        }
        struct sandbox *sbx;
        char why[600];
        if (mcp_session_sandbox(s, timeout, &sbx, why, sizeof(why)) < 0) {
                free(bytes);
                return sandbox_failure(why);
        }
        json_t *res = NULL;
        calling = s;
        switch (tool) {
        case RUN_CODE:
                res = mcp_run_code(sbx, code, lang, timeout);
                break;
        case WRITE_FILE:
                res = bytes ? write_file(sbx, path, bytes, nbytes)
                            : write_file(sbx, path, (const unsigned char *)text, strlen(text));
                break;
        case READ_FILE:
                res = read_file(sbx, path);
                break;
        case LIST_FILES:
                res = list_files(sbx, path && path[0] ? path : "/home/user");
                break;
        case RUN_COMMAND:
                res = run_command(sbx, cmd, timeout);
                break;
        }
        calling = NULL;
        free(bytes);
        return res;
}
