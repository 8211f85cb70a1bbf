"""IPython.core.magics.basic's counterpart: %xmode, %precision."""

import sys

from .. import formatters


class BasicMagics:
        """IPython's BasicMagics (IPython.core.magics.basic), mixed into zmqshell.Shell."""

        _XMODES = ["Plain", "Context", "Verbose", "Minimal"]  # FormattedTB.valid_modes

        def _set_xmode(self, mode):
                """FormattedTB.set_mode: no mode steps to the next one."""
                k = self.kernel
                if not mode:
                        k.xmode = self._XMODES[(self._XMODES.index(k.xmode) + 1) % len(self._XMODES)]
                elif mode not in self._XMODES:
                        # As IPython's xmode_switch_err warns (warnings.warn, from its source).
                        sys.stderr.write(f"UserWarning: Error changing user exception modes.\n"
                                         f"Unrecognized mode in FormattedTB: <{mode}>\n"
                                         f"Valid modes: {self._XMODES}\n")
                        return False
                else:
                        k.xmode = mode
                return True

        def magic_xmode(self, line):
                if line.strip() in ("--show", "--hide"):
                        return None
                if self._set_xmode(line.strip().capitalize()):
                        print("Exception reporting mode:", self.kernel.xmode)
                return None

        def magic_precision(self, line):
                """IPython's %precision: floats' text/plain format (and numpy's print
                precision); no argument restores repr. Returns the format."""
                import cellvm_pretty
                if "%" in line:
                        fmt = line
                        try:
                                fmt % 3.14159
                        except Exception:
                                raise ValueError(f"Precision must be int or format string, not {line!r}") from None
                elif line:
                        try:
                                digits = int(line)
                                assert digits >= 0
                        except ValueError:
                                raise ValueError(f"Precision must be int or format string, not {line!r}") from None
                        except AssertionError:
                                raise ValueError(f"int precision must be non-negative, not {digits!r}") from None
                        fmt = "%%.%if" % digits
                        if "numpy" in sys.modules:
                                sys.modules["numpy"].set_printoptions(precision=digits)
                else:
                        fmt = "%r"
                        if "numpy" in sys.modules:
                                sys.modules["numpy"].set_printoptions(precision=8)
                formatters._float_format = cellvm_pretty.float_format = fmt
                return fmt
