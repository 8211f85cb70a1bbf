"""IPython.core.macro's counterpart: Macro, what %macro makes; a one-line
cell that names one runs its code (IPython's MacroHandler)."""

import re

_CODING = re.compile(r"#\s*coding[:=]\s*([-\w.]+)")


class Macro:
        """IPython's Macro: the code as one string (coding lines dropped)."""

        def __init__(self, code):
                self.value = "\n".join(ln for ln in code.splitlines() if not _CODING.match(ln)) + "\n"

        def __str__(self):
                return self.value

        def __repr__(self):
                return "IPython.macro.Macro(%s)" % repr(self.value)

        def __getstate__(self):
                return {"value": self.value}

        def __add__(self, other):
                if isinstance(other, Macro):
                        return Macro(self.value + other.value)
                if isinstance(other, str):
                        return Macro(self.value + other)
                raise TypeError
