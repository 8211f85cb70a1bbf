"""IPython.core.magics.osm's counterpart: the shell and the file system
(%cd, %pushd, %env, %alias, %sx, %%writefile...)."""

import os
import re
import sys

from ..error import UsageError
from ..foreign_frames import (as_if_in_ipykernel, as_if_in_ipython, chained, ipykernel_calling_on, ipython_calling_on,
                              ipython_raising)
from . import magic_parser, parse_options


_SX_GETOUTPUT = ipython_calling_on("core/magics/osm.py", 724, "OSMagics.sx", ("self", "line", "cell"), carets=9)
# What IPython 8.5's %cd and %dhist fail with on their Path-holding _dh and a
# map, at their lines.
_cd_refused = ipython_raising("core/magics/osm.py", 368, "OSMagics.cd", ("self", "parameter_s"))
_dhist_refused = ipython_raising("core/magics/osm.py", 550, "OSMagics.dhist", ("self", "parameter_s"))


# ipykernel's %less reads a file; an unreadable one shows its frame (Debian's
# ipykernel, which the image does not ship: no source), and for a .py file
# IPython's read_py_file's, then tokenize.open's.
def _read_file(self, arg_s):
        return open(arg_s).read()


_less_read = as_if_in_ipykernel(_read_file, "zmqshell.py", 329, qualname="KernelMagics.less")
_LESS_READ_PY = [ipykernel_calling_on("zmqshell.py", 327, "KernelMagics.less", ("self", "arg_s"), carets=9),
                  ipython_calling_on("utils/openpy.py", 77, "read_py_file", ("filename", "skip_encoding_cookie"),
                                     carets=9)]


# %%writefile writes from IPython's OSMagics.writefile frame (a missing
# directory's error shows it).
def _write_cell(path, mode, cell):
        with open(path, mode, encoding="utf-8") as f: f.write(cell)  # noqa: E701


_write_cell = as_if_in_ipython(_write_cell, "core/magics/osm.py", 854, qualname="OSMagics.writefile",
                               params=("self", "line", "cell"))


# IPython's default aliases (IPython.core.alias.default_aliases on Linux):
# %ls & co. run through the shell as !ls would.
_ALIASES = {"mkdir": "mkdir", "rmdir": "rmdir", "mv": "mv", "rm": "rm", "cp": "cp", "cat": "cat",
            "ls": "ls -F --color", "ll": "ls -F -o --color",
            "lf": "ls -F -o --color %l | grep ^-", "lk": "ls -F -o --color %l | grep ^l",
            "ldir": "ls -F -o --color %l | grep /$", "lx": "ls -F -o --color %l | grep ^-..x"}

# IPython's AliasManager refuses these names (keywords and builtins of its own).
_NOT_ALIASED = frozenset({"cd", "popd", "pushd", "dhist", "alias", "unalias"})


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
                if name in _NOT_ALIASED:
                        print(f"The name {name} can't be aliased because it is a keyword or builtin.")
                elif self.is_magic_name(name):
                        print(f"The name {name} can't be aliased because it is another magic command.")
                elif cmd.count("%s") - cmd.count("%%s") > 0 and "%l" in cmd:
                        print("The %s and %l specifiers are mutually exclusive in alias definitions.")
                else:
                        self.aliases[name] = cmd

        def magic_rehashx(self, line):
                """IPython's %rehashx: every executable on $PATH an alias of
                itself (dots left out of its name), the first found winning;
                names that are magics or kept words stay as they are."""
                found = []
                for d in os.environ.get("PATH", "").split(os.pathsep):
                        try:
                                entries = list(os.scandir(os.path.abspath(os.path.expanduser(d))))
                        except OSError:
                                continue
                        for entry in entries:
                                try:
                                        if not (entry.is_file() and os.access(entry.path, os.X_OK)):
                                                continue
                                except OSError:
                                        continue
                                name = entry.name.replace(".", "")
                                if entry.name not in self.aliases:
                                        if name in _NOT_ALIASED or self.is_magic_name(name):
                                                continue
                                        self.aliases[name] = entry.name
                                found.append(entry.name)  # an alias already too
                self.db["syscmdlist"] = found  # as IPython keeps it

        def magic_sx(self, line):
                """IPython's %sx / %system: the command's output lines (an SList)."""
                return chained([_SX_GETOUTPUT], self.getoutput, line)()

        magic_system = magic_sx

        def magic_sc(self, line):
                """IPython's deprecated %sc [-l] [-v] VAR=COMMAND: the command's output
                (an LSString, an SList with -l) kept in VAR; without `=`, returned."""
                opts, args = parse_options(line, "lv")
                # The name from the words left after the options, the command
                # from the line as typed (shlex would strip its quotes).
                var, eq, _ = " ".join(args).partition("=")
                cmd = line.partition("=")[2] if eq else ""
                var = var.strip() if eq else ""
                out = self.getoutput(cmd, split="l" in opts)
                if "v" in opts:
                        from pprint import pformat
                        print("%s ==\n%s" % (var, pformat(out)))
                if not var:
                        return out
                self.user_ns[var] = out

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
                """IPython's %cd [-q] [-b] DIR, %cd -, %cd -N (the N-th entry of _dh),
                %cd --PART (the last _dh entry matching), %cd BOOKMARK."""
                dh = self.user_ns.setdefault("_dh", [])
                quiet = False
                numcd = re.match(r"(-)(\d+)$", line)
                if numcd:
                        try:
                                ps = dh[int(numcd.group(2))]
                        except IndexError:
                                print("The requested directory does not exist in history.")
                                return
                elif line.startswith("--"):
                        pat, ps = line[2:], None
                        for ent in reversed(dh):  # the basename first, then the whole path
                                if pat in os.path.basename(ent) and os.path.isdir(ent):
                                        ps = ent
                                        break
                                # IPython 8.5 then looks for PART in the whole path, a Path
                                # (its _dh holds Paths; here str), which `in` refuses.
                                _cd_refused(TypeError("argument of type 'PosixPath' is not iterable"), line)
                        if ps is None:
                                print("No matching entry in directory history")
                                return
                else:
                        opts, ps = self._cd_options(line)
                        quiet = "q" in opts
                        if ps == "-":
                                if len(dh) < 2:
                                        raise UsageError("%cd -: No previous directory to change to.")
                                ps = dh[-2]
                        elif not os.path.isdir(ps) or "b" in opts:
                                bkms = self.db.get("bookmarks", {})
                                if ps in bkms:
                                        print(f"(bookmark:{ps}) -> {bkms[ps]}")
                                        ps = bkms[ps]
                                elif "b" in opts:
                                        raise UsageError(f"Bookmark '{ps}' not found.  "
                                                         "Use '%bookmark -l' to see your bookmarks.")
                try:
                        os.chdir(os.path.expanduser(ps) if ps else os.path.expanduser("~"))
                except OSError as e:
                        print(e)
                else:
                        # IPython compares the old str with a new Path: always unequal.
                        dh.append(os.getcwd())
                        self.db["dhist"] = _compress_dhist(dh)[-100:]
                if not quiet and dh:
                        print(dh[-1])

        @staticmethod
        def _cd_options(line):
                """IPython's parse_options(line, 'qb', mode='string') for %cd: -q/-b
                flags, the other words (shell-unquoted) joined by spaces."""
                opts, args = parse_options(line, "qb")
                return set(opts), " ".join(args)

        def magic_dhist(self, line):
                """IPython's %dhist: the directories %cd visited (_dh). IPython 8.5
                fails on any argument (len() of a map)."""
                dh = self.user_ns.setdefault("_dh", [])
                if line:
                        _dhist_refused(TypeError("object of type 'map' has no len()"), line)
                print("Directory history (kept in _dh)")
                for i, d in enumerate(dh):
                        print("%d: %s" % (i, d))

        def magic_bookmark(self, line):
                """IPython's %bookmark NAME [DIR], -l (list), -d NAME, -r (remove all)."""
                opts, args = parse_options(line, "drl")
                if len(args) > 2:
                        raise UsageError("%bookmark: too many arguments")
                bkms = self.db.get("bookmarks", {})
                if "d" in opts:
                        if not args:
                                raise UsageError("%bookmark -d: must provide a bookmark to delete")
                        if args[0] not in bkms:
                                raise UsageError(f"%bookmark -d: Can't delete bookmark '{args[0]}'")
                        del bkms[args[0]]
                elif "r" in opts:
                        bkms = {}
                elif "l" in opts:
                        size = max(map(len, bkms), default=0)
                        print("Current bookmarks:")
                        for bk in sorted(bkms):
                                print(f"%-{size}s -> %s" % (bk, bkms[bk]))
                elif not args:
                        raise UsageError("%bookmark: You must specify the bookmark name")
                else:
                        bkms[args[0]] = args[1] if len(args) == 2 else os.getcwd()
                self.db["bookmarks"] = bkms

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
                parser = magic_parser("%writefile")
                parser.add_argument("-a", "--append", action="store_true")
                parser.add_argument("filename")
                args = parser.parse_args(shlex.split(line, posix=False))
                append, name = args.append, args.filename
                if re.match(r"^(\'.*\')|(\".*\")$", name):
                        name = name[1:-1]
                path = os.path.expanduser(name)
                if os.path.exists(path):
                        print(f"{'Appending to' if append else 'Overwriting'} {path}")
                else:
                        print(f"Writing {path}")
                _write_cell(path, "a" if append else "w", cell)

        cell_magic_file = cell_magic_writefile  # IPython's %%file: an alias

        def magic_clear(self, line):
                """ipykernel's %clear: `clear` run as !clear is (its escape codes)."""
                self.system("clear")

        def magic_less(self, line):
                """ipykernel's %less / %more: the file to the pager (a payload E2B
                drops); only a missing name or an unreadable file shows."""
                if not line:
                        raise UsageError("Missing filename.")
                if line.endswith(".py"):
                        import tokenize
                        with chained(_LESS_READ_PY, tokenize.open, line)() as f:
                                f.read()
                else:
                        _less_read(None, line)

        magic_more = magic_less

        def magic_man(self, line):
                """ipykernel's %man: `man ARGS | col -b`'s output to the pager (a
                payload E2B drops): nothing shows."""
                self.getoutput(f"man {line} | col -b", split=False)


def _compress_dhist(dh):
        """IPython's compress_dhist: the last 10 entries, and one of each before."""
        head, tail = dh[:-10], dh[-10:]
        seen = set()
        newhead = [h for h in head if not (h in seen or seen.add(h))]
        return newhead + tail
