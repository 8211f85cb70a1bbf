"""text/plain rendering of values, byte-identical to IPython 8.5.

cellvm is compared against ipykernel, whose text/plain comes from
IPython.core.formatters.PlainTextFormatter with its defaults (pprint on,
width 79, at most 1000 items per collection, "\\n" newlines).  The guest image
has no IPython, so this module re-implements that printer with the standard
library only.

The layout engine is the Oppen-style printer IPython inherited from Ruby's
prettyprint: text and breakable separators are buffered per group, and when a
line overflows the outermost group that still has separators is broken.  Which
group breaks depends on the exact sequence of begin/end group calls (every
nested `pretty()` call opens a group of its own), so each printer below makes
the same calls, in the same order, as IPython's; two quirks of IPython's group
queue are reproduced on purpose and marked as such.

Objects may define `_repr_pretty_(p, cycle)`; `p` offers the IPython printer
API (text, breakable, break_, begin_group, end_group, group, indent, pretty).

Importing this module must stay cheap (it is loaded into every executor):
nothing beyond modules the interpreter has already loaded is imported until
something needs it.
"""

import io
import os
import sys

__all__ = ["pretty", "PrettyPrinter", "MAX_SEQ_LENGTH"]

MAX_SEQ_LENGTH = 1000

# Modules whose names IPython leaves off qualified names.
_BUILTIN_MODULES = ("__builtin__", "builtins", "exceptions")


def pretty(obj, max_width=79, max_seq_length=MAX_SEQ_LENGTH, newline="\n", verbose=False, shared=False):
    """Return the text/plain IPython would show for `obj`.

    Exceptions raised by the object's own repr / _repr_pretty_ propagate;
    the caller decides how to report a failing formatter. `shared`: the
    printer tables are the module's own (the PlainTextFormatter's, as IPython
    gives its printer the formatter's), so a printer registered by name moves
    to the ones by class at its first use, for good; else copies of them.
    """
    printer = PrettyPrinter(max_width, newline, max_seq_length, verbose, shared)
    printer.pretty(obj)
    printer.flush()
    return printer.output.getvalue()


def _safe_getattr(obj, name, default=None):
    """getattr that treats any exception from a property as absent."""
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


# ---------------------------------------------------------------------------
# Layout engine


class _Group:
    """A run of output whose breakables break together."""

    __slots__ = ("depth", "breakables", "want_break")

    def __init__(self, depth, deque):
        self.depth = depth
        self.breakables = deque()
        self.want_break = False


class _Text:
    """Consecutive literal text waiting in the buffer."""

    __slots__ = ("parts", "width")

    def __init__(self):
        self.parts = []
        self.width = 0

    def emit(self, printer, column):
        printer.output.write("".join(self.parts))
        return column + self.width


class _Breakable:
    """A separator that becomes a newline if its group is broken."""

    __slots__ = ("sep", "width", "indentation", "group")

    def __init__(self, sep, indentation, group):
        self.sep = sep
        self.width = len(sep)
        self.indentation = indentation
        self.group = group
        group.breakables.append(self)

    def emit(self, printer, column):
        group = self.group
        group.breakables.popleft()
        if group.want_break:
            printer.output.write(printer.newline + " " * self.indentation)
            return self.indentation
        if not group.breakables:
            printer._unqueue(group)
        printer.output.write(self.sep)
        return column + self.width


class _Indented:
    """Context manager behind `PrettyPrinter.indent`."""

    __slots__ = ("printer", "amount")

    def __init__(self, printer, amount):
        self.printer = printer
        self.amount = amount

    def __enter__(self):
        self.printer.indentation += self.amount

    def __exit__(self, *exc):
        self.printer.indentation -= self.amount
        return False


class _Grouped:
    """Context manager behind `PrettyPrinter.group`."""

    __slots__ = ("printer", "indent", "open", "close")

    def __init__(self, printer, indent, open, close):
        self.printer = printer
        self.indent = indent
        self.open = open
        self.close = close

    def __enter__(self):
        self.printer.begin_group(self.indent, self.open)

    def __exit__(self, *exc):
        self.printer.end_group(self.indent, self.close)
        return False


class PrettyPrinter:
    """Pretty printer with the API of IPython.lib.pretty.RepresentationPrinter."""

    def __init__(self, max_width=79, newline="\n", max_seq_length=MAX_SEQ_LENGTH, verbose=False, shared=False):
        from collections import deque

        self._deque = deque
        self.output = io.StringIO()
        self.max_width = max_width
        self.newline = newline
        self.max_seq_length = max_seq_length
        self.verbose = verbose
        self.output_width = 0
        self.buffer_width = 0
        self.buffer = deque()
        self.indentation = 0
        # ids of the objects being printed, innermost last: detects cycles.
        self.stack = []
        root = _Group(0, deque)
        self.group_stack = [root]
        # Groups that may still be broken, one list per nesting depth.
        self._levels = [[root]]
        self.type_pprinters = _type_printers() if shared else dict(_type_printers())
        self.deferred_pprinters = _DEFERRED_PRINTERS if shared else dict(_DEFERRED_PRINTERS)

    # -- group queue --------------------------------------------------------

    def _enqueue(self, group):
        while group.depth >= len(self._levels):
            self._levels.append([])
        self._levels[group.depth].append(group)

    def _unqueue(self, group):
        try:
            self._levels[group.depth].remove(group)
        except ValueError:
            pass

    def _next_group_to_break(self):
        """Pick the outermost group that has separators and mark it broken.

        Levels passed over without such a group are marked broken and
        dropped.  IPython scans a level newest-first but then deletes the
        entry at that same index counted from the front; the entry it drops
        (not always the one returned) decides later choices, so that exact
        behaviour is kept here.
        """
        for level in self._levels:
            count = len(level)
            for offset in range(count):
                group = level[count - 1 - offset]
                if group.breakables:
                    del level[offset]
                    group.want_break = True
                    return group
            for group in level:
                group.want_break = True
            level.clear()
        return None

    # -- buffer -------------------------------------------------------------

    def _emit_head(self):
        item = self.buffer.popleft()
        self.output_width = item.emit(self, self.output_width)
        self.buffer_width -= item.width

    def _break_group(self, group):
        while group.breakables:
            self._emit_head()
        while self.buffer and isinstance(self.buffer[0], _Text):
            self._emit_head()

    def _fit_line(self):
        while self.max_width < self.output_width + self.buffer_width:
            group = self._next_group_to_break()
            if group is None:
                return
            self._break_group(group)

    def _newline(self):
        self.output.write(self.newline + " " * self.indentation)
        self.output_width = self.indentation
        self.buffer_width = 0

    # -- public printer API (same names and semantics as IPython's) ---------

    def text(self, obj):
        """Append literal text."""
        width = len(obj)
        if not self.buffer:
            self.output.write(obj)
            self.output_width += width
            return
        last = self.buffer[-1]
        if not isinstance(last, _Text):
            last = _Text()
            self.buffer.append(last)
        last.parts.append(obj)
        last.width += width
        self.buffer_width += width
        self._fit_line()

    def breakable(self, sep=" "):
        """Append `sep`, or a newline if the enclosing group gets broken."""
        group = self.group_stack[-1]
        if group.want_break:
            self.flush()
            self._newline()
            return
        self.buffer.append(_Breakable(sep, self.indentation, group))
        self.buffer_width += len(sep)
        self._fit_line()

    def break_(self):
        """Force a newline at the current indentation."""
        group = self._next_group_to_break()
        if group is not None:
            self._break_group(group)
        self.flush()
        self._newline()

    def begin_group(self, indent=0, open=""):
        """Open a group; lines it breaks are indented by `indent` more."""
        if open:
            self.text(open)
        group = _Group(self.group_stack[-1].depth + 1, self._deque)
        self.group_stack.append(group)
        self._enqueue(group)
        self.indentation += indent

    def end_group(self, dedent=0, close=""):
        """Close the innermost group."""
        self.indentation -= dedent
        group = self.group_stack.pop()
        if not group.breakables:
            self._unqueue(group)
        if close:
            self.text(close)

    def group(self, indent=0, open="", close=""):
        """`with p.group(...)`: begin_group/end_group around a block."""
        return _Grouped(self, indent, open, close)

    def indent(self, indent):
        """`with p.indent(n)`: indent lines broken inside the block."""
        return _Indented(self, indent)

    def flush(self):
        """Write out everything still buffered."""
        while self.buffer:
            item = self.buffer.popleft()
            # IPython adds the returned column instead of assigning it; every
            # caller resets the width afterwards, but a _repr_pretty_ calling
            # flush() itself sees the same (odd) width as under IPython.
            self.output_width += item.emit(self, self.output_width)
        self.buffer_width = 0

    def _enumerate(self, seq):
        """enumerate(seq), ending in ", ..." after max_seq_length items."""
        limit = self.max_seq_length
        for index, item in enumerate(seq):
            if limit and index >= limit:
                self.text(",")
                self.breakable()
                self.text("...")
                return
            yield index, item

    def pretty(self, obj):
        """Print `obj` with the printer IPython would choose for it."""
        obj_id = id(obj)
        cycle = obj_id in self.stack
        self.stack.append(obj_id)
        self.begin_group()
        try:
            line, printer = _choose_printer(self, obj)
            _CALLS_AT[line]((printer, self, cycle), obj)
        finally:
            self.end_group()
            self.stack.pop()


# ---------------------------------------------------------------------------
# Choosing a printer


def _mro(cls):
    mro = _safe_getattr(cls, "__mro__")
    if mro is not None:
        return mro
    # Not a real class (odd __class__ attribute): mix in object to get one.
    try:
        return type(cls.__name__, (cls, object), {}).__mro__[1:-1]
    except TypeError:
        return (cls,)


_SINGLETON_IDS = frozenset(map(id, (None, True, False, Ellipsis, NotImplemented)))


def _choose_printer(printer, obj):
    """IPython's lookup: singletons, then per class along the MRO: registered
    printer, printer registered by name, _repr_pretty_, own __repr__. Returns
    (the line of IPython's RepresentationPrinter.pretty that calls it, it)."""
    if id(obj) in _SINGLETON_IDS:
        return 386, _print_repr
    cls = _safe_getattr(obj, "__class__", None) or type(obj)
    for klass in _mro(cls):
        found = printer.type_pprinters.get(klass)
        if found is not None:
            return 393, found
        key = (_safe_getattr(klass, "__module__"), _safe_getattr(klass, "__name__"))
        try:
            found = printer.deferred_pprinters.pop(key, None)
        except TypeError:  # unhashable __module__/__name__
            found = None
        if found is not None:
            printer.type_pprinters[klass] = found
            return 398, found
        own = klass.__dict__
        if "_repr_pretty_" in own:
            method = klass._repr_pretty_
            if callable(method):
                return 407, method
        if klass is not object and callable(own.get("__repr__")):
            return 410, _print_repr
    return 412, _print_default


# A repr or _repr_pretty_ that raises shows, in ipykernel, the frames of
# IPython's pretty printer above its own: RepresentationPrinter.pretty at the
# line that called the printer, and _repr_pprint at its repr(obj). The calls
# here are made to be those frames (file, line, name and arguments' names);
# the executor's traceback takes the names of NAMED_CODES from their code.
_IPYTHON_PRETTY = "/usr/lib/python3/dist-packages/IPython/lib/pretty.py"
NAMED_CODES = set()


def _as_ipython_frame(func, first_line, qualname, params=None):
    code = func.__code__.replace(co_filename=_IPYTHON_PRETTY, co_firstlineno=first_line,
                                 co_name=qualname.rpartition(".")[2], co_qualname=qualname)
    if params is not None:  # the parameters' names as the frame shows them
        code = code.replace(co_varnames=tuple(params) + code.co_varnames[len(params):])
    NAMED_CODES.add(code)
    return type(func)(code, func.__globals__, code.co_name)


def _call_printer(self, obj):
    return self[0](obj, self[1], self[2])  # self: (printer, p, cycle)


_CALLS_AT = {line: _as_ipython_frame(_call_printer, line - 1, "RepresentationPrinter.pretty")
             for line in (386, 393, 398, 407, 410, 412)}


def _pretty_item(obj, p, cycle):
    p.pretty(obj)  # obj: the container's item, or what IPython's printer made of it


# The containers' printers: IPython's inner() at its p.pretty(x) of an item.
_seq_item = _as_ipython_frame(_pretty_item, 639, "_seq_pprinter_factory.<locals>.inner")
_set_item = _as_ipython_frame(_pretty_item, 669, "_set_pprinter_factory.<locals>.inner")
_dict_key = _as_ipython_frame(_pretty_item, 689, "_dict_pprinter_factory.<locals>.inner")
_dict_value = _as_ipython_frame(_pretty_item, 691, "_dict_pprinter_factory.<locals>.inner")

# CallExpression._repr_pretty_ at its p.pretty(arg) of an argument, then of a
# keyword argument (the frame names its parameters self, p, cycle).
_call_arg = _as_ipython_frame(_pretty_item, 563, "CallExpression._repr_pretty_", ("self", "p", "cycle"))
_call_kwarg = _as_ipython_frame(_pretty_item, 568, "CallExpression._repr_pretty_", ("self", "p", "cycle"))


def _printer_at(qualname, *lines):
    """IPython's printer `qualname` at each of its p.pretty(...) `lines`."""
    return {line: _as_ipython_frame(_pretty_item, line - 1, qualname) for line in lines}


# The printers that print through a CallExpression (or super's parts).
_super_at = _printer_at("_super_pprint", 700, 707)
_re_pattern_at = _printer_at("_re_pattern_pprint", 731, 733)
_namespace_at = _printer_at("_types_simplenamespace_pprint", 740, 742)
_exception_at = _printer_at("_exception_pprint", 806)
_defaultdict_at = _printer_at("_defaultdict_pprint", 894, 896)
_ordereddict_at = _printer_at("_ordereddict_pprint", 901, 903, 905)
_deque_at = _printer_at("_deque_pprint", 910, 912, 914)
_counter_at = _printer_at("_counter_pprint", 919, 921, 923)
_userlist_at = _printer_at("_userlist_pprint", 929, 931)


# ... and where they ask the container itself (a subclass's __len__ or keys()
# may raise there), each at its line.
def _one_item_tuple(obj, p, cycle):
    return len(obj) == 1 and isinstance(obj, tuple)


def _empty(obj, p, cycle):
    return len(obj) == 0


def _few_enough(obj, p, cycle):
    return not (p.max_seq_length and len(obj) >= p.max_seq_length)


def _keys(obj, p, cycle):
    return obj.keys()


_seq_one_item_tuple = _as_ipython_frame(_one_item_tuple, 640, "_seq_pprinter_factory.<locals>.inner")
_set_empty = _as_ipython_frame(_empty, 654, "_set_pprinter_factory.<locals>.inner")
_set_few_enough = _as_ipython_frame(_few_enough, 661, "_set_pprinter_factory.<locals>.inner")
_dict_keys = _as_ipython_frame(_keys, 684, "_dict_pprinter_factory.<locals>.inner")


# ---------------------------------------------------------------------------
# Helper objects printed through the normal machinery


class _Call:
    """Prints as `name(arg, ..., key=value)`, wrapping like a sequence."""

    def __init__(self, name, args=(), kwargs=None):
        self.name = name
        self.args = args
        self.kwargs = kwargs or {}

    def _repr_pretty_(self, p, cycle):
        prefix = self.name + "("
        first = True
        with p.group(len(prefix), prefix, ")"):
            for arg in self.args:
                if not first:
                    p.text(",")
                    p.breakable()
                first = False
                _call_arg(arg, p, cycle)
            for key, arg in self.kwargs.items():
                if not first:
                    p.text(",")
                    p.breakable()
                first = False
                label = key + "="
                with p.group(len(label), label):
                    _call_kwarg(arg, p, cycle)


class _Raw:
    """Prints its text verbatim."""

    def __init__(self, text):
        self.text = text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text)


def _raw_literal(value):
    """repr(value) with an r prefix, as IPython shows re patterns."""
    text = repr(value)
    prefix = "r"
    if text[:1] in "uU":
        text = text[1:]
        prefix = "ur"
    return _Raw(prefix + text.replace("\\\\", "\\"))


class _ReFlags:
    """Prints re flags as re.A|re.B in IPython's fixed order."""

    _NAMES = ("TEMPLATE", "IGNORECASE", "LOCALE", "MULTILINE", "DOTALL", "UNICODE", "VERBOSE", "DEBUG")

    def __init__(self, value):
        self.value = value

    def _repr_pretty_(self, p, cycle):
        import re

        first = True
        for name in self._NAMES:
            if self.value & getattr(re, name, 0):
                if not first:
                    p.text("|")
                p.text("re." + name)
                first = False


# ---------------------------------------------------------------------------
# Printers: fn(obj, p, cycle)


def _print_repr(obj, p, cycle):
    """repr(obj), keeping its own line breaks at the current indentation."""
    # Its frame is IPython's _repr_pprint: this line is that one's repr(obj).
    lines = repr(obj).splitlines()
    with p.group():
        for index, line in enumerate(lines):
            if index:
                p.break_()
            p.text(line)


_print_repr = _as_ipython_frame(_print_repr, 775, "_repr_pprint")


float_format = "%r"  # IPython's PlainTextFormatter.float_format; %precision sets it


def _print_float(obj, p, cycle):
    p.text(float_format % obj)


def _print_default(obj, p, cycle):
    """Objects with object.__repr__: <module.Class at 0x...>."""
    cls = _safe_getattr(obj, "__class__", None) or type(obj)
    if _safe_getattr(cls, "__repr__", None) is not object.__repr__:
        _print_repr(obj, p, cycle)
        return
    p.begin_group(1, "<")
    p.pretty(cls)
    p.text(" at 0x%x" % id(obj))
    if cycle:
        p.text(" ...")
    elif p.verbose:
        _print_attributes(obj, p)
    p.end_group(1, ">")


def _print_attributes(obj, p):
    """Verbose mode of the default printer: public non-method attributes."""
    method_type = type(_Raw("")._repr_pretty_)
    first = True
    for key in dir(obj):
        if key.startswith("_"):
            continue
        try:
            value = getattr(obj, key)
        except AttributeError:
            continue
        if isinstance(value, method_type):
            continue
        if not first:
            p.text(",")
        p.breakable()
        p.text(key + "=")
        step = len(key) + 1
        p.indentation += step
        p.pretty(value)
        p.indentation -= step
        first = False


def _sequence_printer(open, close):
    def print_sequence(obj, p, cycle):
        if cycle:
            p.text(open + "..." + close)
            return
        step = len(open)
        p.begin_group(step, open)
        for index, item in p._enumerate(obj):
            if index:
                p.text(",")
                p.breakable()
            _seq_item(item, p, cycle)
        if _seq_one_item_tuple(obj, p, cycle):
            p.text(",")
        p.end_group(step, close)

    return print_sequence


def _sorted_if_possible(items):
    """Sorted items; by str() if they don't compare; as given otherwise."""
    items = list(items)
    try:
        return sorted(items)
    except Exception:
        try:
            return sorted(items, key=str)
        except Exception:
            return items


def _set_printer(open, close):
    def print_set(obj, p, cycle):
        if cycle:
            p.text(open + "..." + close)
            return
        if _set_empty(obj, p, cycle):
            p.text(type(obj).__name__ + "()")
            return
        step = len(open)
        p.begin_group(step, open)
        items = obj
        if _set_few_enough(obj, p, cycle):
            items = _sorted_if_possible(obj)
        for index, item in p._enumerate(items):
            if index:
                p.text(",")
                p.breakable()
            _set_item(item, p, cycle)
        p.end_group(step, close)

    return print_set


def _mapping_printer(open, close):
    def print_mapping(obj, p, cycle):
        if cycle:
            p.text("{...}")
            return
        step = len(open)
        p.begin_group(step, open)
        for index, key in p._enumerate(_dict_keys(obj, p, cycle)):
            if index:
                p.text(",")
                p.breakable()
            _dict_key(key, p, cycle)
            p.text(": ")
            _dict_value(obj[key], p, cycle)
        p.end_group(step, close)

    return print_mapping


def _print_super(obj, p, cycle):
    p.begin_group(8, "<super: ")
    _super_at[700](obj.__thisclass__, p, cycle)
    p.text(",")
    p.breakable()
    _super_at[707](obj.__self__, p, cycle)
    p.end_group(8, ">")


def _print_re_pattern(obj, p, cycle):
    if obj.flags:
        _re_pattern_at[731](_Call("re.compile", (_raw_literal(obj.pattern), _ReFlags(obj.flags))), p, cycle)
    else:
        _re_pattern_at[733](_Call("re.compile", (_raw_literal(obj.pattern),)), p, cycle)


def _print_namespace(obj, p, cycle):
    if cycle:
        _namespace_at[740](_Call("namespace", (_Raw("..."),)), p, cycle)
    else:
        _namespace_at[742](_Call("namespace", (), dict(obj.__dict__)), p, cycle)


def _print_type(obj, p, cycle):
    """Classes print as module.QualName (builtins without module)."""
    # A metaclass with its own __repr__ (Enum, ...) decides for itself.
    owners = [m for m in _mro(type(obj)) if "__repr__" in vars(m)]
    if owners[:1] != [type]:
        _print_repr(obj, p, cycle)
        return
    module = _safe_getattr(obj, "__module__", None)
    try:
        name = obj.__qualname__
        if not isinstance(name, str):
            raise TypeError("__qualname__ is not a str")
    except Exception:
        name = obj.__name__
        if not isinstance(name, str):
            name = "<unknown type>"
    if module in (None,) + _BUILTIN_MODULES:
        p.text(name)
    else:
        p.text(module + "." + name)


def _print_function(obj, p, cycle):
    """Functions print as <function module.qualname(signature)>."""
    from inspect import signature

    name = _safe_getattr(obj, "__qualname__", obj.__name__)
    module = obj.__module__
    if module and module not in _BUILTIN_MODULES:
        name = module + "." + name
    try:
        name += str(signature(obj))
    except ValueError:
        pass
    p.text("<function %s>" % name)


def _print_exception(obj, p, cycle):
    cls = obj.__class__
    name = getattr(cls, "__qualname__", cls.__name__)
    if cls.__module__ not in ("exceptions", "builtins"):
        name = "%s.%s" % (cls.__module__, name)
    _exception_at[806](_Call(name, tuple(getattr(obj, "args", ()))), p, cycle)


def _print_defaultdict(obj, p, cycle):
    name = obj.__class__.__name__
    if cycle:
        _defaultdict_at[894](_Call(name, (_Raw("..."),)), p, cycle)
    else:
        _defaultdict_at[896](_Call(name, (obj.default_factory, dict(obj))), p, cycle)


def _print_ordereddict(obj, p, cycle):
    name = obj.__class__.__name__
    if cycle:
        _ordereddict_at[901](_Call(name, (_Raw("..."),)), p, cycle)
    elif len(obj):
        _ordereddict_at[903](_Call(name, (list(obj.items()),)), p, cycle)
    else:
        _ordereddict_at[905](_Call(name), p, cycle)


def _print_deque(obj, p, cycle):
    name = obj.__class__.__name__
    if cycle:
        _deque_at[910](_Call(name, (_Raw("..."),)), p, cycle)
    elif obj.maxlen is not None:
        _deque_at[912](_Call(name, (list(obj),), {"maxlen": obj.maxlen}), p, cycle)
    else:
        _deque_at[914](_Call(name, (list(obj),)), p, cycle)


def _print_counter(obj, p, cycle):
    name = obj.__class__.__name__
    if cycle:
        _counter_at[919](_Call(name, (_Raw("..."),)), p, cycle)
    elif len(obj):
        _counter_at[921](_Call(name, (dict(obj),)), p, cycle)
    else:
        _counter_at[923](_Call(name), p, cycle)


def _print_userlist(obj, p, cycle):
    name = obj.__class__.__name__
    if cycle:
        _userlist_at[929](_Call(name, (_Raw("..."),)), p, cycle)
    else:
        _userlist_at[931](_Call(name, (obj.data,)), p, cycle)


# Printers for classes matched by (module, name) anywhere in the MRO, so the
# modules defining them need not be imported.  numpy.float64 is here because
# PlainTextFormatter registers it (with the float format) once numpy is loaded.
_DEFERRED_PRINTERS = {
    ("collections", "defaultdict"): _print_defaultdict,
    ("collections", "OrderedDict"): _print_ordereddict,
    ("collections", "deque"): _print_deque,
    ("collections", "Counter"): _print_counter,
    ("collections", "UserList"): _print_userlist,
    ("datetime", "datetime"): _print_repr,
    ("datetime", "timedelta"): _print_repr,
    ("re", "Pattern"): _print_re_pattern,
    ("numpy", "float64"): _print_float,
}

_TYPE_PRINTERS = None


def _type_printers():
    """Printers keyed by class, built on first use."""
    global _TYPE_PRINTERS
    if _TYPE_PRINTERS is None:

        class _Probe:
            def method(self):
                pass

        function_type = type(_type_printers)
        builtin_function_type = type(len)
        method_type = type(_Probe().method)
        table = {
            int: _print_repr,
            float: _print_float,
            str: _print_repr,
            bytes: _print_repr,
            tuple: _sequence_printer("(", ")"),
            list: _sequence_printer("[", "]"),
            dict: _mapping_printer("{", "}"),
            set: _set_printer("{", "}"),
            frozenset: _set_printer("frozenset({", "})"),
            super: _print_super,
            type: _print_type,
            function_type: _print_function,
            builtin_function_type: _print_function,
            method_type: _print_repr,
            type(sys.implementation): _print_namespace,
            type(type.__dict__): _mapping_printer("mappingproxy({", "})"),
            slice: _print_repr,
            range: _print_repr,
            BaseException: _print_exception,
        }
        if type(os.environ) is not dict:
            table[type(os.environ)] = _mapping_printer("environ{", "}")
        _TYPE_PRINTERS = table
    return _TYPE_PRINTERS
