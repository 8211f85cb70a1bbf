"""IPython.core.magics.code's counterpart: %load."""

import os

from ..error import UsageError
from ..foreign_frames import (as_if_in_ipykernel, as_if_in_ipython, chained, ipykernel_calling_on, ipython_calling_on,
                              ipython_raising_from, warn_as_if_from)
from . import find_py_file, parse_options


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
_LOADPY_LOAD = ipython_calling_on("core/magics/code.py", 313, "CodeMagics.loadpy", ("self", "arg_s"), carets=9)


# ipykernel's %edit (KernelMagics.edit) finds its target with IPython's
# _find_edit_target, whose eval of a name shows its frame when it fails; a
# target found nowhere leaves a None that the edit's os.path.abspath refuses.
def _eval_edit_target(shell, args, opts, last_call):
        return eval(args, shell.user_ns)


_EDIT_FIND = ipykernel_calling_on("zmqshell.py", 288, "KernelMagics.edit", ("self", "parameter_s", "last_call"),
                                  carets=9)
_edit_eval = as_if_in_ipython(_eval_edit_target, "core/magics/code.py", 456, "CodeMagics._find_edit_target")


def _edit_abspath(self, parameter_s, filename):
        return os.path.abspath(filename)


_edit_abspath = as_if_in_ipykernel(_edit_abspath, "zmqshell.py", 296, "KernelMagics.edit",
                                   ("self", "parameter_s", "last_call"), os=os)


def _py_filename(arg):
        """IPython's make_filename in _find_edit_target: the file `arg` names
        (.py optional), or `arg` itself for a .py file still to be made."""
        return find_py_file(arg) or (arg if arg.endswith(".py") else None)


def _source_file_and_line(obj):
        """IPython's find_file and find_source_lines: where `obj` (unwrapped; an
        instance's class) is defined, each None when unknown."""
        import inspect
        try:
                obj = inspect.unwrap(obj)
        except ValueError:
                pass
        found = []
        for get in (inspect.getabsfile, lambda o: inspect.getsourcelines(o)[1]):
                try:
                        found.append(get(obj))
                except TypeError:
                        try:
                                found.append(get(obj.__class__))
                        except (OSError, TypeError):
                                found.append(None)
                except OSError:
                        found.append(None)
        return found


class CodeMagics:
        """IPython's CodeMagics (IPython.core.magics.code), mixed into zmqshell.Shell."""

        def _find_user_code(self, target, raw=True, search_ns=False):
                """IPython's find_user_code: input history, a file (.py optional), an
                object's source (search_ns: %load -n), or a string or Macro in the
                user's namespace."""
                from ..macro import Macro
                text = self._history_range(target, raw)
                if text:
                        return text
                path = find_py_file(target)  # the name as given first, then name.py
                if path:
                        with open(path, encoding="utf-8", errors="replace") as f:
                                return f.read()
                if os.path.isdir(os.path.expanduser(target)):
                        _find_raise_directory(ValueError(f"'{target}' is a directory, not a regular file."),
                                              target, raw, False, True, False)
                if search_ns:
                        import inspect
                        found, obj = self._find_object(target)
                        try:
                                source = inspect.getsource(inspect.unwrap(obj)) if found else None
                        except (OSError, TypeError, ValueError):
                                source = None
                        if source:
                                return source
                try:
                        obj = _find_eval(self.user_ns, target, raw, False, True, search_ns)
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

        def magic_save(self, line):
                """IPython's %save [-r] [-f] [-a] FILE RANGE...: lines of history (or a
                file, string or macro) written to FILE (.py, or .ipy with -r)."""
                opts, args = parse_options(line, "fra")
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
                opts, args = parse_options(line, "rq")
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
                """IPython's %load [-y] [-n] [-s SYMBOLS] [-r RANGES] TARGET: the code
                becomes the frontend's next input (a payload E2B drops), so only
                errors and warnings show. No target: this session's inputs before
                the magic's own line."""
                import ast
                import logging
                opts, words = parse_options(line, "yns:r:")
                contents = chained([_LOAD_FIND_USER_CODE], self._find_user_code, " ".join(words),
                                   search_ns="n" in opts)()
                if "s" in opts:
                        try:
                                body = ast.parse(contents).body
                        except SyntaxError:
                                logging.error("Unable to parse the input as valid Python code")
                                return
                        defined = {getattr(node, "name", None) for node in body}
                        missing = [name for name in opts["s"].split(",") if name not in defined]
                        if len(missing) == 1:
                                warn_as_if_from(f"The symbol `{missing[0]}` was not found", UserWarning,
                                                "core/magics/code.py", 370)
                        elif missing:
                                quoted = [f"`{name}`" for name in missing]
                                warn_as_if_from(f"The symbols {', '.join(quoted[:-1])} and {quoted[-1]} were "
                                                "not found", UserWarning, "core/magics/code.py", 372)

        def magic_loadpy(self, line):
                """IPython's %loadpy, which calls %load."""
                chained([_LOADPY_LOAD], self.magic_load, line)()

        # ipykernel's %edit keeps the last call's (prompt count, target) here.
        _edit_last_call = ("", "")

        def magic_edit(self, line):
                """ipykernel's %edit [-p] [-r] [-n LINE] [TARGET]: the file to edit goes
                to the frontend (a payload E2B drops). History lines, a string, or
                nothing are written to a new temporary file first, whose name it
                prints; a macro, or a target found nowhere, is said so."""
                from ..macro import Macro
                opts, words = parse_options(line, "prn:")
                args = " ".join(words)
                last_count, last_args = self._edit_last_call
                if "p" in opts:
                        args = f"_{last_count}" if f"_{last_count}" in self.user_ns else last_args
                use_temp, data = True, ""
                filename = _py_filename(args)
                if filename:
                        use_temp = False
                elif args:
                        data = self._history_range(args, "r" in opts)
                        if not data:
                                try:
                                        data = chained([_EDIT_FIND], _edit_eval, self, args, opts, None)()
                                except (NameError, SyntaxError):
                                        filename = _py_filename(args)
                                        if filename is None:
                                                warn_as_if_from(f"Argument given ({args}) can't be found as a "
                                                                "variable or as a filename.", UserWarning,
                                                                "core/magics/code.py", 464)
                                        use_temp = False
                                else:
                                        if isinstance(data, Macro):
                                                print("Macro editing not yet implemented in 2-process model.")
                                                return
                                        if not isinstance(data, str):
                                                use_temp = False
                                                filename, lineno = _source_file_and_line(data)
                                                if filename is None:
                                                        filename = _py_filename(args)
                                                        if filename is not None:
                                                                warn_as_if_from(
                                                                    f"Could not find file where `{args}` is defined.\n"
                                                                    f"Opening a file named `{filename}`", UserWarning,
                                                                    "core/magics/code.py", 504)
                                                if opts.get("n") is None and lineno is None:
                                                        filename = _py_filename(args)
                                                        if filename is None:
                                                                warn_as_if_from(f"The file where `{data}` was defined "
                                                                                "cannot be read or found.", UserWarning,
                                                                                "core/magics/code.py", 514)
                if use_temp:
                        import tempfile
                        folder = tempfile.mkdtemp(prefix="ipython_edit_")
                        fd, filename = tempfile.mkstemp(".py", "ipython_edit_", dir=folder)
                        with os.fdopen(fd, "w", encoding="utf-8") as f:
                                f.write(data)
                        print("IPython will make a temporary file named:", filename)
                if filename is not None:  # else IPython's search gave up before it
                        self._edit_last_call = (self.displayhook.prompt_count, last_args if "p" in opts else args)
                _edit_abspath(self, line, filename)

        magic_ed = magic_edit
