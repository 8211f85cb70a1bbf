"""IPython.core.magics.basic's counterpart: %xmode, %precision, %pprint, %colors,
%automagic, %autocall, %autoawait, %alias_magic, %notebook, and the magics whose output
goes to the pager (%page, %magic, %quickref)."""

import os
import sys

from .. import formatters
from ..foreign_frames import (as_if_in_ipython, chained, ipython_calling_on, ipython_raising_from,
                              traitlets_calling_on, warn_as_if_from)
from ..error import UsageError
from . import magic_parser
from .osm import _ALIASES


# A format IPython refuses fails in its formatter's float_precision observer,
# reached through traitlets' setter: the ValueError chained from the check's
# error, each frame at its line there.
def _check_format(self, change):
        return change % 3.14159


def _check_int(self, change):
        return int(change)


def _check_non_negative(self, change):
        if change < 0: raise AssertionError  # noqa: E701 (one line, as IPython's assert)


_OBSERVER = "PlainTextFormatter._float_precision_changed"
# The check's line (its error is the cause) and the line that raises after it.
_PRECISION_CHECKS = {
    "format": (645, 647, _check_format),
    "int": (651, 654, _check_int),
    "non-negative": (652, 656, _check_non_negative),
}
# %precision's frame, then traitlets' frames from the setter to the observer.
_PRECISION_TO_OBSERVER = [ipython_calling_on("core/magics/basic.py", 560, "BasicMagics.precision", ("self", "s"),
                                              carets=9)] \
    + traitlets_calling_on([(715, "TraitType.__set__", ("self", "obj", "value")),
                            (704, "TraitType.set", ("self", "obj", "value")),
                            (1374, "HasTraits._notify_trait", ("self", "name", "old_value", "new_value")),
                            (1386, "HasTraits.notify_change", ("self", "change")),
                            (1431, "HasTraits._notify_observers", ("self", "event"))])


def _failing(call):
        try:
                call()
        except Exception:
                return True
        return False


def _int_or_none(s):
        try:
                return int(s)
        except ValueError:
                return None


def _precision_refused(s, kind, message):
        """Raises IPython's ValueError(message) for %precision `s`, chained
        from its `kind` of check's error, through IPython's and traitlets'
        frames."""
        check_line, raise_line, check = _PRECISION_CHECKS[kind]
        try:
                as_if_in_ipython(check, "core/formatters.py", check_line, qualname=_OBSERVER)(
                    None, s if kind != "non-negative" else int(s))
        except Exception as e:
                cause = e.with_traceback(e.__traceback__.tb_next)
        chained(_PRECISION_TO_OBSERVER, ipython_raising_from("core/formatters.py", raise_line, _OBSERVER,
                                                             ("self", "change")), ValueError(message), cause)()


class BasicMagics:
        """IPython's BasicMagics (IPython.core.magics.basic), mixed into zmqshell.Shell."""

        _XMODES = ["Plain", "Context", "Verbose", "Minimal"]  # FormattedTB.valid_modes

        def _set_xmode(self, mode):
                """FormattedTB.set_mode: no mode steps to the next one."""
                k = self.kernel
                if not mode:
                        k.xmode = self._XMODES[(self._XMODES.index(k.xmode) + 1) % len(self._XMODES)]
                elif mode not in self._XMODES:
                        # As IPython's xmode_switch_err warns.
                        warn_as_if_from(f"Error changing user exception modes.\nUnrecognized mode in "
                                        f"FormattedTB: <{mode}>\nValid modes: {self._XMODES}", UserWarning,
                                        "core/magics/basic.py", 377)
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
                # IPython's checks, each refusal raised outside the check's except
                # (the stand-ins make the error it is chained from).
                if "%" in line:
                        fmt = line
                        if _failing(lambda: fmt % 3.14159):
                                _precision_refused(line, "format", f"Precision must be int or format string, "
                                                                   f"not {line!r}")
                elif line:
                        digits = _int_or_none(line)
                        if digits is None:
                                _precision_refused(line, "int", f"Precision must be int or format string, not {line!r}")
                        if digits < 0:
                                _precision_refused(line, "non-negative", f"int precision must be non-negative, "
                                                                         f"not {digits!r}")
                        fmt = "%%.%if" % digits
                        if "numpy" in sys.modules:
                                sys.modules["numpy"].set_printoptions(precision=digits)
                else:
                        fmt = "%r"
                        if "numpy" in sys.modules:
                                sys.modules["numpy"].set_printoptions(precision=8)
                formatters._float_format = cellvm_pretty.float_format = fmt
                return fmt

        def magic_doctest_mode(self, line):
                """IPython's %doctest_mode: toggles plain repr() results, text/plain
                only and %xmode Plain, restoring what was set when first turned on."""
                saved = self.__dict__.setdefault("_doctest_saved", {
                    "mode": False, "pprint": formatters._pprint, "xmode": self.kernel.xmode,
                    "active": self.display_formatter.active_types
                    + [m for m in ("e2b/data", "e2b/chart") if m not in formatters._inactive_extra]})
                if not saved["mode"]:
                        formatters._pprint = False
                        self.display_formatter.active_types = ["text/plain"]
                        self.magic_xmode("Plain")
                else:
                        formatters._pprint = saved["pprint"]
                        self.display_formatter.active_types = saved["active"]
                        self.magic_xmode(saved["xmode"])
                saved["mode"] = not saved["mode"]
                print("Doctest mode is:", ["OFF", "ON"][saved["mode"]])

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

        autocall = 0  # InteractiveShell.autocall: 0 Off, 1 Smart, 2 Full

        def magic_autocall(self, line):
                """IPython's %autocall [0|1|2]: toggled (back to the last mode,
                else Smart) without an argument."""
                modes = ("Off", "Smart", "Full")
                arg = line.strip()
                if arg:
                        if arg not in ("0", "1", "2"):
                                import logging
                                logging.error("Valid modes: 0->Off, 1->Smart, 2->Full")
                                return
                        self.autocall = int(arg)
                elif self.autocall:
                        self._autocall_saved, self.autocall = self.autocall, 0
                else:
                        self.autocall = getattr(self, "_autocall_saved", 1)
                        self._autocall_saved = self.autocall
                print("Automatic calling is:", modes[self.autocall])

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

        _COLOR_SCHEMES = ["Neutral", "NoColor", "LightBG", "Linux"]  # the colors trait's values

        def magic_colors(self, line):
                """IPython's %colors SCHEME (any case); an unknown one warns, as
                IPython's color_switch_err does, and changes nothing."""
                name = line.strip()
                if not name:
                        raise UsageError("%colors: you must specify a color scheme. See '%colors?'")
                match = [s for s in self._COLOR_SCHEMES if s.lower() == name.lower()]
                if match:
                        self.colors = match[0]
                        return
                sys.stderr.write(
                    f"UserWarning: Error changing shell color schemes.\nThe 'colors' trait of a "
                    f"ZMQInteractiveShell instance expected any of {self._COLOR_SCHEMES} "
                    f"(case-insensitive), not the str {name!r}.\n"
                    f"UserWarning: Error changing exception color schemes.\nUnrecognized color scheme: "
                    f"{name}\nValid schemes: ['NoColor', 'Linux', 'LightBG', 'Neutral', '']\n"
                    f"UserWarning: Error changing object inspector color schemes.\nUnrecognized color "
                    f"scheme: {name}\nValid schemes: ['NoColor', 'Linux', 'LightBG', 'Neutral', '']\n")

        def magic_autoawait(self, line):
                """IPython's %autoawait: top-level await is always on here, on asyncio."""
                param = line.strip()
                if not param:
                        print("IPython autoawait is `on`, and set to use `asyncio`")
                elif param.lower() not in ("true", "on", "asyncio"):
                        raise UsageError(f"%autoawait {param}: only asyncio's autoawait is supported here")

        def magic_alias_magic(self, line):
                """IPython's %alias_magic [-l] [-c] [-p PARAMS] NAME TARGET."""
                import shlex
                parser = magic_parser("%alias_magic")
                parser.add_argument("-l", "--line", action="store_true")
                parser.add_argument("-c", "--cell", action="store_true")
                parser.add_argument("-p", "--params", default=None)
                parser.add_argument("name")
                parser.add_argument("target")
                args = parser.parse_args(shlex.split(line, posix=False))
                name, target, params = args.name.lstrip("%"), args.target.lstrip("%"), args.params
                if params and len(params) > 1 and params[0] == params[-1] and params[0] in "'\"":
                        params = params[1:-1]
                m_line, m_cell = self.find_magic(target, "line"), self.find_magic(target, "cell")
                if args.line and m_line is None:
                        raise UsageError(f"Line magic function `%{target}` not found.")
                if args.cell and m_cell is None:
                        raise UsageError(f"Cell magic function `%%{target}` not found.")
                if not args.line and not args.cell:
                        if not m_line and not m_cell:
                                raise UsageError(f"No line or cell magic with name `{target}` found.")
                        args.line, args.cell = bool(m_line), bool(m_cell)
                shown = "" if params is None else " " + params

                def alias(kind):
                        run = self.run_line_magic if kind == "line" else self.run_cell_magic

                        def call(line, *cell):
                                return run(target, (params + " " + line) if params else line, *cell)
                        return call
                if args.line:
                        setattr(self, "magic_" + name, alias("line"))
                        print(f"Created `%{name}` as an alias for `%{target}{shown}`.")
                if args.cell:
                        setattr(self, "cell_magic_" + name, alias("cell"))
                        print(f"Created `%%{name}` as an alias for `%%{target}{shown}`.")

        def magic_notebook(self, line):
                """IPython's %notebook FILENAME: the session's inputs so far (raw,
                this cell's not) as code cells of an nbformat 4.5 notebook,
                written as nbformat writes one (the guest has no nbformat)."""
                import json
                import shlex
                import uuid
                parser = magic_parser("%notebook")
                parser.add_argument("filename")
                path = os.path.expanduser(parser.parse_args(shlex.split(line)).filename)
                raw = self.kernel.raw_in
                if len(raw) <= 2:  # raw_in[0] is IPython's empty entry
                        raise ValueError("History is empty, cannot export")
                cells = [{"cell_type": "code", "execution_count": n, "id": uuid.uuid4().hex[:8],
                          "metadata": {}, "outputs": [], "source": raw[n].rstrip("\n").splitlines(True)}
                         for n in range(1, len(raw) - 1)]
                nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
                with open(path, "w", encoding="utf-8") as f:
                        f.write(json.dumps(nb, indent=1, sort_keys=True, separators=(",", ": "),
                                           ensure_ascii=False) + "\n")

        def magic_lsmagic(self, line):
                """IPython's %lsmagic: ipykernel's magics (by the class that holds
                each), with the aliases and the magics this context added."""
                magics = {"line": {}, "cell": {}}
                for kind, table in _LSMAGIC.items():
                        for cls, names in table:
                                for name in names.split():
                                        magics[kind][name] = cls
                line_magics = magics["line"]
                for name in _ALIASES:
                        if name not in self.aliases:
                                del line_magics[name]  # %unalias
                for name in self.aliases:
                        line_magics.setdefault(name, "Other")
                if self.kernel.autoreload is not None:
                        line_magics.update(autoreload="AutoreloadMagics", aimport="AutoreloadMagics")
                for attr, fn in vars(self).items():  # registered by the notebook, %alias_magic
                        kind = "cell" if attr.startswith("cell_magic_") else "line" if attr.startswith("magic_") else None
                        if kind is not None:
                                owner = getattr(fn, "__self__", None)
                                cls = "Other" if owner is None or owner is self else type(owner).__name__
                                magics[kind][attr.split("magic_", 1)[1]] = cls
                return _MagicsDisplay(magics, self.auto_magic)


# ipykernel 6's magics as %lsmagic lists them: (class, names) in its order.
_LSMAGIC = {
    "line": [
        ("AutoMagics", "automagic autocall"),
        ("BasicMagics", "alias_magic lsmagic magic page pprint colors xmode quickref doctest_mode gui "
                        "precision notebook"),
        ("CodeMagics", "save pastebin loadpy load"),
        ("KernelMagics", "edit"),
        ("ConfigMagics", "config"),
        ("ExecutionMagics", "prun pdb debug tb run timeit time macro"),
        ("ExtensionMagics", "load_ext unload_ext reload_ext"),
        ("HistoryMagics", "history recall rerun"),
        ("LoggingMagics", "logstart logstop logoff logon logstate"),
        ("NamespaceMagics", "pinfo pinfo2 pdef pdoc psource pfile psearch who_ls who whos reset "
                            "reset_selective xdel"),
        ("OSMagics", "alias unalias rehashx pwd cd env set_env pushd popd dirs dhist sc sx system bookmark pycat"),
        ("PackagingMagics", "pip conda"),
        ("PylabMagics", "matplotlib pylab"),
        ("ScriptMagics", "killbgscripts"),
        ("AsyncMagics", "autoawait"),
        ("Other", "ed hist rep"),
        ("KernelMagics", "clear less more man connect_info qtconsole autosave"),
        ("Other", "mkdir rmdir mv rm cp cat ls ll lf lk ldir lx"),
        ("StoreMagics", "store"),
    ],
    "cell": [
        ("DisplayMagics", "js javascript latex svg html markdown"),
        ("ExecutionMagics", "prun debug timeit time capture"),
        ("OSMagics", "sx system ! writefile"),
        ("ScriptMagics", "script"),
        ("Other", "sh bash perl ruby python python2 python3 pypy SVG HTML file"),
    ],
}


class _MagicsDisplay:
        """IPython's MagicsDisplay: the listing as text, the table as JSON."""

        __module__ = "IPython.core.magics.basic"

        def __init__(self, magics, auto_magic):
                self.magics, self.auto_magic = magics, auto_magic

        def _lsmagic(self):
                return "\n".join([
                    "Available line magics:", "%" + "  %".join(sorted(self.magics["line"])), "",
                    "Available cell magics:", "%%" + "  %%".join(sorted(self.magics["cell"])), "",
                    ["Automagic is OFF, % prefix IS needed for line magics.",
                     "Automagic is ON, % prefix IS NOT needed for line magics."][self.auto_magic]])

        def _repr_pretty_(self, p, cycle):
                p.text(self._lsmagic())

        def __str__(self):
                return self._lsmagic()

        def _repr_json_(self):
                return {kind: dict(table) for kind, table in self.magics.items()}
