"""Callbacks run right after selected modules finish importing (kernelapp
registers them: matplotlib's backend, IPython.display routed to ours, ...)."""

import importlib.abc
import importlib.util
import sys
import types


class _PostImportFinder(importlib.abc.MetaPathFinder):
        """Runs a callback right after selected modules finish importing.

        Used to select our matplotlib backend as soon as matplotlib is imported
        (preloaded or not) and to route IPython.display.display to ours.
        """

        def __init__(self):
                self.hooks = {}
                self._busy = set()

        def find_spec(self, fullname, path=None, target=None):
                if fullname not in self.hooks or fullname in self._busy:
                        return None
                self._busy.add(fullname)
                try:
                        spec = importlib.util.find_spec(fullname)
                finally:
                        self._busy.discard(fullname)
                if spec is None or spec.loader is None:
                        return spec
                loader = spec.loader
                hook = self.hooks[fullname]
                real_exec = loader.exec_module

                def exec_module(module):
                        real_exec(module)
                        try:
                                hook(module)
                        except Exception as e:  # a hook must not break the user's import
                                print(f"cellvm: import hook for {fullname} failed: {e!r}",
                                      file=sys.stderr)

                spec.loader = types.SimpleNamespace(
                    create_module=loader.create_module, exec_module=exec_module)
                return spec

        def add(self, modname, hook):
                if modname in sys.modules:
                        hook(sys.modules[modname])
                else:
                        self.hooks[modname] = hook


_post_import = _PostImportFinder()
