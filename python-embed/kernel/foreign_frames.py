"""Functions whose frames read as another module's (no IPython counterpart).
A warning names the first frame outside matplotlib (matplotlib tells its own
by the frame's module name), and shows that frame's file and line. In
ipykernel those frames are IPython's or matplotlib's own; these functions
stand in for them, so warnings read and filter as there."""

import functools
import types
import warnings

IPYTHON = "/usr/lib/python3/dist-packages/IPython/"  # Debian's
# Debian's ipykernel, which the image does not ship: its frames show no source there.
IPYKERNEL = "/usr/lib/python3/dist-packages/ipykernel/"
IPYTHON_CORE = IPYTHON + "core/"

# Code given a qualname here: a traceback takes it from the code, where it
# would take it from the function's definition in the source file.
NAMED_CODES = set()


def as_if_in(func, module, filename=None, line=None, qualname=None, params=None, **names):
        """`func` with globals of its own: `module` as their __name__, and
        `names`. Given `filename` and `line`, its code is at that file with its
        one-line body at that line (the source shown is read from the file);
        given `qualname`, a traceback names it so (a method of that class);
        given `params`, its parameters show with those names (its own names
        can say what it is given, where the frame it stands for differs)."""
        code = func.__code__
        if params is not None:
                assert len(params) == code.co_argcount, (func, params)
                code = code.replace(co_varnames=tuple(params) + code.co_varnames[len(params):])
        if filename is not None:
                code = code.replace(co_filename=filename, co_firstlineno=line - 1)
        if qualname is not None:
                code = code.replace(co_name=qualname.rpartition(".")[2], co_qualname=qualname)
                NAMED_CODES.add(code)
        new = types.FunctionType(code, {"__name__": module, "__builtins__": __builtins__, **names},
                                 code.co_name, func.__defaults__, func.__closure__)
        new.__kwdefaults__ = func.__kwdefaults__
        return new


def _ipython_module(path):
        return "IPython." + path[:-3].replace("/", ".")


def as_if_in_ipython(func, path, line, qualname=None, params=None, **names):
        """as_if_in IPython's module at `path` (under IPython/, such as
        "core/magics/script.py"), its file in Debian's IPython, at `line`."""
        return as_if_in(func, _ipython_module(path), IPYTHON + path, line, qualname, params, **names)


# Frames that only pass a call on: the first argument called with the last.
def _pass_on_2(call, arg):
        return call(arg)


def _pass_on_3(call, unused, arg):
        return call(arg)


def _pass_on_4(call, unused, unused2, arg):
        return call(arg)


_PASS_ON = {2: _pass_on_2, 3: _pass_on_3, 4: _pass_on_4}


def passing_on(module, filename, line, qualname, params):
        """A frame at `filename`:`line` of `module` whose parameters show as
        `params` (two to four): called as f(call, ..., arg), it returns
        call(arg). Chained with functools.partial, such frames stand for a
        call path through another library's code."""
        return as_if_in(_PASS_ON[len(params)], module, filename, line, qualname, params)


def ipython_passing_on(path, line, qualname, params):
        """passing_on in IPython's module at `path` (under IPython/)."""
        return passing_on(_ipython_module(path), IPYTHON + path, line, qualname, params)


TRAITLETS = "/usr/lib/python3/dist-packages/traitlets/traitlets.py"  # Debian's


def through_traitlets(call, frames):
        """`call`, passed on through traitlets' frames, each (line, qualname,
        params) with two to four params (its argument last), outermost first:
        called with one argument, as a trait's setter reaches a validator or an
        observer."""
        for line, qualname, params in reversed(frames):
                frame = passing_on("traitlets.traitlets", TRAITLETS, line, qualname, params)
                call = functools.partial(frame, call, *[None] * (len(params) - 2))
        return call


# Frames that raise an error: IPython's or ipykernel's own `raise X(...)`.
def _raise_1(error):
        raise error


def _raise_2(error, unused):
        raise error


def _raise_3(error, unused, unused2):
        raise error


def _raise_4(error, unused, unused2, unused3):
        raise error


_RAISE = {1: _raise_1, 2: _raise_2, 3: _raise_3, 4: _raise_4}


def ipython_raising(path, line, qualname, params):
        """A frame at IPython's `path`:`line` whose parameters show as `params`
        (one to four): called as f(error, ...), it raises error."""
        return as_if_in_ipython(_RAISE[len(params)], path, line, qualname, params)


def ipykernel_raising(path, line, qualname, params):
        """ipython_raising in ipykernel's module at `path` (under ipykernel/)."""
        return as_if_in(_RAISE[len(params)], "ipykernel." + path[:-3].replace("/", "."), IPYKERNEL + path, line,
                        qualname, params)


# Frames that raise an error chained from its cause: IPython's `raise X from e`.
def _raise_from_2(error, cause):
        raise error from cause


def _raise_from_4(error, cause, unused, unused2):
        raise error from cause


def _raise_from_6(error, cause, unused, unused2, unused3, unused4):
        raise error from cause


_RAISE_FROM = {2: _raise_from_2, 4: _raise_from_4, 6: _raise_from_6}


def ipython_raising_from(path, line, qualname, params):
        """A frame at IPython's `path`:`line` whose parameters show as `params`
        (two, four or six): called as f(error, cause, ...), it raises error
        from cause."""
        return as_if_in_ipython(_RAISE_FROM[len(params)], path, line, qualname, params)


# Frames that call on with nothing to pass: the first argument called.
def _call_on_1(call):
        return call()


def _call_on_2(call, unused):
        return call()


def _call_on_3(call, unused, unused2):
        return call()


def _call_on_4(call, unused, unused2, unused3):
        return call()


_CALL_ON = {1: _call_on_1, 2: _call_on_2, 3: _call_on_3, 4: _call_on_4}


def calling_on(module, filename, line, qualname, params):
        """A frame at `filename`:`line` of `module` whose parameters show as
        `params` (one to four): called as f(call, ...), it returns call()."""
        return as_if_in(_CALL_ON[len(params)], module, filename, line, qualname, params)


def ipython_calling_on(path, line, qualname, params):
        """calling_on in IPython's module at `path` (under IPython/)."""
        return calling_on(_ipython_module(path), IPYTHON + path, line, qualname, params)


def through(frames, final):
        """final() called through `frames` (calling_on frames, outermost first)."""
        call = final
        for frame in reversed(frames):
                call = functools.partial(frame, call, *[None] * (frame.__code__.co_argcount - 1))
        return call()


# One warning registry per module a warning is said to come from, as Python
# keeps one per module: each text warns once until the filters change.
_registries = {}


def warn_as_if_from(message, category, path, line):
        """warnings.warn_explicit as if from IPython's module at `path` (under
        IPython/), at `line` (Debian's IPython, whose source line shows)."""
        module = _ipython_module(path)
        warnings.warn_explicit(message, category, IPYTHON + path, line, module=module,
                               registry=_registries.setdefault(module, {}))


def frames_from(tb, code):
        """The part of traceback `tb` from the frame running `code` on, or None
        where no frame runs it: where IPython's own call cuts a traceback."""
        while tb is not None and tb.tb_frame.f_code is not code:
                tb = tb.tb_next
        return tb
