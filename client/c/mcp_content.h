/* cellvm mcp: a tool result's content items (mcp_content.c). */
#ifndef CELLVM_CLIENT_MCP_CONTENT_H
#define CELLVM_CLIENT_MCP_CONTENT_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Text kept up to `max` bytes; `cut` counts what did not fit. */
struct mcp_text {
        char *buf;
        size_t len, cap, max, cut;
};
int mcp_text_add(struct mcp_text *t, const void *p, size_t n);
void mcp_text_free(struct mcp_text *t);
/* Whether `data` is valid UTF-8 without NUL bytes; with `cut`, its end may
 * be a character cut short (the rest was not read). */
bool mcp_is_utf8(const void *data, size_t n, bool cut);

/* A text item: `label` (may be NULL) then `t` cleaned (colour codes dropped,
 * invalid UTF-8 as '?') and the truncation marker if anything was cut. */
int mcp_add_text(json_t *content, const char *label, struct mcp_text *t);
int mcp_add_string(json_t *content, const char *text);
/* An image item: `data` raw bytes, or already base64 text. */
int mcp_add_image(json_t *content, const char *mime, const void *data, size_t n, bool is_base64);
/* A CallToolResult (steals `content`; "(no output)" when it is empty). */
json_t *mcp_tool_result(json_t *content, bool is_error);
json_t *mcp_tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
