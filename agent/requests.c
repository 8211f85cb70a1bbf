/* Client requests (docs/PROTOCOL.md sections 3-4): validation and replies. */

#include "requests.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "cbor_util.h"
#include "commands.h"
#include "confine_agent.h"
#include "conn.h"
#include "context.h"
#include "egress.h"
#include "execution.h"
#include "file_transfer.h"
#include "files.h"
#include "frame.h"
#include "fswatch.h"
#include "generation.h"
#include "language.h"
#include "listen.h"
#include "log.h"
#include "msgtypes.h"
#include "ports.h"
#include "stats.h"
#include "svc.h"
#include "system.h"
#include "writer.h"

static const char *const capabilities[] = {"execute", "contexts", "interrupt", "cancel", "chunking",
                                           "files",   "commands", "system",    "ports",  "egress"};

static void reply_ok_empty(struct conn *c, uint32_t id)
{
        int rc = cv_out_msg(&c->out, CV_MSG_OK, 0, id, NULL, 0);
        if (rc < 0)
                log_error("conn %u: id %u: queueing OK: %s", c->num, id, strerror(-rc));
        conn_touch(c);
}

/* Ends a reply encoded since `mark`; on failure answers `internal` instead. */
static void reply_end(struct agent *a, struct conn *c, size_t mark, uint32_t id)
{
        int rc = cv_out_end(&c->out, mark, CV_MSG_OK, id);
        if (rc < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply: %s", strerror(-rc));
        conn_touch(c);
}

static struct exec *find_inflight(struct conn *c, uint64_t id)
{
        for (struct exec *e = c->execs; e; e = e->conn_next)
                if (e->client_id == id)
                        return e;
        return NULL;
}

/* The context named by text key `key`, or the default one if the key is absent. */
static struct context *lookup_context(struct agent *a, struct conn *c, uint32_t id,
                                      const cbor_item_t *body, const char *key, bool optional)
{
        const char *name;
        size_t len;
        int rc = cv_map_get_str(body, key, &name, &len);
        if (rc == -ENOENT && optional) {
                name = a->default_ctx;
                len = strlen(name);
        } else if (rc < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`%s` must be %s text", key,
                                optional ? "a" : "present, as");
                return NULL;
        }
        struct context *ctx = context_find(a, name, len);
        if (!ctx)
                conn_send_error(a, c, id, CV_ERR_NOT_FOUND, "no context %.*s",
                                (int)(len > 64 ? 64 : len), name);
        return ctx;
}

static void do_hello(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        uint64_t version;
        if (cv_map_get_uint(body, "protocol", &version) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`protocol` must be an unsigned integer");
                return;
        }
        if (version != CV_PROTOCOL_VERSION) {
                conn_send_error(a, c, id, CV_ERR_UNSUPPORTED_VERSION,
                                "protocol %llu requested, this agent speaks %u",
                                (unsigned long long)version, CV_PROTOCOL_VERSION);
                return;
        }
        if (c->hello_done && c->kind == TR_SERIAL) {
                /* A new peer on a stream that cannot tell us: forget the old one's requests. */
                log_info(
                    "conn %u: HELLO again on the serial port: new peer, cancelling %u requests",
                    c->num, c->ninflight);
                conn_drop_inflight(a, c);
        }
        const char *client = "";
        size_t client_len = 0;
        if (cv_map_get_str(body, "client", &client, &client_len) < 0)
                client = "", client_len = 0;
        log_info("conn %u: HELLO from %.*s", c->num, (int)(client_len > 64 ? 64 : client_len),
                 client);
        c->hello_done = true;

        struct cv_buf *b = &c->out;
        size_t mark;
        cv_out_begin(b, &mark);
        cv_enc_map(b, 10);
        cv_enc_cstr(b, "protocol");
        cv_enc_uint(b, CV_PROTOCOL_VERSION);
        cv_enc_cstr(b, "agent_version");
        cv_enc_cstr(b, AGENT_VERSION);
        cv_enc_cstr(b, "capabilities");
        size_t ncap = sizeof(capabilities) / sizeof(capabilities[0]);
        cv_enc_array(b, ncap + a->nisolation_caps);
        for (size_t i = 0; i < ncap; i++)
                cv_enc_cstr(b, capabilities[i]);
        for (size_t i = 0; i < a->nisolation_caps; i++)
                cv_enc_cstr(b, a->isolation_caps[i]);
        cv_enc_cstr(b, "max_message");
        cv_enc_uint(b, CV_DEFAULT_MAX_MESSAGE);
        cv_enc_cstr(b, "pid");
        cv_enc_uint(b, (uint64_t)getpid());
        cv_enc_cstr(b, "default_context");
        cv_enc_cstr(b, a->default_ctx);
        cv_enc_cstr(b, "network");
        cv_enc_cstr(b, user_net_name(a->network));
        cv_enc_cstr(b, "boot");
        cv_enc_map(b, a->nboot);
        for (size_t i = 0; i < a->nboot; i++) {
                cv_enc_cstr(b, a->boot[i].name);
                cv_enc_uint(b, a->boot[i].ns);
        }
        /* After a restore the host sees whether it must send NEW_GENERATION (section 11). */
        cv_enc_cstr(b, "generation");
        cv_enc_uint(b, a->generation);
        cv_enc_cstr(b, "awaiting_generation");
        cv_enc_bool(b, a->awaiting_generation);
        reply_end(a, c, mark, id);
}

static void do_ping(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        const cbor_item_t *payload = cv_map_get(body, "payload");
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct cv_buf *b = &c->out;
        size_t mark;
        cv_out_begin(b, &mark);
        cv_enc_map(b, payload ? 2 : 1);
        if (payload) {
                cv_enc_cstr(b, "payload");
                cv_enc_item(b, payload);
        }
        cv_enc_cstr(b, "time_ns");
        cv_enc_uint(b, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
        reply_end(a, c, mark, id);
}

static void do_cancel(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        uint64_t target;
        if (cv_map_get_uint(body, "id", &target) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`id` must be an unsigned integer");
                return;
        }
        struct svc_req *r = target <= UINT32_MAX ? svc_find(c, (uint32_t)target) : NULL;
        if (r) {
                log_info("conn %u: CANCEL of %s request %u", c->num, r->ops->name, r->id);
                r->ops->cancel(a, r, true);
                reply_ok_empty(c, id);
                return;
        }
        struct exec *e = find_inflight(c, target);
        if (!e) {
                conn_send_error(a, c, id, CV_ERR_NOT_FOUND, "request %llu is not in flight",
                                (unsigned long long)target);
                return;
        }
        log_info("conn %u: CANCEL of request %u (%s)", c->num, e->client_id,
                 e->running ? "running" : "queued");
        context_cancel_exec(a, e, true);
        reply_ok_empty(c, id);
}

/* envs and sandbox_envs: maps of text to text, copied as is into X_EXECUTE. */
static bool envs_valid(const cbor_item_t *envs)
{
        struct cbor_pair *pairs = cbor_map_handle(envs);
        for (size_t i = 0; i < cbor_map_size(envs); i++) {
                const char *p;
                size_t n;
                if (cv_item_str(pairs[i].key, &p, &n) < 0 ||
                    cv_item_str(pairs[i].value, &p, &n) < 0)
                        return false;
        }
        return true;
}

/* body[key] into *out when present (else *out stays NULL); false, with the
 * error sent, if it is no map of text to text. */
static bool get_envs(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body,
                     const char *key, cbor_item_t **out)
{
        int rc = cv_map_get_map(body, key, out);
        if (rc == -ENOENT || (rc == 0 && envs_valid(*out)))
                return true;
        conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`%s` must map text to text", key);
        return false;
}

/* body.language, when present, as its canonical name into *out; false, with the error
 * sent, if it is no text or names no language this agent runs. */
static bool get_language(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body,
                         const char **out)
{
        const char *s;
        size_t n;
        int rc = cv_map_get_str(body, "language", &s, &n);
        if (rc == -ENOENT)
                return true;
        const char *canonical = rc == 0 ? language_canonical(s, n) : NULL;
        if (canonical) {
                *out = canonical;
                return true;
        }
        char known[256];
        language_names(known, sizeof(known));
        if (rc < 0)
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`language` must be text: one of %s",
                                known);
        else
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "language \"%.*s\" is not supported; this agent runs %s",
                                (int)(n > 64 ? 64 : n), s, known);
        return false;
}

/* The context an EXECUTE runs in: `context`, else the default context of `language`,
 * else the agent's default context. NULL with the error sent. */
static struct context *execute_context(struct agent *a, struct conn *c, uint32_t id,
                                       const cbor_item_t *body)
{
        const char *language = NULL;
        if (!get_language(a, c, id, body, &language))
                return NULL;
        if (!language)
                return lookup_context(a, c, id, body, "context", true);
        if (cv_map_get(body, "context")) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "give `context` or `language`, not both");
                return NULL;
        }
        int err = 0;
        struct context *ctx = context_for_language(a, language, &err);
        if (!ctx) {
                if (err == -EMFILE)
                        conn_send_error(a, c, id, CV_ERR_BUSY,
                                        "%u contexts exist already: none left for the default "
                                        "%s context",
                                        a->ncontexts, language);
                else
                        conn_send_error(a, c, id, CV_ERR_INTERNAL, "creating the %s context: %s",
                                        language, strerror(-err));
        }
        return ctx;
}

static void do_execute(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        const char *code;
        size_t code_len;
        if (cv_map_get_str(body, "code", &code, &code_len) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`code` must be present, as text");
                return;
        }
        cbor_item_t *envs = NULL, *sandbox_envs = NULL;
        if (!get_envs(a, c, id, body, "envs", &envs) ||
            !get_envs(a, c, id, body, "sandbox_envs", &sandbox_envs))
                return;
        uint64_t timeout_ms = 0;
        int rc = cv_map_get_uint(body, "timeout_ms", &timeout_ms);
        if (rc < 0 && rc != -ENOENT) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`timeout_ms` must be an unsigned integer");
                return;
        }
        if (timeout_ms > UINT64_MAX / 1000000ull)
                timeout_ms = UINT64_MAX / 1000000ull;
        if (c->ninflight >= CONN_MAX_INFLIGHT) {
                conn_send_error(a, c, id, CV_ERR_BUSY,
                                "%u requests already in flight on this connection", c->ninflight);
                return;
        }
        struct context *ctx = execute_context(a, c, id, body);
        if (!ctx)
                return;
        struct exec *e = calloc(1, sizeof(*e));
        if (!e) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        e->client_id = id;
        e->timeout_ns = timeout_ms * 1000000ull;
        cv_buf_init(&e->xbody);
        /* The map's pairs; context_start_next() adds the header and the epoch of the moment. */
        e->xpairs = 1 + (envs != NULL) + (sandbox_envs != NULL);
        cv_enc_cstr(&e->xbody, "code");
        cv_enc_text(&e->xbody, code, code_len);
        if (envs) {
                cv_enc_cstr(&e->xbody, "envs");
                cv_enc_item(&e->xbody, envs);
        }
        if (sandbox_envs) {
                cv_enc_cstr(&e->xbody, "sandbox_envs");
                cv_enc_item(&e->xbody, sandbox_envs);
        }
        if (e->xbody.err) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding X_EXECUTE: %s",
                                strerror(-e->xbody.err));
                exec_free(e);
                return;
        }
        e->conn = c;
        log_debug("conn %u: EXECUTE id %u in context %s (%zu bytes of code)", c->num, id, ctx->id,
                  code_len);
        context_enqueue(a, ctx, e);
}

static void do_interrupt(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct context *ctx = lookup_context(a, c, id, body, "context", true);
        if (!ctx)
                return;
        log_info("conn %u: INTERRUPT of context %s (%s)", c->num, ctx->id,
                 ctx->running ? "running" : "idle");
        context_interrupt(a, ctx);
        reply_ok_empty(c, id);
}

static void encode_context(struct cv_buf *b, const struct context *ctx)
{
        cv_enc_map(b, 3);
        cv_enc_cstr(b, "id");
        cv_enc_cstr(b, ctx->id);
        cv_enc_cstr(b, "language");
        cv_enc_cstr(b, ctx->language);
        cv_enc_cstr(b, "cwd");
        cv_enc_cstr(b, ctx->shown_cwd ? ctx->shown_cwd : ctx->cwd);
}

static void do_context_create(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        const char *language = "python";
        if (!get_language(a, c, id, body, &language))
                return;
        char *cwd = NULL;
        int rc = cv_map_dup_str(body, "cwd", &cwd);
        if (rc == -ENOENT) {
                cwd = strdup(a->workdir);
                rc = cwd ? 0 : -ENOMEM;
        }
        if (rc < 0) {
                conn_send_error(a, c, id, rc == -ENOMEM ? CV_ERR_INTERNAL : CV_ERR_BAD_REQUEST,
                                "`cwd` must be text without NUL");
                return;
        }
        struct stat st;
        char *shown = NULL;
        bool is_dir = stat(cwd, &st) == 0 && S_ISDIR(st.st_mode);
        if (!is_dir && strcmp(language, "python") == 0) {
                /* E2B's server makes the kernel, then runs `%cd cwd` in it, whose
                 * failure IPython only prints (osm.py cd): the context stays in
                 * the default directory and is described with the cwd asked for
                 * (code-interpreter-server contexts.py create_context). */
                log_info("conn %u: cwd %.200s is not a directory: the python context works in %s",
                         c->num, cwd, a->workdir);
                shown = cwd;
                cwd = strdup(a->workdir);
                if (!cwd) {
                        conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                        free(shown);
                        return;
                }
        } else if (!is_dir) {
                /* Other languages' kernels fail to change directory: E2B's 500. */
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "cwd %.200s is not a directory", cwd);
                free(cwd);
                return;
        }
        if (a->ncontexts >= AGENT_MAX_CONTEXTS) {
                conn_send_error(a, c, id, CV_ERR_BUSY, "%u contexts exist already", a->ncontexts);
                free(cwd);
                free(shown);
                return;
        }
        int err = 0;
        struct context *ctx = context_new(a, cwd, language, &err);
        free(cwd);
        if (!ctx) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "creating a context: %s",
                                strerror(-err));
                free(shown);
                return;
        }
        ctx->shown_cwd = shown;
        log_info("conn %u: created %s context %s (cwd %s)", c->num, ctx->language, ctx->id,
                 ctx->cwd);
        size_t mark;
        cv_out_begin(&c->out, &mark);
        encode_context(&c->out, ctx);
        reply_end(a, c, mark, id);
}

static void do_context_list(struct agent *a, struct conn *c, uint32_t id)
{
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 1);
        cv_enc_cstr(&c->out, "contexts");
        cv_enc_array(&c->out, a->ncontexts);
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next)
                if (!ctx->removed)
                        encode_context(&c->out, ctx);
        reply_end(a, c, mark, id);
}

static void do_context_restart_or_remove(struct agent *a, struct conn *c, uint32_t id,
                                         const cbor_item_t *body, bool remove)
{
        struct context *ctx = lookup_context(a, c, id, body, "context", false);
        if (!ctx)
                return;
        log_info("conn %u: %s context %s", c->num, remove ? "removing" : "restarting", ctx->id);
        if (remove)
                context_remove(a, ctx);
        else
                context_restart(a, ctx);
        reply_ok_empty(c, id);
}

static void do_context_list_request(struct agent *a, struct conn *c, uint32_t id,
                                    const cbor_item_t *body)
{
        (void)body;
        do_context_list(a, c, id);
}

static void do_context_restart(struct agent *a, struct conn *c, uint32_t id,
                               const cbor_item_t *body)
{
        do_context_restart_or_remove(a, c, id, body, false);
}

static void do_context_remove(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        do_context_restart_or_remove(a, c, id, body, true);
}

static void do_commands_list(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        (void)body;
        commands_list_request(a, c, id);
}

/* Every request the agent serves, in one place: its handler, and whether a
 * guest awaiting a generation refuses it (`no_generation`, docs/PROTOCOL.md
 * section 11: whatever runs user code or touches files, commands or ports).
 * FILE_DATA and PORT_DATA are not here: they continue a request (svc_data). */
struct request_kind {
        uint16_t type;
        bool gated;
        void (*handle)(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
};

static const struct request_kind request_kinds[] = {
    {CV_MSG_HELLO, false, do_hello},
    {CV_MSG_PING, false, do_ping},
    {CV_MSG_CANCEL, false, do_cancel},
    {CV_MSG_EXECUTE, true, do_execute},
    {CV_MSG_INTERRUPT, true, do_interrupt},
    {CV_MSG_CONTEXT_CREATE, true, do_context_create},
    {CV_MSG_CONTEXT_LIST, true, do_context_list_request},
    {CV_MSG_CONTEXT_RESTART, true, do_context_restart},
    {CV_MSG_CONTEXT_REMOVE, true, do_context_remove},
    {CV_MSG_SET_TIME, false, system_set_time_request},
    {CV_MSG_ADD_ENTROPY, false, system_add_entropy_request},
    {CV_MSG_SHUTDOWN, false, system_shutdown_request},
    {CV_MSG_SET_DEADLINE, false, system_set_deadline_request},
    {CV_MSG_SNAPSHOT_PREPARE, false, system_snapshot_prepare_request},
    {CV_MSG_NEW_GENERATION, false, system_new_generation_request},
    {CV_MSG_SYS_STATS, false, stats_request},
    {CV_MSG_FILE_WRITE, true, files_write_request},
    {CV_MSG_FILE_READ, true, files_read_request},
    {CV_MSG_FILE_LIST, true, files_list_request},
    {CV_MSG_FILE_STAT, true, files_stat_request},
    {CV_MSG_FILE_REMOVE, true, files_remove_request},
    {CV_MSG_FILE_RENAME, true, files_rename_request},
    {CV_MSG_FILE_MKDIR, true, files_mkdir_request},
    {CV_MSG_FILE_WATCH, true, fswatch_request},
    {CV_MSG_CMD_START, true, commands_start_request},
    {CV_MSG_CMD_LIST, true, do_commands_list},
    {CV_MSG_CMD_KILL, true, commands_kill_request},
    {CV_MSG_CMD_STDIN, true, commands_stdin_request},
    {CV_MSG_CMD_CONNECT, true, commands_connect_request},
    {CV_MSG_CMD_RESIZE, true, commands_resize_request},
    {CV_MSG_PORT_OPEN, true, ports_open_request},
    {CV_MSG_EGRESS_ACCEPT, true, egress_accept_request},
};

static const struct request_kind *request_kind_of(uint16_t type)
{
        for (size_t i = 0; i < sizeof(request_kinds) / sizeof(request_kinds[0]); i++)
                if (request_kinds[i].type == type)
                        return &request_kinds[i];
        return NULL;
}

void request_dispatch(struct agent *a, struct conn *c, uint16_t type, uint32_t id,
                      const uint8_t *body, size_t len)
{
        log_debug("conn %u: %s (%#x) id %u, %zu body bytes", c->num, cv_msg_type_name(type), type,
                  id, len);
        if (!c->hello_done && type != CV_MSG_HELLO) {
                conn_send_error(a, c, id, CV_ERR_HANDSHAKE_REQUIRED,
                                "the first request must be HELLO");
                return;
        }
        if (id == 0) {
                conn_send_error(a, c, 0, CV_ERR_BAD_REQUEST, "request id 0 is reserved");
                return;
        }
        if (type == CV_MSG_FILE_DATA || type == CV_MSG_PORT_DATA) {
                svc_data(a, c, type, id, body, len);
                return;
        }
        if (find_inflight(c, id) || svc_find(c, id)) {
                conn_send_error(a, c, id, CV_ERR_DUPLICATE_ID, "request %u is already in flight",
                                id);
                return;
        }
        const struct request_kind *kind = request_kind_of(type);
        if (!kind) {
                conn_send_error(a, c, id, CV_ERR_UNKNOWN_TYPE, "message type %#x is not a request",
                                type);
                return;
        }
        if (a->awaiting_generation && kind->gated) {
                conn_send_error(a, c, id, CV_ERR_NO_GENERATION,
                                "%s refused: this guest was prepared for a snapshot (or restored "
                                "from one) and has no generation of its own yet; send "
                                "NEW_GENERATION first (docs/SNAPSHOTS.md)",
                                cv_msg_type_name(type));
                return;
        }
        cbor_item_t *item = NULL;
        int rc = cv_body_parse(body, len, &item);
        if (rc < 0) {
                conn_send_error(a, c, id, rc == -ENOMEM ? CV_ERR_INTERNAL : CV_ERR_BAD_REQUEST,
                                rc == -EPROTOTYPE ? "the body is not a CBOR map"
                                : rc == -ENOMEM   ? "out of memory decoding the body"
                                                  : "the body is not one well-formed CBOR item");
                return;
        }
        kind->handle(a, c, id, item);
        cbor_decref(&item);
}

/* Cancels what `c` has in flight without sending anything: its executions, then its files,
 * commands and ports requests. */
static void drop_inflight(struct agent *a, struct conn *c)
{
        while (c->execs)
                context_cancel_exec(a, c->execs, false);
        svc_drop_all(a, c);
}

/* Resumes the executors and services feeding `c` once its output is below the high water. */
static void resume_feeders(struct agent *a, struct conn *c)
{
        for (struct exec *e = c->execs; e; e = e->conn_next)
                if (e->running && e->ctx->paused)
                        context_update_interest(a, e->ctx);
        svc_resume_all(a, c);
}

void requests_register(void)
{
        static const struct conn_handlers handlers = {
            .message = request_dispatch, .drop_inflight = drop_inflight, .drained = resume_feeders};
        conn_set_handlers(&handlers);
}
