"""IPython.core.magics.extension's counterpart: %load_ext, %reload_ext, %unload_ext."""

import importlib
import sys

from ..autoreload import _Autoreload
from ..error import UsageError


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
                mod = importlib.import_module(name)
                load = getattr(mod, "load_ipython_extension", None)
                if load is None:
                        print(f"The {name} module is not an IPython extension.")
                        return
                load(self)
                self.extensions.add(name)

        def magic_reload_ext(self, line):
                """IPython's %reload_ext: the extension loaded afresh (its module
                reloaded), or loaded if it was not; silent either way."""
                if not line:
                        raise UsageError("Missing module name.")
                if line == "autoreload":
                        self.kernel.autoreload = _Autoreload(self)
                        return
                if line not in self.extensions:
                        return self.magic_load_ext(line)
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
