/* Dispatch of an attached executor to its language's driver. */
#include "executor_language.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fd_capture.h"
#include "node_exec.h"
#include "stream_sink.h"

/*
 * Every language starts in this process, after the same confinement: Python is the
 * kernel itself, bash an embedded module (python-embed/embed_sources.py) with an
 * executor_main(fd) that speaks section 8 on `fd` and fds 1 and 2; JavaScript and
 * TypeScript exec Node.js with cellvm's driver on the same fds (node_exec.h).
 */
struct executor_language {
        const char *name;
        const char *module; /* NULL: the kernel's own executor_main */
        bool node;          /* exec Node.js instead */
};

static const struct executor_language languages[] = {
    {"python", NULL, false},
    {"bash", "cellvm_bash", false},
    {"javascript", NULL, true},
    {"typescript", NULL, true},
};

#define NLANGUAGES (sizeof(languages) / sizeof(languages[0]))

static const struct executor_language *find(const char *language)
{
        for (size_t i = 0; i < NLANGUAGES; i++)
                if (language && strcmp(languages[i].name, language) == 0)
                        return &languages[i];
        return NULL;
}

bool executor_language_known(const char *language)
{
        return find(language) != NULL;
}

/* A Python context's fds 1 and 2 (fd_capture.h); without, it still runs. */
static void capture_fds(void)
{
        const char *step;
        int rc = fd_capture_start(&step);
        if (rc < 0) /* fd 2 is the context's stderr: the agent logs this */
                fprintf(stderr, "cellvm-executor: %s: %s (fd output may overtake printed text)\n",
                        step, strerror(-rc));
}

void executor_language_serve(PyObject *kernel, const char *language, int fd)
{
        const struct executor_language *l = find(language);
        PyObject *driver = kernel, *r = NULL;
        if (l && l->node) {
                const char *what;
                int rc = node_exec(language, false, fd, &what);
                /* fd 2 is the context's stderr: the agent logs this. */
                fprintf(stderr, "cellvm-executor: %s executor: %s: %s\n", language, what,
                        strerror(-rc));
                _exit(127);
        }
        if (l && l->module) {
                driver = PyImport_ImportModule(l->module);
        } else if (l) {
                Py_INCREF(driver);
                capture_fds();
        } else {
                PyErr_Format(PyExc_ValueError, "no executor for language %s", language);
                driver = NULL;
        }
        if (driver)
                r = PyObject_CallMethod(driver, "executor_main", "i", fd);
        int status = 0;
        if (r == NULL) {
                fprintf(stderr, "cellvm-executor: %s executor failed:\n", language);
                PyErr_Print();
                status = 1;
        }
        Py_XDECREF(r);
        Py_XDECREF(driver);
        if (Py_FinalizeEx() < 0)
                status = 120;
        /* What was captured last (at exit, in finalisers) still reaches the agent. */
        (void)stream_sink_flush_all(&stream_sinks[0]);
        (void)stream_sink_flush_all(&stream_sinks[1]);
        _exit(status);
}
