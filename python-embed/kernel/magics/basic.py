"""IPython.core.magics.basic's counterpart: %xmode, %precision, %pprint,
%automagic, and the magics whose output goes to the pager (%page, %magic,
%quickref)."""

import sys

from .. import formatters
from ..error import UsageError


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

        def magic_pprint(self, line):
                """IPython's %pprint: pretty printing toggled (text/plain is repr() when off)."""
                formatters._pprint = not formatters._pprint
                print("Pretty printing has been turned", ["OFF", "ON"][formatters._pprint])

        def magic_automagic(self, line):
                """IPython's %automagic [on|off]: toggled without an argument."""
                arg = line.strip().lower()
                if arg in ("on", "1", "true"):
                        self.auto_magic = True
                elif arg in ("off", "0", "false"):
                        self.auto_magic = False
                else:
                        self.auto_magic = not self.auto_magic
                print("\n" + ["Automagic is OFF, % prefix IS needed for line magics.",
                              "Automagic is ON, % prefix IS NOT needed for line magics."][self.auto_magic])

        def magic_page(self, line):
                """IPython's %page [-r] OBJECT (`_` by default): the object to the
                pager (a payload E2B drops); only a miss is printed."""
                args = line.split()
                if args[:1] == ["-r"]:
                        args = args[1:]
                oname = " ".join(args) or "_"
                found, _ = self._find_object(oname)
                if not found:
                        print(f"Object `{oname}` not found")

        def magic_quickref(self, line):
                """IPython's %quickref: to the pager (a payload E2B drops)."""
                return None

        def magic_magic(self, line):
                """IPython's %magic: to the pager (a payload E2B drops), but for -latex."""
                if line.split()[:1] == ["-latex"]:
                        raise UsageError("%magic -latex is not supported here")
                return None

        def magic_gui(self, line):
                """IPython's %gui [NAME]: no GUI event loop here (enable_gui does nothing)."""
                return self.enable_gui(line.strip() or None)
