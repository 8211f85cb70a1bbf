"""IPython.core.magics.config's counterpart: %config."""

import re

from ..error import UsageError
from ..pylabtools import _InlineBackend, _inline, _set_inline_trait

# The configurables of ipykernel's shell that have config traits (%config lists them).
_CONFIGURABLES = ("AliasManager", "DisplayFormatter", "HistoryManager", "IPCompleter", "IPKernelApp",
                  "LoggingMagics", "MagicsManager", "OSMagics", "PrefilterManager", "ScriptMagics",
                  "StoreMagics", "ZMQInteractiveShell")


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
                        raise ValueError(f"{m.group(1)!r} is not in list")
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
                                self.ast_node_interactivity = value
                        return None
                m = re.match(r"^InlineBackend\.(\w+)\s*(?:=\s*(.+))?$", line.strip())
                if m is None or not hasattr(_InlineBackend, m.group(1)) or m.group(1) == "kwargs":
                        return None
                if m.group(2) is None:
                        return getattr(_inline, m.group(1))
                _set_inline_trait(m.group(1), eval(m.group(2), self.user_ns))
                return None

        def _config_logging_magics(self, stripped):
                """LoggingMagics' one trait, `quiet` (%logstart without its state)."""
                import sys
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
                else:  # traitlets' TraitError, which IPython's config loading logs
                        sys.stderr.write("ERROR:root:The 'quiet' trait of a LoggingMagics instance expected a "
                                         f"boolean, not the {type(value).__name__} {value!r}.\n")
                return None
