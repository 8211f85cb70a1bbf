"""IPython.core.magics.config's counterpart: %config."""

import re

from ..pylabtools import _InlineBackend, _inline, _set_inline_trait


class ConfigMagics:
        """IPython's ConfigMagics (IPython.core.magics.config), mixed into zmqshell.Shell."""

        def magic_config(self, line):
                """Only InlineBackend's traits and ast_node_interactivity are read
                and set here."""
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
