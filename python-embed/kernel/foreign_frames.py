"""Functions whose frames read as another module's (no IPython counterpart).
A warning names the first frame outside matplotlib (matplotlib tells its own
by the frame's module name), and shows that frame's file and line. In
ipykernel those frames are IPython's or matplotlib's own; these functions
stand in for them, so warnings read and filter as there."""

import types

IPYTHON_CORE = "/usr/lib/python3/dist-packages/IPython/core/"

# Code given a qualname here: a traceback takes it from the code, where it
# would take it from the function's definition in the source file.
NAMED_CODES = set()


def as_if_in(func, module, filename=None, line=None, qualname=None, **names):
        """`func` with globals of its own: `module` as their __name__, and
        `names`. Given `filename` and `line`, its code is at that file with its
        one-line body at that line (the source shown is read from the file);
        given `qualname`, a traceback names it so (a method of that class)."""
        code = func.__code__
        if filename is not None:
                code = code.replace(co_filename=filename, co_firstlineno=line - 1)
        if qualname is not None:
                code = code.replace(co_name=qualname.rpartition(".")[2], co_qualname=qualname)
                NAMED_CODES.add(code)
        return types.FunctionType(code, {"__name__": module, "__builtins__": __builtins__, **names},
                                  code.co_name)
