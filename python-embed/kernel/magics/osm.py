"""IPython.core.magics.osm's counterpart: the shell and the file system
(%cd, %pushd, %env, %alias, %sx, %%writefile...)."""

import os
import re
import sys

from ..error import UsageError
from . import _IPYTHON_LINE_MAGICS


# IPython's default aliases (IPython.core.alias.default_aliases on Linux):
# %ls & co. run through the shell as !ls would.
_ALIASES = {"mkdir": "mkdir", "rmdir": "rmdir", "mv": "mv", "rm": "rm", "cp": "cp", "cat": "cat",
            "ls": "ls -F --color", "ll": "ls -F -o --color",
            "lf": "ls -F -o --color %l | grep ^-", "lk": "ls -F -o --color %l | grep ^l",
            "ldir": "ls -F -o --color %l | grep /$", "lx": "ls -F -o --color %l | grep ^-..x"}


class OSMagics:
        """IPython's OSMagics (IPython.core.magics.osm), mixed into zmqshell.Shell."""

        def _alias(self, name, rest):
                """IPython's Alias.__call__: %l is the whole line, each %s one word."""
                cmd = self.aliases[name]
                if "%l" in cmd:
                        cmd, rest = cmd.replace("%l", rest), ""
                nargs = cmd.count("%s") - cmd.count("%%s")
                if nargs == 0:
                        if cmd.find("%%s") >= 1:
                                cmd = cmd.replace("%%s", "%s")
                        cmd = f"{cmd} {rest}"
                else:
                        args = rest.split(None, nargs)
                        if len(args) < nargs:
                                raise UsageError(f"Alias <{name}> requires {nargs} arguments, {len(args)} given.")
                        cmd = "%s %s" % (cmd % tuple(args[:nargs]), " ".join(args[nargs:]))
                self.system(cmd)

        def magic_alias(self, line):
                """IPython's %alias NAME CMD; without arguments, the aliases."""
                if not line:
                        print("Total number of aliases:", len(self.aliases))
                        sys.stdout.flush()
                        return sorted(self.aliases.items())
                name, cmd = line.split(None, 1)  # one word: IPython's ValueError too
                if name in ("cd", "popd", "pushd", "dhist", "alias", "unalias"):
                        print(f"The name {name} can't be aliased because it is a keyword or builtin.")
                elif name in _IPYTHON_LINE_MAGICS or hasattr(self, "magic_" + name):
                        print(f"The name {name} can't be aliased because it is another magic command.")
                elif cmd.count("%s") - cmd.count("%%s") > 0 and "%l" in cmd:
                        print("The %s and %l specifiers are mutually exclusive in alias definitions.")
                else:
                        self.aliases[name] = cmd

        def magic_sx(self, line):
                """IPython's %sx / %system: the command's output lines (an SList)."""
                return self.getoutput(line)

        magic_system = magic_sx

        def magic_unalias(self, line):
                """IPython's %unalias NAME."""
                name = line.strip()
                if name not in self.aliases:
                        print(f"{name} is not an alias")  # IPython's ValueError, printed
                        return
                del self.aliases[name]

        def magic_pycat(self, line):
                """IPython's %pycat: the file to the pager (a payload E2B drops)."""
                if not line.strip():
                        raise UsageError("Missing filename, URL, input history range, or element in "
                                         "the user namespace.")
                try:
                        self._find_user_code(line.strip())
                except (ValueError, OSError):
                        print("Error: no such file, variable, URL, history range or macro")

        def magic_pwd(self, line):
                return os.getcwd()

        def magic_cd(self, line):
                target = os.path.expanduser(line or "~")
                if target == "-":
                        target = self.kernel.oldpwd or os.getcwd()
                old = os.getcwd()
                try:
                        os.chdir(target)
                except OSError as e:
                        print(f"[Errno {e.errno}] {e.strerror}: {target!r}")
                        return None
                self.kernel.oldpwd = old
                self.user_ns.setdefault("_dh", []).append(os.getcwd())
                print(os.getcwd())

        def magic_pushd(self, line):
                """IPython's %pushd [DIR]: the current directory onto the stack (home
                as ~), then %cd DIR; returns the stack."""
                stack = self.dir_stack
                cwd = os.getcwd().replace(os.path.expanduser("~"), "~")
                if line:
                        self.magic_cd(line)
                stack.insert(0, cwd)
                return stack

        def magic_popd(self, line):
                stack = self.dir_stack
                if not stack:
                        raise UsageError("%popd on empty stack")
                top = stack.pop(0)
                self.magic_cd(top)
                print("popd ->", top)

        def magic_dirs(self, line):
                return self.dir_stack

        def magic_env(self, line):
                """IPython's %env: the environment (likely secrets hidden), one
                variable, or %set_env."""
                if line:
                        if len(line.split("=" if "=" in line else " ")) > 1:
                                return self.magic_set_env(line)
                        if line in os.environ:
                                return os.environ[line]
                        raise UsageError(f"Environment does not have key: {line}")
                env = dict(os.environ)
                for key in env:
                        if any(s in key.lower() for s in ("key", "token", "secret")):
                                env[key] = "<hidden>"
                return env

        def magic_set_env(self, line):
                bits = line.split("=" if "=" in line else " ", 1)
                if not line or len(bits) < 2:
                        raise UsageError("usage is 'set_env var=val'")
                var, val = bits[0].strip(), bits[1].strip()
                if re.match(r".*\s.*", var):
                        raise UsageError(f"refusing to set env var with whitespace: '{val}'")
                os.environ[var] = val
                print(f"env: {var}={val}")

        def cell_magic_writefile(self, line, cell):
                import shlex
                args = shlex.split(line, posix=False)
                append = "-a" in args or "--append" in args
                name = [a for a in args if not a.startswith("-")][0]
                if re.match(r"^(\'.*\')|(\".*\")$", name):
                        name = name[1:-1]
                path = os.path.expanduser(name)
                if os.path.exists(path):
                        print(f"{'Appending to' if append else 'Overwriting'} {path}")
                else:
                        print(f"Writing {path}")
                with open(path, "a" if append else "w", encoding="utf-8") as f:
                        f.write(cell)

        cell_magic_file = cell_magic_writefile  # IPython's %%file: an alias

        def magic_less(self, line):
                """ipykernel's %less / %more: the file to the pager (a payload E2B
                drops); only a missing name or an unreadable file shows."""
                if not line:
                        raise UsageError("Missing filename.")
                with open(line) as f:
                        f.read()

        magic_more = magic_less
