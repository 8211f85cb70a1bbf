"""Imports the Python modules compiled into cellvm-executor (embed_sources.py):
the notebook kernel, the package _cellvm_kernel (python-embed/kernel/), and
cellvm_pretty, cellvm_charts and cellvm_bash.

main.c runs this module first, as `_cellvm_import`; it puts its finder at the
end of sys.meta_path, so a module of the same name on sys.path comes first,
and then imports the kernel as any other package. Each module's code was
compiled at build time (_cellvm.code); only a Python with other bytecode
(never the one linked in) would compile the source (_cellvm.sources) here.
"""

import importlib.abc
import importlib.util
import linecache
import marshal
import sys

import _cellvm

KERNEL = "_cellvm_kernel"
# The file name of the kernel's modules' code ("<cellvm kernel/iostream.py>",
# embed_sources.py): how tracebacks tell the kernel's frames (kernel/ultratb.py).
KERNEL_FILE_PREFIX = "<cellvm kernel/"

_COMPILED = _cellvm.code_magic == importlib.util.MAGIC_NUMBER


def _is_package(name):
        prefix = name + "."
        return any(other.startswith(prefix) for other in _cellvm.sources)


class EmbeddedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """Serves the modules compiled into the executor (a package when others
        are named under it)."""

        def find_spec(self, fullname, path=None, target=None):
                if not _cellvm.sources.get(fullname):
                        return None
                package = _is_package(fullname)
                return importlib.util.spec_from_loader(fullname, self, origin=_cellvm.code[fullname][0],
                                                       is_package=package)

        def create_module(self, spec):
                return None

        def exec_module(self, module):
                name = module.__name__
                filename, code = _cellvm.code[name]
                if name == KERNEL or name.startswith(KERNEL + "."):
                        # The kernel's own source lines in tracebacks of its bugs.
                        src = _cellvm.sources[name]
                        linecache.cache[filename] = (0, None, src.splitlines(True), filename)
                code = marshal.loads(code) if _COMPILED else compile(_cellvm.sources[name], filename, "exec")
                exec(code, module.__dict__)


sys.meta_path.append(EmbeddedFinder())
