/*
 * cellvm-executor: the zygote of Python executors.
 *   cellvm-executor --zygote --fd N [--preload mod1,mod2,...]
 * Initialises CPython once, imports the embedded kernel, then hands over to
 * zygote_run() (docs/PROTOCOL.md section 8).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellvm_module.h"
#include "embedded_py.h"
#include "zygote.h"

#ifndef CELLVM_PYTHON
#define CELLVM_PYTHON "/usr/bin/python3"
#endif

#define IMPORT_MODULE "_cellvm_import"
#define KERNEL_MODULE "_cellvm_kernel"

static void usage(FILE *f)
{
        fprintf(f, "usage: cellvm-executor --zygote --fd N [--preload mod1,mod2,...]\n");
}

/* Python as /usr/bin/python3 would be (site, dist-packages), without argv parsing. */
static int init_python(void)
{
        PyConfig config;
        PyStatus status;

        if (PyImport_AppendInittab("_cellvm", cellvm_module_init) < 0)
                return -1;
        PyConfig_InitPythonConfig(&config);
        config.parse_argv = 0;
        config.install_signal_handlers = 1;
        status = PyConfig_SetBytesString(&config, &config.program_name, CELLVM_PYTHON);
        if (!PyStatus_Exception(status))
                status = PyConfig_SetBytesString(&config, &config.executable, CELLVM_PYTHON);
        if (!PyStatus_Exception(status))
                status = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status)) {
                fprintf(stderr, "cellvm-executor: Python init: %s\n",
                        status.err_msg ? status.err_msg : "failed");
                return -1;
        }
        return 0;
}

/*
 * The kernel is the embedded package _cellvm_kernel (python-embed/kernel/). The
 * module that imports embedded modules (embedded_import.py) runs first, on its
 * own, and puts its finder on sys.meta_path; the package then imports as any.
 */
static PyObject *load_kernel(void)
{
        const struct embedded_py *e = embedded_py_sources;
        while (e->name != NULL && strcmp(e->name, IMPORT_MODULE) != 0)
                e++;
        if (e->name == NULL || e->len == 0) {
                fprintf(stderr, "cellvm-executor: no embedded %s\n", IMPORT_MODULE);
                return NULL;
        }
        PyObject *code = Py_CompileString(e->source, e->filename, Py_file_input);
        PyObject *importer =
            code ? PyImport_ExecCodeModuleEx(IMPORT_MODULE, code, e->filename) : NULL;
        Py_XDECREF(code);
        PyObject *mod = importer ? PyImport_ImportModule(KERNEL_MODULE) : NULL;
        Py_XDECREF(importer);
        if (mod == NULL) {
                fprintf(stderr, "cellvm-executor: loading the kernel:\n");
                PyErr_Print();
        }
        return mod;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
            {"zygote", no_argument, NULL, 'z'},
            {"fd", required_argument, NULL, 'f'},
            {"preload", required_argument, NULL, 'p'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int zygote = 0, fd = -1, c;
        const char *preload = "";

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'z':
                        zygote = 1;
                        break;
                case 'f': {
                        char *end;
                        errno = 0;
                        long v = strtol(optarg, &end, 10);
                        if (errno != 0 || *end != '\0' || v < 0 || v > 65535) {
                                fprintf(stderr, "cellvm-executor: bad --fd %s\n", optarg);
                                return 2;
                        }
                        fd = (int)v;
                        break;
                }
                case 'p':
                        preload = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (!zygote || fd < 0 || optind != argc) {
                usage(stderr);
                return 2;
        }
        /* Keep the zygote socket out of anything Python starts (e.g. preload side effects). */
        int flags = fcntl(fd, F_GETFD);
        if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
                fprintf(stderr, "cellvm-executor: --fd %d: %s\n", fd, strerror(errno));
                return 2;
        }
        if (init_python() < 0)
                return 1;
        PyObject *kernel = load_kernel();
        if (kernel == NULL)
                return 1;
        int status = zygote_run(fd, kernel, preload);
        Py_DECREF(kernel);
        if (Py_FinalizeEx() < 0 && status == 0)
                status = 120;
        return status;
}
