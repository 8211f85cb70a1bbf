"""IPython.core.magics.extension's counterpart: %load_ext, %reload_ext, %unload_ext."""

import functools
import importlib
import sys

from ..autoreload import _Autoreload
from ..error import UsageError
from ..foreign_frames import ipython_passing_on


def _frame(path, line, qualname, params=("self", "module_str")):
        """IPython's frame at path:line, passing a call on: an extension that
        fails to import or to load shows the frames ipykernel shows."""
        return ipython_passing_on("core/" + path, line, qualname, params)


_LOAD_EXT = _frame("magics/extension.py", 33, "ExtensionMagics.load_ext")
_RELOAD_EXT = _frame("magics/extension.py", 63, "ExtensionMagics.reload_ext")
_RELOAD_EXTENSION = _frame("extensions.py", 147, "ExtensionManager.reload_extension")
_LOAD_EXTENSION = _frame("extensions.py", 76, "ExtensionManager.load_extension")
_IMPORT = _frame("extensions.py", 92, "ExtensionManager._load_extension")
_CALL_LOAD = _frame("extensions.py", 99, "ExtensionManager._load_extension")
_LOAD_IPYTHON_EXTENSION = _frame("extensions.py", 151, "ExtensionManager._call_load_ipython_extension",
                                 ("self", "mod"))


class ExtensionMagics:
        """IPython's ExtensionMagics (IPython.core.magics.extension), mixed into zmqshell.Shell."""

        def magic_load_ext(self, line):
                """IPython's %load_ext: autoreload on IPython's own reloader, else
                the module's load_ipython_extension(shell)."""
                if not line:
                        raise UsageError("Missing module name.")
                name = line
                if name == "autoreload":
                        if self.kernel.autoreload is not None:
                                print(f"The {name} extension is already loaded. To reload it, use:")
                                print("  %reload_ext", name)
                                return
                        self.kernel.autoreload = _Autoreload(self)
                        return
                if name in self.extensions:
                        print(f"The {name} extension is already loaded. To reload it, use:")
                        print("  %reload_ext", name)
                        return
                if _LOAD_EXT(functools.partial(_LOAD_EXTENSION, self._load_extension), name) is None:
                        print(f"The {name} module is not an IPython extension.")

        def _load_extension(self, name):
                """IPython's ExtensionManager._load_extension, in its frames: the
                module or None where it has no load_ipython_extension."""
                mod = _IMPORT(importlib.import_module, name)
                load = getattr(mod, "load_ipython_extension", None)
                if load is None:
                        return None
                _CALL_LOAD(functools.partial(_LOAD_IPYTHON_EXTENSION, load), self)
                self.extensions.add(name)
                return mod

        def magic_reload_ext(self, line):
                """IPython's %reload_ext: the extension loaded afresh (its module
                reloaded), or loaded if it was not; silent either way."""
                if not line:
                        raise UsageError("Missing module name.")
                if line == "autoreload":
                        self.kernel.autoreload = _Autoreload(self)
                        return
                if line not in self.extensions:
                        _RELOAD_EXT(functools.partial(_RELOAD_EXTENSION, functools.partial(
                            _LOAD_EXTENSION, self._load_extension)), line)
                        return
                mod = sys.modules.get(line)
                if mod is not None:
                        unload = getattr(mod, "unload_ipython_extension", None)
                        if unload is not None:
                                unload(self)
                        mod = importlib.reload(mod)
                        load = getattr(mod, "load_ipython_extension", None)
                        if load is not None:
                                load(self)

        def magic_unload_ext(self, line):
                """IPython's %unload_ext: the module's unload_ipython_extension(shell);
                autoreload (IPython's) has none."""
                if not line:
                        raise UsageError("Missing module name.")
                loaded = line in self.extensions or line == "autoreload" and self.kernel.autoreload is not None
                if not loaded:
                        print(f"The {line} extension is not loaded.")
                        return
                unload = getattr(sys.modules.get(line), "unload_ipython_extension", None)
                if line == "autoreload" or unload is None:
                        print(f"The {line} extension doesn't define how to unload it.")
                        return
                unload(self)
                self.extensions.discard(line)
