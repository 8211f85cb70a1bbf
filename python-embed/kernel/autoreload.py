"""IPython's autoreload extension (%load_ext autoreload), on IPython's own
ModuleReloader."""

import sys


class _Autoreload:
        """IPython's autoreload extension (%load_ext autoreload) on IPython's
        own ModuleReloader: %autoreload [0-3], %aimport, and a check for
        changed modules before each cell."""

        def __init__(self, shell):
                from IPython.extensions.autoreload import ModuleReloader
                self.shell = shell
                self.reloader = ModuleReloader(shell)
                self.reloader.check_all = False
                self.reloader.autoload_obj = False
                self.loaded_modules = set(sys.modules)

        def autoreload(self, line):
                r = self.reloader
                if line == "":
                        r.check(True)
                elif line == "0":
                        r.enabled = False
                elif line in ("1", "2", "3"):
                        r.check_all = line != "1"
                        r.autoload_obj = line == "3"
                        r.enabled = True

        def aimport(self, line):
                r = self.reloader
                if not line:
                        print("Modules to reload:\n" + ("all-except-skipped" if r.check_all
                                                         else " ".join(sorted(r.modules))))
                        print("\nModules to skip:\n" + " ".join(sorted(r.skip_modules)))
                elif line.startswith("-"):
                        r.mark_module_skipped(line[1:])
                else:
                        for name in [n.strip() for n in line.split(",")]:
                                top_module, top_name = r.aimport_module(name)
                                self.shell.user_ns[top_name] = top_module

        def pre_run_cell(self):
                if self.reloader.enabled:
                        try:
                                self.reloader.check()
                        except Exception:  # as IPython: a failed check never stops the cell
                                pass

        def post_execute(self):
                """Modules imported by the cell: their times now, so they count as fresh."""
                new = set(sys.modules) - self.loaded_modules
                for name in new:
                        _, mtime = self.reloader.filename_and_mtime(sys.modules[name])
                        if mtime is not None:
                                self.reloader.modules_mtimes[name] = mtime
                self.loaded_modules.update(new)
