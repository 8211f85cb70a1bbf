"""IPython.core.magics.history's counterpart: %history, %rep/%recall, %rerun."""

import os
import re
import sys


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
                return "\n".join(text for _, text in self._history_lines(target.split(), raw)
                                 if text) if target and target[0].isdigit() else ""

        def magic_history(self, line):
                """IPython's %history of this session: [-n] [-p] [-t] [-l [N]] [-g PATTERN]
                [-f FILE] [RANGE...]."""
                import fnmatch
                import shlex
                args = shlex.split(line)
                nums = pyprompts = translated = False
                limit = pattern = filename = None
                ranges = []
                i = 0
                while i < len(args):
                        a = args[i]
                        if a == "-n":
                                nums = True
                        elif a == "-p":
                                pyprompts = True
                        elif a == "-t":
                                translated = True
                        elif a == "-l":
                                limit = 10
                                if i + 1 < len(args) and args[i + 1].isdigit():
                                        i += 1
                                        limit = int(args[i])
                        elif a == "-g":
                                pattern = []
                                while i + 1 < len(args) and not args[i + 1].startswith("-"):
                                        i += 1
                                        pattern.append(args[i])
                        elif a == "-f" and i + 1 < len(args):
                                i += 1
                                filename = args[i]
                        elif not a.startswith("-"):
                                ranges.append(a)
                        i += 1
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
                        hist = raw[-int(args[1]):] if int(args[1]) > 0 else []
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
