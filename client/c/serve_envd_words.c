/* envd's own wording of the agent's files-service errors: E2B's envd writes
 * these itself, where the agent gives "<op> <path>: <strerror> (<ERRNO>)".
 * Keep in step with client/python/cellvm/exceptions.py _E2B_FILE_MESSAGES
 * (tests/test_serve_file_words.py compares the two). */
#include "serve_envd_words.h"

#include <stdio.h>
#include <string.h>

struct envd_word {
        const char *op, *err, *text; /* "{path}" in text: the agent's path */
};

static const struct envd_word words[] = {
    /* envd internal/api/download.go GetFiles: 404, 400 */
    {"read", "ENOENT", "path '{path}' does not exist"},
    {"read", "EISDIR", "path '{path}' is a directory"},
    /* envd api/upload.go processFile (a 400) */
    {"write", "EISDIR", "path is a directory: {path}"},
    /* envd services/filesystem/utils.go entryInfo (os.Lstat's error) */
    {"stat", "ENOENT", "file not found: lstat {path}: no such file or directory"},
    /* envd services/filesystem/dir.go ListDir (filepath.EvalSymlinks' error; not a directory) */
    {"list", "ENOENT", "path not found: lstat {path}: no such file or directory"},
    {"list", "ENOTDIR", "path is not a directory: {path}"},
    /* envd services/filesystem/move.go Move (os.Rename's error names both paths) */
    {"rename", "ENOENT", "source file not found: rename {path}: no such file or directory"},
    /* envd services/filesystem/dir.go MakeDir */
    {"make_dir", "EEXIST", "path already exists but it is not a directory: {path}"},
};

/* As the Python SDK's _FILE_ERROR: ^(op) (/.*): [^:]* \((E[A-Z0-9]+)\)$ */
static bool parse(const char *msg, size_t len, const char **op, size_t *opl, const char **path,
                  size_t *pathl, const char **err, size_t *errl)
{
        const char *sp = memchr(msg, ' ', len);
        if (!sp || sp == msg || (size_t)(sp - msg) + 1 >= len || sp[1] != '/')
                return false;
        if (len < 4 || msg[len - 1] != ')')
                return false;
        size_t lp = len - 1; /* the "(" of "(EXXX)" */
        while (lp > 0 && msg[lp - 1] != '(')
                lp--;
        if (lp < 2 || msg[lp - 2] != ' ' || msg[lp] != 'E' || lp + 1 >= len - 1)
                return false;
        for (size_t i = lp + 1; i < len - 1; i++)
                if (!((msg[i] >= 'A' && msg[i] <= 'Z') || (msg[i] >= '0' && msg[i] <= '9')))
                        return false;
        lp--; /* at the "(": the last colon before it ends the path */
        size_t colon = lp - 1;
        while (colon > 0 && msg[colon] != ':')
                colon--;
        if (msg[colon] != ':' || colon + 1 >= len || msg[colon + 1] != ' ' ||
            colon <= (size_t)(sp - msg) + 1)
                return false;
        *op = msg;
        *opl = (size_t)(sp - msg);
        *path = sp + 1;
        *pathl = colon - (size_t)(sp + 1 - msg);
        *err = msg + lp + 1;
        *errl = len - 1 - (lp + 1);
        return true;
}

bool envd_words(const char *msg, size_t len, char *out, size_t size)
{
        const char *op, *path, *err;
        size_t opl, pathl, errl;
        if (!msg || size == 0 || !parse(msg, len, &op, &opl, &path, &pathl, &err, &errl))
                return false;
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
                const struct envd_word *w = &words[i];
                if (strlen(w->op) != opl || memcmp(w->op, op, opl) != 0 || strlen(w->err) != errl ||
                    memcmp(w->err, err, errl) != 0)
                        continue;
                const char *at = strstr(w->text, "{path}");
                snprintf(out, size, "%.*s%.*s%s", (int)(at - w->text), w->text, (int)pathl, path,
                         at + 6);
                return true;
        }
        return false;
}
