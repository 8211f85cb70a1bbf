"""IPython.core.magics.config's counterpart: %config."""

import re

from ..error import UsageError
from ..foreign_frames import as_if_in_ipython
from ..pylabtools import _InlineBackend, _inline, _set_inline_trait, inline_trait_value

# The configurables of ipykernel's shell that have config traits (%config lists them).
_CONFIGURABLES = ("AliasManager", "DisplayFormatter", "HistoryManager", "IPCompleter", "IPKernelApp",
                  "LoggingMagics", "MagicsManager", "OSMagics", "PrefilterManager", "ScriptMagics",
                  "StoreMagics", "ZMQInteractiveShell")


# Reading a trait of a class %config does not list fails in IPython's
# classnames.index(cls): list.index's ValueError, at that line.
def _index_of(self, classnames_cls):
        return classnames_cls[0].index(classnames_cls[1])


_config_class_index = as_if_in_ipython(_index_of, "core/magics/config.py", 164, qualname="ConfigMagics.config",
                                       params=("self", "s"))


# matplotlib_inline's InlineBackend traits: (name, type as traitlets shows
# it, help as its source writes it), for %config InlineBackend.
_INLINE_HELP = (
    ("close_figures", "<Bool>", """Close all figures at the end of each cell.
        When True, ensures that each cell starts with no active figures, but it
        also means that one must keep track of references in order to edit or
        redraw figures in subsequent cells. This mode is ideal for the notebook,
        where residual plots from other cells might be surprising.
        When False, one must call figure() to create new figures. This means
        that gcf() and getfigs() can reference figures created in other cells,
        and the active figure can continue to be edited with pylab/pyplot
        methods that reference the current active figure. This mode facilitates
        iterative editing of figures, and behaves most consistently with
        other matplotlib backends, but figure barriers between cells must
        be explicit."""),
    ("figure_format", "<Unicode>", """The figure format to enable (deprecated
                                         use `figure_formats` instead)"""),
    ("figure_formats", "<set-item-1>...", """A set of figure formats to enable: 'png',
                'retina', 'jpeg', 'svg', 'pdf'."""),
    ("print_figure_kwargs", "<key-1>=<value-1>...", """Extra kwargs to be passed to fig.canvas.print_figure.
        Logical examples include: bbox_inches, quality (for jpeg figures),
etc."""),
    ("rc", "<key-1>=<value-1>...", """Dict to manage matplotlib configuration defaults in the inline
        backend. As of v0.1.4 IPython/Jupyter do not override defaults out of
        the box, but third-party tools may use it to manage rc data. To change
        personal defaults for matplotlib,  use matplotlib's configuration
        tools, or customize this class in your `ipython_config.py` file for
        IPython/Jupyter-specific usage."""),
)


def _inline_help():
        """traitlets' class_get_help for InlineBackend, with the current values."""
        out = ["InlineBackend(InlineBackendConfig) options", "-" * 40]
        for name, kind, text in _INLINE_HELP:
                out.append(f"InlineBackend.{name}={kind}")
                out.extend("    " + line for line in text.split("\n"))
                out.append(f"    Current: {getattr(_inline, name)!r}")
        return "\n".join(out)


def _log_error(e):
        """IPython's %config logs what a configurable refuses (logging.error:
        "ERROR:root:..." on stderr), and the cell goes on."""
        import logging
        logging.error(e)


class ConfigMagics:
        """IPython's ConfigMagics (IPython.core.magics.config), mixed into zmqshell.Shell."""

        def magic_config(self, line):
                """IPython's %config: the configurables listed, an invalid statement
                refused; only InlineBackend's traits and ast_node_interactivity are
                read and set here."""
                from .. import backend_inline
                # ipykernel's configurables with config traits; InlineBackend once
                # the inline backend is loaded.
                names = sorted(_CONFIGURABLES + (("InlineBackend",) if backend_inline._mpl_activated else ()))
                stripped = line.strip()
                if not stripped:
                        print("Available objects for config:")
                        for name in names:
                                print("   ", name)
                        return None
                if stripped not in names and "=" not in stripped and not re.match(r"^\w+\.\w+$", stripped):
                        msg = f"Invalid config statement: {stripped!r}, should be `Class.trait = value`."
                        for name in names:
                                if stripped.lower() == name.lower():
                                        msg += f"\nDid you mean {name} (note the case)?"
                                        break
                        raise UsageError(msg)
                m = re.match(r"^(\w+)\.\w+$", stripped)
                if m is not None and m.group(1) not in names:
                        _config_class_index(self, (names, m.group(1)))
                if stripped == "InlineBackend":
                        print(_inline_help())
                        return None
                if stripped == "LoggingMagics" or stripped.startswith("LoggingMagics."):
                        return self._config_logging_magics(stripped)
                m = re.match(r"^((?:ZMQ)?InteractiveShell)\.ast_node_interactivity\s*(?:=\s*(.+))?$", line.strip())
                if m is not None:
                        if m.group(2) is None:
                                # A query names a configurable's own class.
                                if m.group(1) != "ZMQInteractiveShell":
                                        raise ValueError(f"{m.group(1)!r} is not in list")
                                return self.ast_node_interactivity
                        value = eval(m.group(2), self.user_ns)
                        # Config reaches the trait only while the class has not hidden it.
                        if self._class_interactivity() is None:
                                try:
                                        self.ast_node_interactivity = value
                                except Exception as e:  # noqa: BLE001
                                        _log_error(e)
                        return None
                m = re.match(r"^InlineBackend\.(\w+)\s*(?:=\s*(.+))?$", line.strip())
                if m is None or not hasattr(_InlineBackend, m.group(1)) or m.group(1) == "kwargs":
                        return None
                if m.group(2) is None:
                        return getattr(_inline, m.group(1))
                value = eval(m.group(2), self.user_ns)
                if not backend_inline._mpl_activated:
                        # No InlineBackend yet: the shell's config keeps the value,
                        # which the backend checks and takes when it is made.
                        self.config["InlineBackend"][m.group(1)] = value
                        return None
                try:
                        _set_inline_trait(m.group(1), inline_trait_value(m.group(1), value))
                except Exception as e:  # noqa: BLE001
                        _log_error(e)
                return None

        def _config_logging_magics(self, stripped):
                """LoggingMagics' one trait, `quiet` (%logstart without its state)."""
                if stripped == "LoggingMagics":
                        print("LoggingMagics(Magics) options\n---------------------------\n"
                              "LoggingMagics.quiet=<Bool>\n"
                              "    Suppress output of log state when logging is enabled\n"
                              f"    Current: {self.logging_quiet}")
                        return None
                m = re.match(r"^LoggingMagics\.(\w+)\s*(?:=\s*(.+))?$", stripped)
                if m is None or m.group(1) != "quiet":
                        return None
                if m.group(2) is None:
                        return self.logging_quiet
                value = eval(m.group(2), self.user_ns)
                if isinstance(value, bool):
                        self.logging_quiet = value
                else:  # traitlets' TraitError
                        _log_error(f"The 'quiet' trait of a LoggingMagics instance expected a "
                                   f"boolean, not the {type(value).__name__} {value!r}.")
                return None
