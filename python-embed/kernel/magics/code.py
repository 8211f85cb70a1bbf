"""IPython.core.magics.code's counterpart: %load."""

import os

from ..error import UsageError
from ..foreign_frames import as_if_in_ipython, chained, ipython_calling_on, ipython_raising_from


# A target found nowhere fails in IPython's find_user_code, called by %load:
# the ValueError chained from eval's error, each frame at its line there.
def _eval_target(user_ns, target, raw, py_only, skip_encoding_cookie, search_ns):
        return eval(target, user_ns)


def _raise(error, target, raw, py_only, skip_encoding_cookie, search_ns):
        raise error


_FIND = dict(qualname="InteractiveShell.find_user_code",
             params=("self", "target", "raw", "py_only", "skip_encoding_cookie", "search_ns"))
_find_eval = as_if_in_ipython(_eval_target, "core/interactiveshell.py", 3702, **_FIND)
_find_raise_not_found = ipython_raising_from("core/interactiveshell.py", 3704, **_FIND)
_find_raise_directory = as_if_in_ipython(_raise, "core/interactiveshell.py", 3693, **_FIND)
_find_raise_not_code = as_if_in_ipython(_raise, "core/interactiveshell.py", 3712, **_FIND)
_LOAD_FIND_USER_CODE = ipython_calling_on("core/magics/code.py", 359, "CodeMagics.load", ("self", "arg_s"), carets=9)


class CodeMagics:
        """IPython's CodeMagics (IPython.core.magics.code), mixed into zmqshell.Shell."""

        def _find_user_code(self, target, raw=True):
                """IPython's find_user_code: input history, a file (.py optional), or
                a string or Macro in the user's namespace."""
                from ..macro import Macro
                text = self._history_range(target, raw)
                if text:
                        return text
                for path in (target + ".py", target) if not target.endswith(".py") else (target,):
                        path = os.path.expanduser(path)
                        if os.path.isfile(path):
                                with open(path, encoding="utf-8", errors="replace") as f:
                                        return f.read()
                        if os.path.isdir(path):
                                _find_raise_directory(ValueError(f"'{target}' is a directory, not a regular file."),
                                                      target, raw, False, True, False)
                try:
                        obj = _find_eval(self.user_ns, target, raw, False, True, False)
                except Exception as e:
                        # The cause's frames start at find_user_code (the stand-in).
                        _find_raise_not_found(ValueError(f"'{target}' was not found in history, as a "
                                                         "file, url, nor in the user namespace."),
                                              e.with_traceback(e.__traceback__.tb_next), None, None, None, None)
                if isinstance(obj, str):
                        return obj
                if isinstance(obj, Macro):
                        return obj.value
                _find_raise_not_code(TypeError(f"{target} is neither a string nor a macro.", obj),
                                     target, raw, False, True, False)

        @staticmethod
        def _list_options(line, spec):
                """IPython's parse_options(line, spec, mode='list'): ({flag}, words)."""
                import getopt
                import shlex
                if not line.split():
                        return set(), []
                try:
                        opts, args = getopt.getopt(shlex.split(line), spec)
                except getopt.GetoptError as e:
                        raise UsageError(f'{e.msg} ( allowed: "{spec}" )') from None
                return {o[1:] for o, _ in opts}, args

        def magic_save(self, line):
                """IPython's %save [-r] [-f] [-a] FILE RANGE...: lines of history (or a
                file, string or macro) written to FILE (.py, or .ipy with -r)."""
                opts, args = self._list_options(line, "fra")
                if not args:
                        raise UsageError("Missing filename.")
                raw, append = "r" in opts, "a" in opts
                fname, codefrom = args[0], " ".join(args[1:])
                if not fname.endswith((".py", ".ipy")):
                        fname += ".ipy" if raw else ".py"
                fname = os.path.expanduser(fname)
                exists = os.path.isfile(fname)
                if exists and "f" not in opts and not append:
                        # IPython asks, and E2B's kernel cannot read an answer.
                        print("File `%s` exists. Use `%%save -f %s` to force overwrite" % (fname, line))
                        return
                try:
                        cmds = self._find_user_code(codefrom, raw)
                except (TypeError, ValueError) as e:
                        print(e.args[0])
                        return
                with open(fname, "a" if append else "w", encoding="utf-8") as f:
                        if not exists or not append:
                                f.write("# coding: utf-8\n")
                        f.write(cmds if cmds.endswith("\n") else cmds + "\n")
                print("The following commands were written to file `%s`:" % fname)
                print(cmds)

        def magic_macro(self, line):
                """IPython's %macro [-r] [-q] NAME RANGE...: a Macro of those lines in
                the user's namespace; no argument lists the macros."""
                from ..macro import Macro
                opts, args = self._list_options(line, "rq")
                if not args:
                        return sorted(k for k, v in self.user_ns.items() if isinstance(v, Macro))
                if len(args) == 1:
                        raise UsageError("%macro insufficient args; usage '%macro name n1-n2 n3-4...")
                name, codefrom = args[0], " ".join(args[1:])
                try:
                        lines = self._find_user_code(codefrom, "r" in opts)
                except (ValueError, TypeError) as e:
                        print(e.args[0])
                        return
                macro = Macro(lines)
                self.user_ns[name] = macro
                if "q" not in opts:
                        print("Macro `%s` created. To execute, type its name (without quotes)." % name)
                        print("=== Macro contents: ===")
                        print(macro, end=" ")

        def magic_load(self, line):
                """IPython's %load: the code becomes the frontend's next input (a
                payload E2B drops): only errors show."""
                args = [a for a in line.split() if not a.startswith("-")]
                if not args:
                        raise UsageError("Missing filename, URL, input history range, or element in "
                                         "the user namespace.")
                chained([_LOAD_FIND_USER_CODE], self._find_user_code, args[-1])()

        magic_loadpy = magic_load
