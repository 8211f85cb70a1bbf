"""IPython.core.formatters' counterpart: the MIME bundle of an object
(DisplayFormatter.format), shell.display_formatter and its formatters."""

import functools
import sys
import types

from .e2b_data import _e2b_data, _e2b_json, _figure_chart, _json_clean
from .foreign_frames import as_if_in_ipython, warn_as_if_from
from .pylabtools import _figure_formatters, _inline
from .session import _state



# IPython's DisplayFormatter order.
_REPR_METHODS = [
    ("text/plain", None),
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("application/pdf", "_repr_pdf_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
]
# E2B's kernel adds its own formatters after IPython's (template/startup_scripts/0002_data.py).
_FORMAT_ORDER = _REPR_METHODS + [("e2b/data", None), ("e2b/chart", None)]
_TEXT_MIMES = {"text/plain", "text/html", "text/markdown", "image/svg+xml", "text/latex",
               "application/javascript"}
_BINARY_MIMES = {"image/png", "image/jpeg", "application/pdf"}
_REPR_METHODS_DICT = dict(_REPR_METHODS)
_FORMAT_KEYS = frozenset(dict(_FORMAT_ORDER))

_pretty = None


# PlainTextFormatter.pprint: %pprint turns it off, and text/plain is then repr().
_pprint = True


def pretty_text(obj):
        """text/plain as IPython's pretty printer makes it (cellvm_pretty), else repr()."""
        global _pretty
        if not _pprint:
                return repr(obj)
        if _pretty is None:
                try:
                        import cellvm_pretty
                        _pretty = functools.partial(cellvm_pretty.pretty, shared=True)  # the formatter's tables
                except Exception:
                        _pretty = repr
        return _call_plain_text((_pretty, obj), obj)


def _real_method(obj, name):
        """IPython's get_real_method: skip classes and proxies that claim every attribute."""
        try:
                if getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None:
                        return None
                m = getattr(obj, name, None)
        except Exception:
                return None
        if isinstance(obj, type) and not isinstance(m, types.MethodType):
                return None
        return m if callable(m) else None


# IPython's formatters' _return_type, as its FormatterWarning names it.
_EXPECTED_TYPE = {"application/json": "(<class 'list'>, <class 'dict'>)",
                  "image/png": "(<class 'bytes'>, <class 'str'>)",
                  "image/jpeg": "(<class 'bytes'>, <class 'str'>)",
                  "application/pdf": "(<class 'bytes'>, <class 'str'>)"}


def _formatter_warning(mime, obj, exc=None, value=None):
        kernel = _state.kernel
        if exc is not None and kernel is not None:
                # IPython's catch_format_error: showtraceback(), an error of the cell.
                kernel.report_error(exc)
                return
        if exc is not None:
                import traceback
                sys.stderr.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
                return
        # IPython's _check_return warns, from its file and line.
        category = getattr(sys.modules.get("IPython.core.formatters"), "FormatterWarning", FormatterWarning)
        warn_as_if_from(f"{mime} formatter returned invalid type {type(value)} (expected "
                        f"{_EXPECTED_TYPE.get(mime, str(str))}) for object: {pretty_text(obj)}",
                        category, "core/formatters.py", 366)


class FormatterWarning(UserWarning):
        """Warning class for errors in formatters"""


FormatterWarning.__module__ = "IPython.core.formatters"


# The calls of a formatter's printer or of an object's _repr_*_ method: their
# frames read as IPython's formatters' own (file, line, method and arguments),
# as the traceback of a failing formatter shows them in ipykernel (so the
# first argument is named `self`: here (function, *arguments), or the method).
def _formatter_call(self, obj):
        return self[0](*self[1:])


def _mimebundle_call(self, obj, include=None, exclude=None):
        return self(include=include, exclude=exclude)


_call_printer = as_if_in_ipython(_formatter_call, "core/formatters.py", 339,
                         qualname="BaseFormatter.__call__")
_call_method = as_if_in_ipython(_formatter_call, "core/formatters.py", 343,
                        qualname="BaseFormatter.__call__")
_call_plain_text = as_if_in_ipython(_formatter_call, "core/formatters.py", 707,
                            qualname="PlainTextFormatter.__call__")
_call_display_method = as_if_in_ipython(_formatter_call, "core/formatters.py", 921,
                                qualname="IPythonDisplayFormatter.__call__")
_call_mimebundle_method = as_if_in_ipython(_mimebundle_call, "core/formatters.py", 973,
                                   qualname="MimeBundleFormatter.__call__")


def _check_value(mime, value):
        """Normalise a formatter's value to what the wire carries, or None if invalid."""
        if mime in _BINARY_MIMES:
                if isinstance(value, str):
                        import base64
                        return base64.b64decode(value)
                return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None
        if mime == "application/json":
                # A str only comes from a _repr_mimebundle_, which IPython sends unchecked.
                return value if isinstance(value, (dict, list, str)) else None
        if mime in _TEXT_MIMES:
                return value if isinstance(value, str) else None
        return value


def _type_formatters(obj):
        """Formatters IPython registers by type: matplotlib figures (PNG, e2b/chart),
        DataFrames (e2b/data). A figure's images only once the inline backend
        is loaded (its configure_inline_support registers them, at the first
        figure pyplot makes): a Figure made without pyplot, or after
        matplotlib.use('Agg') before pyplot, is text until then. E2B's chart
        formatter is its startup's."""
        fig_mod = sys.modules.get("matplotlib.figure")
        if fig_mod is not None and isinstance(obj, fig_mod.Figure):
                formatters = _figure_formatters() if _inline.formats_on else {}
                formatters["e2b/chart"] = _figure_chart
                return formatters
        if isinstance(obj, (list, dict)):
                return {"application/json": _e2b_json}
        pd = sys.modules.get("pandas")
        if pd is not None and isinstance(obj, pd.DataFrame):
                return {"e2b/data": _e2b_data}
        return {}


# Builtin types whose text/plain is repr() in IPython (pretty's _repr_pprint on a
# one-line repr, float_format '%r'), and builtins with no _repr_*_ methods at all.
_REPR_IS_TEXT_TYPES = frozenset({int, float, str, bool, complex, bytes})
_float_format = "%r"  # %precision changes it (and cellvm_pretty's, for floats inside containers)
_NO_REPR_METHODS_TYPES = _REPR_IS_TEXT_TYPES | {list, tuple, dict, set, frozenset, range}


def _excluded(mime, include, exclude):
        """Left out of a bundle by display()'s include/exclude."""
        return bool(include and mime not in include or exclude and mime in exclude)


def format_bundle(obj, include=None, exclude=None):
        """IPython's DisplayFormatter.format: (data, metadata), ({}, {}) if handled elsewhere."""
        t = type(obj)
        if t in _REPR_IS_TEXT_TYPES and not include and not exclude and _display_formatter is None:
                try:
                        return {"text/plain": repr(obj) if t is not float or not _pprint
                                else _float_format % obj}, {}
                except Exception:  # an int over the str-digits limit: the full path reports it
                        pass
        builtin = t in _NO_REPR_METHODS_TYPES
        m = None if builtin else _real_method(obj, "_ipython_display_")
        if m is not None:
                try:
                        _call_display_method((m,), obj)
                        return {}, {}
                except NotImplementedError:  # IPython's catch_format_error: declined, silently
                        pass
                except Exception as e:  # IPython's catch_format_error: shown, then the other formatters
                        _formatter_warning("_ipython_display_", obj, exc=e)
        data, md = {}, {}
        m = None if builtin else _real_method(obj, "_repr_mimebundle_")
        if m is not None:
                try:
                        r = _call_mimebundle_method(m, obj, include, exclude)
                except NotImplementedError:
                        r = None
                except Exception as e:
                        _formatter_warning("mimebundle", obj, exc=e)
                        r = None
                if isinstance(r, tuple):
                        r, rmd = r
                        md.update({k: v for k, v in (rmd or {}).items() if not _excluded(k, include, exclude)})
                if r:
                        for k, v in dict(r).items():
                                # IPython filters the bundle too: the method may ignore include/exclude.
                                if _excluded(k, include, exclude):
                                        continue
                                v = _check_value(k, v)
                                if v is not None:
                                        data[k] = _json_clean(v)
        by_type = _type_formatters(obj)
        for mime, meth in _FORMAT_ORDER:
                if _excluded(mime, include, exclude) or mime in data:
                        continue
                clean = True  # NaN and infinities as jupyter_client's packer leaves them
                try:
                        value = None
                        found = False
                        if _display_formatter is not None:
                                found, value = _user_formatter(mime, obj)
                        if found:
                                meth = None
                        elif mime == "text/plain":
                                value = pretty_text(obj)
                        elif mime in by_type:
                                value = _call_printer((by_type[mime], obj), obj)
                                clean = mime == "e2b/chart"  # the others' values are JSON's already
                        if value is None and meth is not None and not builtin:
                                f = _real_method(obj, meth)
                                if f is None:
                                        continue
                                value = _call_method((f,), obj)
                                clean = True
                except NotImplementedError:
                        continue
                except Exception as e:
                        _formatter_warning(mime, obj, exc=e)
                        continue
                if value is None:
                        continue
                if isinstance(value, tuple) and len(value) == 2:
                        value, vmd = value
                        if vmd:
                                md[mime] = vmd
                if mime == "application/json" and isinstance(value, str):
                        # IPython 8's JSONFormatter._check_return, outside catch_format_error: the display fails.
                        raise AssertionError("JSON-as-string has been deprecated since IPython < 3")
                checked = _check_value(mime, value)
                if checked is None:
                        _formatter_warning(mime, obj, value=value)
                        continue
                data[mime] = _json_clean(checked) if clean else checked
        if _display_formatter is not None:
                # Formatters added for other types (IPython calls them all, in order).
                for mime, f in list(_display_formatter.formatters.items()):
                        if mime in _FORMAT_KEYS or _excluded(mime, include, exclude) or mime in data:
                                continue
                        try:
                                value = f(obj)
                        except Exception as e:
                                _formatter_warning(mime, obj, exc=e)
                                continue
                        if value is not None:
                                data[mime] = _json_clean(value)
        return data, md


def _enable_data_resource_formatter(enable):
        """pandas' enable_data_resource_formatter (display.html.table_schema) on
        the kernel's formatters, where IPython may be absent or not imported."""
        if _state.kernel is None:
                return  # as pandas outside IPython
        formatters = _state.kernel.shell.display_formatter.formatters
        mime = "application/vnd.dataresource+json"
        if enable:
                if mime not in formatters:
                        cls = type("TableSchemaFormatter", (_Formatter,), {"__module__": "pandas.io.formats.printing"})
                        formatters[mime] = cls(mime, "_repr_data_resource_")
                formatters[mime].enabled = True
        elif mime in formatters:
                formatters[mime].enabled = False


def _on_pandas_printing_import(printing):
        printing.enable_data_resource_formatter = _enable_data_resource_formatter


def _type_key(cls):
        """(module, name): how a printer registered by name finds its type."""
        return getattr(cls, "__module__", None), getattr(cls, "__name__", None)


# _Formatter.pop()'s default when none is given.
_NO_DEFAULT = object()


class _Formatter:
        """IPython's BaseFormatter for one MIME type: printers by type (and by
        'module.name'), and enabled. The text/plain one (PlainTextFormatter)
        shares its tables with the pretty printer: printers take (obj, p, cycle)."""

        def __init__(self, mime, print_method, type_printers=None, deferred_printers=None):
                self.format_type = mime
                self.print_method = print_method
                self.enabled = True
                self.type_printers = {} if type_printers is None else type_printers
                self.deferred_printers = {} if deferred_printers is None else deferred_printers
                self.singleton_printers = {}

        def __repr__(self):
                return f"<{self.__module__}.{type(self).__qualname__} object at {id(self):#x}>"

        def __contains__(self, typ):
                try:
                        self.lookup_by_type(typ)
                except KeyError:
                        return False
                return True

        def __call__(self, obj):
                """IPython's BaseFormatter.__call__ (errors propagate to the caller)."""
                if not self.enabled:
                        return None
                if self.format_type == "text/plain":
                        return pretty_text(obj)
                printer = self._printer(obj)
                if printer is not None:
                        return _call_printer((printer, obj), obj)
                method = _real_method(obj, self.print_method) if self.print_method else None
                return method() if method is not None else None

        def _printer(self, obj):
                if not self.type_printers and not self.deferred_printers and not self.singleton_printers:
                        return None
                try:
                        return self.lookup(obj)
                except KeyError:
                        return None

        def lookup(self, obj):
                if id(obj) in self.singleton_printers:
                        return self.singleton_printers[id(obj)]
                return self.lookup_by_type(getattr(obj, "__class__", None) or type(obj))

        def lookup_by_type(self, typ):
                if isinstance(typ, str):
                        key = tuple(typ.rsplit(".", 1))
                        if key in self.deferred_printers:
                                return self.deferred_printers[key]
                        for cls in self.type_printers:
                                if _type_key(cls) == key:
                                        return self.type_printers[cls]
                else:
                        for cls in getattr(typ, "__mro__", (typ,)):
                                if cls in self.type_printers or self._in_deferred_types(cls):
                                        return self.type_printers[cls]
                raise KeyError("No registered printer for {0!r}".format(typ))

        def _in_deferred_types(self, cls):
                key = _type_key(cls)
                printer = None
                if key in self.deferred_printers:
                        printer = self.deferred_printers.pop(key)
                        self.type_printers[cls] = printer
                return printer

        def for_type(self, typ, func=None):
                if isinstance(typ, str):
                        return self.for_type_by_name(*typ.rsplit(".", 1), func)
                try:
                        old = self.lookup_by_type(typ)
                except KeyError:
                        old = None
                if func is not None:
                        self.type_printers[typ] = func
                return old

        def for_type_by_name(self, type_module, type_name, func=None):
                key = (type_module, type_name)
                try:
                        old = self.lookup_by_type("%s.%s" % key)
                except KeyError:
                        old = None
                if func is not None:
                        self.deferred_printers[key] = func
                return old

        def pop(self, typ, default=_NO_DEFAULT):
                if isinstance(typ, str):
                        key = tuple(typ.rsplit(".", 1))
                        if key not in self.deferred_printers:
                                for cls in self.type_printers:
                                        if _type_key(cls) == key:
                                                typ = cls
                                                break
                        else:
                                return self.deferred_printers.pop(key)
                if typ in self.type_printers:
                        return self.type_printers.pop(typ)
                if self._in_deferred_types(typ):
                        return self.type_printers.pop(typ)
                if default is _NO_DEFAULT:
                        raise KeyError("No registered value for {0!r}".format(typ))
                return default


_FORMATTER_NAMES = {"text/plain": "PlainTextFormatter", "text/html": "HTMLFormatter",
                    "text/markdown": "MarkdownFormatter", "image/svg+xml": "SVGFormatter",
                    "image/png": "PNGFormatter", "application/pdf": "PDFFormatter",
                    "image/jpeg": "JPEGFormatter", "text/latex": "LatexFormatter",
                    "application/json": "JSONFormatter", "application/javascript": "JavascriptFormatter"}

# Set once a cell reached shell.display_formatter: format_bundle consults it then.
_display_formatter = None
# E2B's formatters that active_types left out (%doctest_mode).
_inactive_extra = frozenset()


class DisplayFormatter:
        """IPython's DisplayFormatter (shell.display_formatter): .formatters by
        MIME type, which format_bundle consults once this exists."""

        __module__ = "IPython.core.formatters"

        def __init__(self):
                import cellvm_pretty
                self.formatters = {}
                for mime, meth in _REPR_METHODS:
                        attrs = {"__module__": "IPython.core.formatters"}
                        if mime == "text/plain":
                                attrs["pprint"] = property(lambda self: _pprint, _set_pprint)
                        cls = type(_FORMATTER_NAMES[mime], (_Formatter,), attrs)
                        if mime == "text/plain":
                                f = cls(mime, None, cellvm_pretty._type_printers(), cellvm_pretty._DEFERRED_PRINTERS)
                        else:
                                f = cls(mime, meth)
                        self.formatters[mime] = f
                self.plain_text_only = False

        @property
        def active_types(self):
                return [mime for mime, f in self.formatters.items() if getattr(f, "enabled", True)]

        @active_types.setter
        def active_types(self, types):
                """IPython's observer: formatters of other types disabled (E2B's
                e2b/data and e2b/chart, formatters of its shell, with them)."""
                global _inactive_extra
                for mime, f in self.formatters.items():
                        f.enabled = mime in types
                _inactive_extra = frozenset(m for m in ("e2b/data", "e2b/chart") if m not in types)

        def format(self, obj, include=None, exclude=None):
                return format_bundle(obj, include, exclude)


def _set_pprint(formatter, value):
        global _pprint
        _pprint = bool(value)


def _user_formatter(mime, obj):
        """(found, value) from shell.display_formatter for `mime`: a printer
        registered for the object's type, a disabled formatter (found, None),
        or a formatter object the user put in place."""
        f = _display_formatter.formatters.get(mime)
        if f is None:
                # A formatter deleted (that type no more), or E2B's made inactive.
                return mime in _REPR_METHODS_DICT or mime in _inactive_extra, None
        if not isinstance(f, _Formatter):
                return True, f(obj)
        if not f.enabled:
                # E2B's JSON formatter (its own __call__) ignores `enabled` for lists and dicts.
                return not (mime == "application/json" and isinstance(obj, (list, dict))), None
        if mime == "text/plain":
                return False, None  # the pretty printer reads the shared tables
        printer = f._printer(obj)
        if printer is None:
                return False, None
        return True, _call_printer((printer, obj), obj)
