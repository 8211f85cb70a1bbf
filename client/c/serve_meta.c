/* envd's file metadata, kept by the server per sandbox (serve.h). */
#include <stdlib.h>
#include <string.h>

#include "serve.h"

#define META_MAX_PATHS 10000 /* per sandbox; past it, new metadata is not kept */

/* `path` is `dir` itself or below it. */
static bool under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void serve_meta_set(struct sandbox *s, const char *path, json_t *meta)
{
        pthread_mutex_lock(&s->procs_lock);
        if (!s->file_meta)
                s->file_meta = json_object();
        if (s->file_meta) {
                if (meta && json_object_size(meta) &&
                    json_object_size(s->file_meta) < META_MAX_PATHS)
                        json_object_set(s->file_meta, path, meta);
                else
                        json_object_del(s->file_meta, path);
        }
        pthread_mutex_unlock(&s->procs_lock);
}

void serve_meta_attach(struct sandbox *s, json_t *entry)
{
        const char *path = json_string_value(json_object_get(entry, "path"));
        if (!path)
                return;
        pthread_mutex_lock(&s->procs_lock);
        json_t *m = s->file_meta ? json_object_get(s->file_meta, path) : NULL;
        if (m)
                json_object_set_new(entry, "metadata", json_deep_copy(m));
        pthread_mutex_unlock(&s->procs_lock);
}

void serve_meta_move(struct sandbox *s, const char *from, const char *to)
{
        pthread_mutex_lock(&s->procs_lock);
        json_t *moved = json_object();
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(s->file_meta, tmp, k, v)
        {
                if (!under(k, from))
                        continue;
                size_t n = strlen(to) + strlen(k + strlen(from)) + 1;
                char *nk = malloc(n);
                if (nk) {
                        strcpy(nk, to);
                        strcat(nk, k + strlen(from));
                        json_object_set(moved, nk, v);
                        free(nk);
                }
                json_object_del(s->file_meta, k);
        }
        if (s->file_meta)
                json_object_update(s->file_meta, moved);
        json_decref(moved);
        pthread_mutex_unlock(&s->procs_lock);
}

void serve_meta_remove(struct sandbox *s, const char *path)
{
        pthread_mutex_lock(&s->procs_lock);
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(s->file_meta, tmp, k, v)
        {
                if (under(k, path))
                        json_object_del(s->file_meta, k);
        }
        pthread_mutex_unlock(&s->procs_lock);
}
