"""IPython.core.magics.history's counterpart: %history, %rep/%recall, %rerun."""

import os
import re
import sys

from . import magic_parser

_UNSPECIFIED = object()  # %history -l given without a number means 10


class HistoryManager:
        """IPython's HistoryManager (get_ipython().history_manager) over this
        session's inputs; no database, so no other session's lines and no
        outputs logged (IPython's db_log_output is off by default)."""

        session_number = 1

        def __init__(self, shell):
                self.shell = shell

        @property
        def input_hist_raw(self):
                return self.shell.kernel.raw_in

        @property
        def input_hist_parsed(self):
                return self.shell.kernel.In

        @property
        def output_hist(self):
                return self.shell.kernel.Out

        def get_range(self, session=0, start=1, stop=None, raw=True, output=False):
                """(0, line, input) of this session's lines start..stop-1, as
                IPython's _get_range_session; another session has none here."""
                if session <= 0:
                        session += self.session_number
                if session != self.session_number:
                        return
                hist = self.input_hist_raw if raw else self.input_hist_parsed
                n = len(hist)
                if start < 0:
                        start += n
                if not stop or stop > n:
                        stop = n
                elif stop < 0:
                        stop += n
                for i in range(start, stop):
                        yield (0, i, (hist[i], None) if output else hist[i])

        def get_tail(self, n=10, raw=True, output=False, include_latest=False):
                """The last n (session, line, input), oldest first, the running
                cell's left out unless include_latest, as read back from
                IPython's database."""
                hist = self.input_hist_raw if raw else self.input_hist_parsed
                last = len(hist) - (1 if include_latest else 2)
                return iter([(self.session_number, i, (hist[i], None) if output else hist[i])
                             for i in range(max(1, last - n + 1), last + 1)])


class HistoryMagics:
        """IPython's HistoryMagics (IPython.core.magics.history), mixed into zmqshell.Shell."""

        _RANGE_RE = re.compile(r"((?P<startsess>~?\d+)/)?(?P<start>\d+)?((?P<sep>[\-:])"
                               r"((?P<endsess>~?\d+)/)?(?P<end>\d+))?$")

        def _history_lines(self, ranges, raw=True):
                """(line, input) of this session for IPython's range strings ("4",
                "2-5", "2:5", "~0/3"), raw or translated; other sessions have nothing here."""
                raw = self.kernel.raw_in if raw else self.kernel.In
                out = []
                for spec in ranges:
                        m = self._RANGE_RE.match(spec)
                        if not m or m.group("startsess") not in (None, "~0", "0") \
                           or m.group("endsess") not in (None, "~0", "0"):
                                continue
                        start = int(m.group("start") or 1)
                        end = int(m.group("end") or start) if m.group("end") or m.group("start") else len(raw) - 1
                        if m.group("sep") == ":":
                                end -= 1
                        out.extend((i, raw[i]) for i in range(start, min(end, len(raw) - 1) + 1))
                return out

        def _history_range(self, target, raw=True):
                """IPython's extract_input_lines: the inputs `target` names; no target,
                the session's so far less their last line (the magic asking)."""
                if not target:
                        text = "\n".join(text for _, text in self._history_lines([""], raw))
                        return text[:text.rfind("\n")] if "\n" in text else ""
                return "\n".join(text for _, text in self._history_lines(target.split(), raw)
                                 if text) if target[0].isdigit() else ""

        def magic_history(self, line):
                """IPython's %history of this session: [-n] [-p] [-t] [-l [N]] [-g PATTERN]
                [-f FILE] [RANGE...]."""
                import fnmatch
                import shlex
                parser = magic_parser("%history")
                for flag in "nopu":
                        parser.add_argument("-" + flag, action="store_true")
                parser.add_argument("-t", dest="translated", action="store_true")
                parser.add_argument("-f", dest="filename")
                parser.add_argument("-g", dest="pattern", nargs="*")
                parser.add_argument("-l", dest="limit", type=int, nargs="?", default=_UNSPECIFIED)
                parser.add_argument("range", nargs="*")
                args = parser.parse_args(shlex.split(line, posix=False))
                nums, pyprompts, translated = args.n, args.p, args.translated
                pattern, filename, ranges = args.pattern, args.filename, args.range
                limit = None if args.limit is _UNSPECIFIED else 10 if args.limit is None else args.limit
                source = self.kernel.In if translated else self.kernel.raw_in
                current = len(source) - 1
                if pattern is not None:
                        glob = "*" + " ".join(pattern) + "*"
                        hist = [(n, source[n]) for n in range(1, current + 1) if fnmatch.fnmatch(source[n], glob)]
                        nums = True
                elif limit is not None:
                        hist = [(n, source[n]) for n in range(max(1, current - limit), current)]
                else:
                        hist = [(n, source[n]) for n, _ in self._history_lines(ranges or [""])]
                if filename:
                        # IPython asks before overwriting (ask_yes_no), whose input()
                        # fails under ipykernel: it goes on.
                        filename = os.path.expanduser(filename)
                        if os.path.exists(filename):
                                print("Overwriting file.")
                out = open(filename, "w", encoding="utf-8") if filename else sys.stdout
                try:
                        for n, text in hist:
                                text = text.expandtabs(4).rstrip()
                                multiline = "\n" in text
                                if nums:
                                        print(f"{str(n).rjust(4)}:{chr(10) if multiline else ' '}", end="", file=out)
                                if pyprompts:
                                        print(">>> ", end="", file=out)
                                        if multiline:
                                                text = "\n... ".join(text.splitlines()) + "\n..."
                                print(text, file=out)
                finally:
                        if filename:
                                out.close()

        magic_hist = magic_history

        def magic_rep(self, line):
                """IPython's %rep / %recall: the text goes to the next input (a payload
                E2B drops); without arguments that is str(_), a KeyError without one."""
                if not line.strip():
                        str(self.user_ns["_"])
                return None

        magic_recall = magic_rep

        def magic_rerun(self, line):
                """IPython's %rerun [-l N] [RANGE...]: the previous cell (or the last N,
                or those RANGEs of this session) shown, then run within this one."""
                args = line.split()
                # This cell's not included; IPython's history keeps cells without
                # their trailing newlines.
                raw = [text.rstrip("\n") for text in self.kernel.raw_in[1:-1]]
                if args[:1] == ["-l"] and len(args) > 1:
                        try:
                                n = int(args[1])
                        except ValueError:
                                print("Number of lines must be an integer")
                                return
                        if n <= 0:
                                print("Requested 0 last lines - nothing to run" if n == 0
                                      else "Number of lines to rerun cannot be negative")
                                return
                        hist = raw[-n:]
                elif args:
                        hist = [text.rstrip("\n") for _, text in self._history_lines(args)]
                else:
                        hist = raw[-1:]
                if not hist:
                        print("No lines in history match specification")
                        return
                print("=== Executing: ===")
                print("\n".join(hist))
                print("=== Output: ===")
                self.run_cell("\n".join(hist), store_history=False)
