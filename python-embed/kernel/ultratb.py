"""IPython.core.ultratb's counterpart: tracebacks as IPython shows them
(VerboseTB in the Context mode, ListTB for Plain/Minimal, SyntaxTB)."""

import linecache
import sys

from _cellvm_import import KERNEL_FILE_PREFIX

from .foreign_frames import NAMED_CODES


def _source_lines(filename, lineno, before=2, after=2):
        """IPython's context lines: '      1 code' and '----> 2 code' for the failing one."""
        lines = linecache.getlines(filename)
        if not lines or lineno < 1 or lineno > len(lines):
                return ""
        out = []
        for n in range(max(lineno - before, 1), min(lineno + after, len(lines)) + 1):
                text = lines[n - 1].rstrip("\n")
                num = str(n)
                mark = ("-" * (5 - len(num)) + "> " + num) if n == lineno else num.rjust(7)
                out.append(f"{mark} {text}")
        return "\n".join(out) + "\n"


def _stack_data():
        """IPython's stack_data (imported in the zygote with IPython's package), or None."""
        mod = sys.modules.get("stack_data")
        if mod is None:
                try:
                        import stack_data as mod
                except Exception:
                        return None
        return mod


def _stack_data_entry(stack_data, tb, context, frame, cell=None, pygmented=True):
        """A library frame as IPython's VerboseTB shows it: stack_data's pieces
        around the line, dedented, '(...)' for gaps, none for a Cython frame,
        and executing's qualname of the function. pygmented (any colour scheme
        but NoColor): each line as stack_data's pygmented render gives it, from
        the scope's text (a comment after its last statement is not shown)."""
        info = stack_data.FrameInfo(tb, stack_data.Options(before=context, after=context))
        scope_lines = _scope_lines(info) if pygmented else None
        pretty = sys.modules.get("cellvm_pretty")
        if frame.f_code in NAMED_CODES or pretty is not None and frame.f_code in pretty.NAMED_CODES:
                func = frame.f_code.co_qualname
        else:
                func = info.executing.code_qualname() if info.executing is not None else "?"
        where = f"Cell In[{cell}], line {info.lineno}" if cell is not None else f"File {info.filename}:{info.lineno}"
        out = [where
               + ("" if func == "<module>" else f", in {func}{_call_signature(frame)}") + "\n"]
        for line in info.lines:
                if line is stack_data.LINE_GAP:
                        out.append("   (...)\n")
                        continue
                num = str(line.lineno)
                mark = "-" * (5 - len(num)) + "> " + num if line.is_current else num.rjust(7)
                text = line.render().rstrip("\n")  # trailing spaces stay, as in IPython
                if scope_lines is not None and 0 <= line.lineno - scope_lines[0] < len(scope_lines[1]):
                        # As stack_data's pygmented render (pygments keeps the text).
                        text = scope_lines[1][line.lineno - scope_lines[0]].replace(
                            line.text[:line.leading_indent], "", 1)
                out.append(f"{mark} {text}\n")
        return "".join(out)


def _scope_lines(info):
        """(first line, lines) of the frame's scope as stack_data highlights it
        for IPython's coloured tracebacks: the scope's text, which ends with its
        last statement; None without a scope."""
        try:
                if info.scope is None:
                        return None
                return (info.source.line_range(info.scope)[0],
                        info.source.asttext().get_text(info.scope).splitlines())
        except Exception:
                return None


def _hides_itself(frame):
        """VerboseTB's skip_hidden: a frame whose locals set __tracebackhide__."""
        try:
                return bool(frame.f_locals.get("__tracebackhide__", 0))
        except Exception:
                return False


def _call_signature(frame):
        """IPython's '(a, b)' after a function's name in a traceback frame."""
        if frame is None:
                return "()"
        import inspect
        try:
                return inspect.formatargvalues(*inspect.getargvalues(frame), formatvalue=lambda v: "")
        except Exception:
                return "()"


def _code_qualname(code):
        """executing's code_qualname: the qualname of a def, class or lambda
        found in the source; a comprehension's, or without source, its name."""
        if (code.co_name.startswith("<") and code.co_name != "<lambda>") \
                        or not linecache.getlines(code.co_filename):
                return code.co_name
        return getattr(code, "co_qualname", code.co_name)


def _collapse_repeated(frames):
        """(frame, lineno, description): stack_data's collapse_repeated as IPython
        uses it. A frame (code, line) seen more than 3 times in the traceback is
        shown only where first, second and last seen in its stretch of such frames;
        each run of the others becomes one '[... skipping similar frames]' entry
        (description set) that counts them (deep or mutual recursion)."""
        import collections
        import itertools
        keys = [(f.f_code, n) for f, n in frames]
        counts = collections.Counter(keys)
        shown = []
        for common, group in itertools.groupby(keys, key=lambda k: counts[k] > 3):
                group = list(group)
                if not common:
                        shown += [True] * len(group)
                        continue
                marks = [False] * len(group)
                for key in set(group):
                        first = group.index(key)
                        marks[first] = True
                        if key in group[first + 1:]:
                                marks[group.index(key, first + 1)] = True
                        marks[len(group) - 1 - group[::-1].index(key)] = True
                shown += marks
        out = []
        i = 0
        while i < len(frames):
                j = i
                while j < len(frames) and shown[j] == shown[i]:
                        j += 1
                if shown[i]:
                        out += [(f, n, None) for f, n in frames[i:j]]
                else:
                        # RepeatedFrames.description: most repeated first, then by name.
                        runs = sorted(collections.Counter(keys[i:j]).items(),
                                      key=lambda item: (-item[1], item[0][0].co_name))
                        out.append((frames[i][0], frames[i][1], ", ".join(
                                f"{_code_qualname(code)} at line {n} ({c} times)"
                                for (code, n), c in runs)))
                i = j
        return out


def _from_file(e, filename):
        """e's traceback from its first frame in `filename` on (the code a
        magic ran, as IPython shows it), or whole if it has none there."""
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != filename:
                tb = tb.tb_next
        e.__traceback__ = tb or e.__traceback__
        return e


# Code whose frames a cell's traceback never starts with, as IPython hides
# its run_code (the stand-ins of interactiveshell.py).
HIDDEN_CODES = set()
# Hidden stand-ins a cell's own error still starts at (its "skipping hidden"
# line shows): IPython's handler that raised the error, not the one running
# the cell.
HIDDEN_START_CODES = set()

# Code raising what Python itself raises without a frame of its own (a
# trait's or attribute's deletion): a traceback ending there ends before it.
FRAMELESS_CODES = set()


def _leading(code):
        """A frame that runs a cell rather than being the user's: the kernel's,
        a hidden stand-in's, or the event loop's that ran a cell's await."""
        return (code.co_filename.startswith(KERNEL_FILE_PREFIX) or code in HIDDEN_CODES
                or code.co_name == "run_until_complete" and code.co_filename.endswith("/asyncio/base_events.py"))


def _user_tb(tb):
        """tb less the frames that ran the cell it starts with."""
        while tb is not None and _leading(tb.tb_frame.f_code) and tb.tb_frame.f_code not in HIDDEN_START_CODES:
                tb = tb.tb_next
        return tb


def _kernel_dropped(tb):
        """tb less the kernel's frames it starts with, from the stand-in of
        IPython's run_code on (which VerboseTB hides: its __tracebackhide__)."""
        while tb is not None and _leading(tb.tb_frame.f_code) and tb.tb_frame.f_code not in HIDDEN_CODES:
                tb = tb.tb_next
        return tb


def _passed_through_dropped(frames, filename):
        """frames less the executor's that only pass a call on to code outside
        it (a formatter's printer, a figure's draw, a repr), which ipykernel's
        traceback shows without them; the kernel's own frames where the error
        was raised are kept."""
        last = -1
        for i, f in enumerate(frames):
                if not filename(f).startswith(_EMBEDDED_FILE_PREFIX):
                        last = i
        return [f for i, f in enumerate(frames) if i >= last or not filename(f).startswith(_EMBEDDED_FILE_PREFIX)]


# The kernel's modules and the executor's others (cellvm_pretty's printers,
# which stand for IPython's pretty printer).
_EMBEDDED_FILE_PREFIX = "<cellvm "


class FormattedTB:
        """Kernel's traceback formatting in its %xmode (ipkernel.Kernel mixes it in)."""

        def _frame_header(self, filename, lineno, func, frame=None):
                n = self.cell_files.get(filename)
                where = f"Cell In[{n}], line {lineno}" if n is not None else f"File {filename}:{lineno}"
                if func != "<module>":
                        where += f", in {func}{_call_signature(frame)}"
                return where

        def format_traceback(self, exc):
                """IPython's VerboseTB: the chain of causes and contexts, oldest first."""
                blocks = [self._format_one(exc, skip_kernel=True, context=2)]
                seen = {id(exc)}
                while True:
                        cause = exc.__cause__
                        chained = cause or (None if exc.__suppress_context__ else exc.__context__)
                        if chained is None or id(chained) in seen:
                                break
                        seen.add(id(chained))
                        blocks.append(["\nThe above exception was the direct cause of the following exception:\n"
                                       if cause else
                                       "\nDuring handling of the above exception, another exception occurred:\n"])
                        blocks.append(self._format_one(chained, skip_kernel=False, context=1))
                        exc = chained
                out = ["-" * 75]
                for block in reversed(blocks):
                        out += block
                return out

        def structured_traceback(self, exc):
                """IPython's InteractiveTB (FormattedTB) in the current %xmode.
                Verbose is shown as Context (no values of the locals)."""
                if self.xmode in ("Plain", "Minimal"):
                        return self._list_traceback(exc, skip_kernel=True, seen=set())
                return self.format_traceback(exc)

        def _list_traceback(self, exc, skip_kernel, seen):
                """IPython's ListTB: 'Traceback' and one entry a frame (Plain) or the
                exception alone (Minimal), after the errors it was chained to."""
                out = []
                tb = _user_tb(exc.__traceback__) if skip_kernel else exc.__traceback__
                if self.xmode == "Plain" and tb is not None:
                        import traceback
                        out.append("Traceback (most recent call last):\n")
                        for fs in _passed_through_dropped(traceback.extract_tb(tb), lambda fs: fs.filename):
                                item = "  " + self._list_location(fs.filename, fs.lineno)
                                item += f" in {fs.name}\n" if fs.name != "<module>" else "\n"
                                if fs.line:
                                        item += f"    {fs.line.strip()}\n"
                                out.append(item)
                if isinstance(exc, SyntaxError):
                        out.append(self.syntax_error_traceback(exc)[-1])
                else:
                        # ListTB's _format_exception_only: an error's .msg before its str.
                        name = type(exc).__name__
                        try:
                                text = exc.msg
                        except Exception:
                                try:
                                        text = str(exc)
                                except Exception:
                                        text = f"<unprintable {name} object>"
                        out.append(f"{name}: {text}\n" if text else f"{name}\n")
                chained = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
                if chained is not None and id(chained) not in seen:
                        seen.add(id(chained))
                        out = (self._list_traceback(chained, False, seen)
                               + ["\nThe above exception was the direct cause of the following exception:\n"
                                  if exc.__cause__ else
                                  "\nDuring handling of the above exception, another exception occurred:\n"]
                               + out)
                return out

        def _format_one(self, exc, skip_kernel, context):
                name = type(exc).__name__
                # An earlier error the kernel caught (a set_custom_exc handler's
                # failure) keeps the stand-in of IPython's run_code, hidden below.
                tb = _user_tb(exc.__traceback__) if skip_kernel else _kernel_dropped(exc.__traceback__)
                entries = []
                frames = []
                tbs = {}
                while tb is not None:
                        frames.append((tb.tb_frame, tb.tb_lineno))
                        tbs[id(tb.tb_frame)] = tb
                        tb = tb.tb_next
                if skip_kernel:
                        frames = _passed_through_dropped(frames, lambda f: f[0].f_code.co_filename)
                while frames and frames[-1][0].f_code in FRAMELESS_CODES:
                        frames.pop()
                stack_data = _stack_data()
                records = _collapse_repeated(frames)
                hidden = 0  # frames whose locals set __tracebackhide__ (np.testing's, run_code's), not the last
                for i, (frame, lineno, skipped) in enumerate(records):
                        code = frame.f_code
                        if not skipped and i != len(records) - 1 and (_hides_itself(frame) or code in HIDDEN_CODES):
                                hidden += 1
                                continue
                        if hidden:
                                entries.append(f"    [... skipping hidden {hidden} frame]\n")
                                hidden = 0
                        if skipped:
                                entries.append(f"    [... skipping similar frames: {skipped}]\n")
                                continue
                        if stack_data is not None:
                                try:
                                        entries.append(_stack_data_entry(
                                            stack_data, tbs[id(frame)], context, frame,
                                            self.cell_files.get(code.co_filename), self.shell.colors != "NoColor"))
                                        continue
                                except Exception:
                                        pass
                        entries.append(self._frame_header(code.co_filename, lineno, code.co_name, frame)
                                       + "\n" + _source_lines(code.co_filename, lineno, context, context))
                if hidden:
                        entries.append(f"    [... skipping hidden {hidden} frame]\n")
                # VerboseTB writes 'Name: value' even when the value is empty.
                try:
                        last = f"{name}: {exc}"
                except Exception as err:
                        # VerboseTB.format_exception's fallback: str and the error as a tuple.
                        try:
                                last = f"<class 'str'>: {(type(err), err)}"
                        except Exception:
                                last = f"{name}: <exception str() failed>"
                return [f"{name:<42}Traceback (most recent call last)"] + entries + [last]

        def _exc_only(self, exc):
                try:
                        s = str(exc)
                except Exception:
                        s = "<exception str() failed>"
                return f"{type(exc).__name__}: {s}" if s else type(exc).__name__

        def _list_location(self, filename, lineno):
                """IPython's _format_filename: where a ListTB entry is."""
                n = self.cell_files.get(filename)
                if n is not None:
                        return f"Cell In[{n}]" + (f", line {lineno}" if lineno is not None else "")
                return f"File {filename}" + (f":{lineno}" if lineno is not None else "")

        def syntax_error_traceback(self, exc, running=False):
                """IPython's showsyntaxerror (SyntaxTB). running: raised by the cell's
                code (eval, ast.parse, a library), not by compiling the cell; the
                frames that raised it are listed first then."""
                out = []
                frames = []
                if running:
                        import traceback
                        # From IPython's run_code on (its stand-in, which VerboseTB
                        # hides): SyntaxTB lists the whole stack; all of it for an
                        # error caught in the cell (showsyntaxerror).
                        tb = exc.__traceback__
                        while tb is not None and tb.tb_frame.f_code not in HIDDEN_CODES:
                                tb = tb.tb_next
                        frames = traceback.extract_tb(tb or exc.__traceback__)
                # A magic compiling a file (%run) shows its error as IPython's does:
                # alone, as a cell's own.
                if frames and not frames[-1].filename.startswith(KERNEL_FILE_PREFIX):
                        out.append("Traceback (most recent call last):\n")
                        for fs in frames:
                                if fs.filename.startswith(KERNEL_FILE_PREFIX):
                                        continue
                                item = "  " + self._list_location(fs.filename, fs.lineno)
                                item += f" in {fs.name}\n" if fs.name != "<module>" else "\n"
                                if fs.line:
                                        item += f"    {fs.line.strip()}\n"
                                out.append(item)
                filename = exc.filename or "<string>"
                lines = ["  " + self._list_location(filename, exc.lineno or None)]
                text = (linecache.getline(filename, exc.lineno) if exc.lineno else "") or exc.text
                if text is not None:
                        i = len(text) - len(text.lstrip())
                        lines.append("    " + text.strip())
                        if exc.offset is not None:
                                # IPython's slice, [i:offset - 1], even when offset is 0.
                                lines.append("    " + "".join(c if c.isspace() else " "
                                                              for c in text[i:exc.offset - 1]) + "^")
                lines.append(f"{type(exc).__name__}: {exc.msg}" if exc.msg else type(exc).__name__)
                out.append("\n".join(lines) + "\n")
                return out
