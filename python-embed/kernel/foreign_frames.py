"""Functions whose frames read as another module's (no IPython counterpart).
A warning names the first frame outside matplotlib (matplotlib tells its own
by the frame's module name), and shows that frame's file and line. In
ipykernel those frames are IPython's or matplotlib's own; these functions
stand in for them, so warnings read and filter as there."""

import functools
import linecache
import os
import types
import warnings

IPYTHON = "/usr/lib/python3/dist-packages/IPython/"  # Debian's
# Debian's ipykernel, which the image does not ship: the files whose
# frames stand-ins here show are shipped elsewhere (image-build), their lines
# given to linecache under ipykernel's paths.
IPYKERNEL = "/usr/lib/python3/dist-packages/ipykernel/"
IPYKERNEL_SHIPPED = "/usr/share/cellvm/ipykernel/"
IPYTHON_CORE = IPYTHON + "core/"


def _read_text(path):
        with open(path, encoding="utf-8") as f:
                return f.read()


def _lend_ipykernel_sources():
        """linecache's lazy entries (read at first use, then kept) for ipykernel's
        files, where the image has their shipped copies instead: whichever files
        image-build ships (its IPYKERNEL_SOURCES), so the two lists never differ."""
        try:
                shipped = os.listdir(IPYKERNEL_SHIPPED)
        except OSError:
                return  # not the image (dev mode): ipykernel's own files, if any
        for name in shipped:
                if not os.path.exists(IPYKERNEL + name):
                        linecache.cache[IPYKERNEL + name] = (functools.partial(_read_text, IPYKERNEL_SHIPPED + name),)


_lend_ipykernel_sources()

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


def compiled_at(lines, module, filename, qualname, **names):
        """The function that `lines` ({line number: source text}, the `def`
        first) define, each text at its line of `filename`: a frame whose
        statements stand for lines far apart there. Otherwise as as_if_in."""
        source = ""
        for number, text in sorted(lines.items()):
                source += "\n" * (number - 1 - source.count("\n")) + text + "\n"
        defined = {}
        exec(compile(source, filename, "exec"), {"__builtins__": __builtins__}, defined)
        (func,) = defined.values()
        return as_if_in(func, module, qualname=qualname, **names)


def _ipython_module(path):
        return "IPython." + path[:-3].replace("/", ".")


def as_if_in_ipython(func, path, line, qualname=None, params=None, **names):
        """as_if_in IPython's module at `path` (under IPython/, such as
        "core/magics/script.py"), its file in Debian's IPython, at `line`."""
        return as_if_in(func, _ipython_module(path), IPYTHON + path, line, qualname, params, **names)


def ipython_compiled_at(lines, path, qualname, **names):
        """compiled_at in IPython's module at `path` (under IPython/)."""
        return compiled_at(lines, _ipython_module(path), IPYTHON + path, qualname, **names)


def as_if_in_ipykernel(func, path, line, qualname=None, params=None, **names):
        """as_if_in ipykernel's module at `path` (under ipykernel/, such as
        "zmqshell.py"), its file in Debian's ipykernel, at `line`."""
        return as_if_in(func, "ipykernel." + path[:-3].replace("/", "."), IPYKERNEL + path, line, qualname, params,
                        **names)


def ipykernel_compiled_at(lines, path, qualname, **names):
        """compiled_at in ipykernel's module at `path` (under ipykernel/)."""
        return compiled_at(lines, "ipykernel." + path[:-3].replace("/", "."), IPYKERNEL + path, qualname, **names)


def _taking(func, count):
        """`func` (whose parameters are all it uses, and its only locals) with
        `count` parameters: the ones it has, then unused ones, which only show
        (as_if_in names them all). Its code is otherwise the same."""
        code = func.__code__
        assert code.co_nlocals == code.co_argcount <= count and not (code.co_cellvars or code.co_freevars), func
        unused = tuple(f"unused{i}" for i in range(count - code.co_argcount))
        code = code.replace(co_argcount=count, co_nlocals=count, co_varnames=code.co_varnames + unused)
        return types.FunctionType(code, func.__globals__, func.__name__)


# The bodies of the frames below, each given as many parameters as the frame
# it stands for shows.
def _call_on(call):
        return call()


# The call's span shows in Python's own tracebacks (traceback.print_exc): as
# carets under the frame's line, 6 for call() above, 9 for this one's, the
# width the frames that passed their last argument on (call(arg)) showed.
def _call_on_9(call_on):
        return call_on()


_CALL_ON_BODIES = {6: _call_on, 9: _call_on_9}


def _raise(error):
        raise error


def _raise_from(error, cause):
        raise error from cause


# Frames that call on: the first argument called with nothing, each frame's
# own arguments unused. Chained (chained, through), such frames stand for a
# call path through another library's code.
def calling_on(module, filename, line, qualname, params, carets=6):
        """A frame at `filename`:`line` of `module` whose parameters show as
        `params` (at least one): called as f(call, ...), it returns call().
        `carets`: 6 or 9, the width of its call in Python's own tracebacks."""
        return as_if_in(_taking(_CALL_ON_BODIES[carets], len(params)), module, filename, line, qualname, params)


def ipython_calling_on(path, line, qualname, params, carets=6):
        """calling_on in IPython's module at `path` (under IPython/)."""
        return calling_on(_ipython_module(path), IPYTHON + path, line, qualname, params, carets)


def ipykernel_calling_on(path, line, qualname, params, carets=6):
        """calling_on in ipykernel's module at `path` (under ipykernel/)."""
        return as_if_in_ipykernel(_taking(_CALL_ON_BODIES[carets], len(params)), path, line, qualname, params)


def chained(frames, final, *args, **kwargs):
        """final(*args, **kwargs) as called through `frames` (calling_on
        frames, outermost first), each frame's other arguments None: a
        callable of no arguments, which puts no frame of its own between its
        caller and `frames` (through's frame is there)."""
        call = functools.partial(final, *args, **kwargs) if args or kwargs else final
        for frame in reversed(frames):
                call = functools.partial(frame, call, *[None] * (frame.__code__.co_argcount - 1))
        return call


def through(frames, final):
        """final() called through `frames` (calling_on frames, outermost first)."""
        return chained(frames, final)()


TRAITLETS = "/usr/lib/python3/dist-packages/traitlets/traitlets.py"  # Debian's


def traitlets_calling_on(frames):
        """calling_on frames in traitlets' module, each given as (line, qualname,
        params): the path by which a trait's setter reaches a validator or an
        observer."""
        return [calling_on("traitlets.traitlets", TRAITLETS, line, qualname, params, carets=9)
                for line, qualname, params in frames]


# Frames that raise an error: IPython's or ipykernel's own `raise X(...)`.
def ipython_raising(path, line, qualname, params):
        """A frame at IPython's `path`:`line` whose parameters show as `params`
        (at least one): called as f(error, ...), it raises error."""
        return as_if_in_ipython(_taking(_raise, len(params)), path, line, qualname, params)


def ipykernel_raising(path, line, qualname, params):
        """ipython_raising in ipykernel's module at `path` (under ipykernel/)."""
        return as_if_in_ipykernel(_taking(_raise, len(params)), path, line, qualname, params)


# Frames that raise an error chained from its cause: IPython's `raise X from e`.
def ipython_raising_from(path, line, qualname, params):
        """A frame at IPython's `path`:`line` whose parameters show as `params`
        (at least two): called as f(error, cause, ...), it raises error from
        cause."""
        return as_if_in_ipython(_taking(_raise_from, len(params)), path, line, qualname, params)


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
