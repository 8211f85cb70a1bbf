"""IPython.core.magics.extension's counterpart: %load_ext, %reload_ext, %unload_ext."""

import importlib
import sys

from ..autoreload import _Autoreload
from ..error import UsageError
from ..foreign_frames import chained, ipython_calling_on


def _frame(path, line, qualname, params=("self", "module_str")):
        """IPython's frame at path:line, calling on: an extension that fails
        to import or to load shows the frames ipykernel shows."""
        return ipython_calling_on("core/" + path, line, qualname, params, carets=9)


_LOAD_EXT = _frame("magics/extension.py", 33, "ExtensionMagics.load_ext")
_RELOAD_EXT = _frame("magics/extension.py", 63, "ExtensionMagics.reload_ext")
_RELOAD_EXTENSION = _frame("extensions.py", 147, "ExtensionManager.reload_extension")
_LOAD_EXTENSION = _frame("extensions.py", 76, "ExtensionManager.load_extension")
_IMPORT = _frame("extensions.py", 92, "ExtensionManager._load_extension")
_CALL_LOAD = _frame("extensions.py", 99, "ExtensionManager._load_extension")
_LOAD_IPYTHON_EXTENSION = _frame("extensions.py", 151, "ExtensionManager._call_load_ipython_extension",
                                 ("self", "mod"))


# IPython's own extensions: `import storemagic` fails, so IPython loads (and
# lists) them under IPython.extensions.
_BUILTINS = ("storemagic", "autoreload")


def _listed(module_str):
        return "IPython.extensions." + module_str if module_str in _BUILTINS else module_str


class ExtensionManager:
        """IPython's ExtensionManager (get_ipython().extension_manager): loads,
        unloads and reloads extensions, answering in its words ("already
        loaded", "no load function", "not loaded", "no unload function") or
        None; %load_ext and the others print from those."""

        def __init__(self, shell):
                self.shell = shell
                self.loaded = {"IPython.extensions.storemagic"}  # ipykernel's default

        def load_extension(self, module_str):
                return chained([_LOAD_EXTENSION], self._load_extension, module_str)()

        def _load_extension(self, module_str):
                """IPython's ExtensionManager._load_extension, in its frames."""
                if _listed(module_str) in self.loaded:
                        return "already loaded"
                if module_str == "autoreload":
                        self._load_autoreload()
                        return None
                mod = chained([_IMPORT], importlib.import_module, module_str)()
                load = getattr(mod, "load_ipython_extension", None)
                if load is None:
                        return "no load function"
                chained([_CALL_LOAD, _LOAD_IPYTHON_EXTENSION], load, self.shell)()
                self.loaded.add(_listed(module_str))
                return None

        def _load_autoreload(self):
                """IPython's autoreload extension, ours: loaded afresh, listed as
                IPython's (%load_ext and %reload_ext)."""
                self.shell.kernel.autoreload = _Autoreload(self.shell)
                self.loaded.add(_listed("autoreload"))

        def unload_extension(self, module_str):
                name = _listed(module_str)
                if name not in self.loaded:
                        return "not loaded"
                # IPython's autoreload and storemagic have no unload function.
                unload = None if module_str in _BUILTINS else getattr(sys.modules.get(name),
                                                                      "unload_ipython_extension", None)
                if unload is None:
                        return "no unload function"
                unload(self.shell)
                self.loaded.discard(name)
                return None

        def reload_extension(self, module_str):
                if module_str == "autoreload":
                        self._load_autoreload()
                        return None
                if module_str not in self.loaded or module_str not in sys.modules:
                        chained([_RELOAD_EXTENSION], self.load_extension, module_str)()
                        return None
                mod = sys.modules[module_str]
                unload = getattr(mod, "unload_ipython_extension", None)
                if unload is not None:
                        unload(self.shell)
                mod = importlib.reload(mod)
                load = getattr(mod, "load_ipython_extension", None)
                if load is not None:
                        load(self.shell)
                return None


class ExtensionMagics:
        """IPython's ExtensionMagics (IPython.core.magics.extension), mixed into zmqshell.Shell."""

        def magic_load_ext(self, line):
                """IPython's %load_ext: the extension manager's load_extension."""
                if not line:
                        raise UsageError("Missing module name.")
                res = chained([_LOAD_EXT], self.extension_manager.load_extension, line)()
                if res == "already loaded":
                        print(f"The {line} extension is already loaded. To reload it, use:")
                        print("  %reload_ext", line)
                elif res == "no load function":
                        print(f"The {line} module is not an IPython extension.")

        def magic_reload_ext(self, line):
                """IPython's %reload_ext: the extension loaded afresh (its module
                reloaded), or loaded if it was not; silent either way."""
                if not line:
                        raise UsageError("Missing module name.")
                chained([_RELOAD_EXT], self.extension_manager.reload_extension, line)()

        def magic_unload_ext(self, line):
                """IPython's %unload_ext: the module's unload_ipython_extension(shell)."""
                if not line:
                        raise UsageError("Missing module name.")
                res = self.extension_manager.unload_extension(line)
                if res == "not loaded":
                        print(f"The {line} extension is not loaded.")
                elif res == "no unload function":
                        print(f"The {line} extension doesn't define how to unload it.")
