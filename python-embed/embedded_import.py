"""Imports the Python modules compiled into cellvm-executor (embed_sources.py,
_cellvm.sources): the notebook kernel, the package _cellvm_kernel
(python-embed/kernel/), and cellvm_pretty, cellvm_charts and cellvm_bash.

main.c runs this module first, as `_cellvm_import`; it puts its finder at the
end of sys.meta_path, so a module of the same name on sys.path comes first,
and then imports the kernel as any other package.
"""

import importlib.abc
import importlib.util
import linecache
import sys

import _cellvm

KERNEL = "_cellvm_kernel"
# The file names of the kernel's modules ("<cellvm kernel/iostream.py>"): how
# tracebacks tell the kernel's frames from the user's (kernel/ultratb.py).
KERNEL_FILE_PREFIX = "<cellvm kernel/"


def _is_package(name):
        prefix = name + "."
        return any(other.startswith(prefix) for other in _cellvm.sources)


def _filename(name, package):
        """The name a module's code and frames have: the kernel's after its file
        in python-embed/kernel/, the others `<cellvm NAME>`."""
        if name != KERNEL and not name.startswith(KERNEL + "."):
                return f"<cellvm {name}>"
        path = "/".join(name.split(".")[1:])
        if package:
                path = path + "/__init__.py" if path else "__init__.py"
        else:
                path += ".py"
        return KERNEL_FILE_PREFIX + path + ">"


class EmbeddedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """Serves the modules compiled into the executor (a package when others
        are named under it)."""

        def find_spec(self, fullname, path=None, target=None):
                if not _cellvm.sources.get(fullname):
                        return None
                package = _is_package(fullname)
                return importlib.util.spec_from_loader(fullname, self, origin=_filename(fullname, package),
                                                       is_package=package)

        def create_module(self, spec):
                return None

        def exec_module(self, module):
                name = module.__name__
                src = _cellvm.sources[name]
                filename = module.__spec__.origin
                if filename.startswith(KERNEL_FILE_PREFIX):
                        # The kernel's own source lines in tracebacks of its bugs.
                        linecache.cache[filename] = (0, None, src.splitlines(True), filename)
                exec(compile(src, filename, "exec"), module.__dict__)


sys.meta_path.append(EmbeddedFinder())
