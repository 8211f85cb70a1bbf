"""IPython.core.magics.code's counterpart: %load."""

import os

from ..error import UsageError


class CodeMagics:
        """IPython's CodeMagics (IPython.core.magics.code), mixed into zmqshell.Shell."""

        def _find_user_code(self, target):
                """IPython's find_user_code: input history, a file (.py optional), or
                a string in the user's namespace."""
                text = self._history_range(target)
                if text:
                        return text
                for path in (target + ".py", target) if not target.endswith(".py") else (target,):
                        path = os.path.expanduser(path)
                        if os.path.isfile(path):
                                with open(path, encoding="utf-8", errors="replace") as f:
                                        return f.read()
                        if os.path.isdir(path):
                                raise ValueError(f"'{target}' is a directory, not a regular file.")
                try:
                        obj = eval(target, self.user_ns)
                except Exception as e:
                        raise ValueError(f"'{target}' was not found in history, as a file, url, "
                                         "nor in the user namespace.") from e
                if isinstance(obj, str):
                        return obj
                raise TypeError(f"{target} is neither a string nor a macro.")

        def magic_load(self, line):
                """IPython's %load: the code becomes the frontend's next input (a
                payload E2B drops): only errors show."""
                args = [a for a in line.split() if not a.startswith("-")]
                if not args:
                        raise UsageError("Missing filename, URL, input history range, or element in "
                                         "the user namespace.")
                self._find_user_code(args[-1])

        magic_loadpy = magic_load
