"""IPython.utils.text's SList, LSString and DollarFormatter."""

import os
import re
import string


class SList(list):
        """IPython's SList, the result of `x = !cmd`: a list of lines with
        .s/.n/.l/.p and awk-like grep(), fields(), sort()."""

        l = list = property(lambda self: self)  # noqa: E741 - IPython's names
        s = spstr = property(lambda self: " ".join(self))
        n = nlstr = property(lambda self: "\n".join(self))

        @property
        def p(self):
                from pathlib import Path
                return [Path(x) for x in self if os.path.exists(x)]

        paths = p

        def grep(self, pattern, prune=False, field=None):
                """The lines matching pattern (a regex, case-insensitive, or a
                callable), or not matching with prune; in one field if given."""
                def target(line):
                        if field is None:
                                return line
                        parts = line.split()
                        return parts[field] if -len(parts) <= field < len(parts) else ""

                pred = (lambda x: re.search(pattern, x, re.IGNORECASE)) if isinstance(pattern, str) else pattern
                return SList([el for el in self if bool(pred(target(el))) != bool(prune)])

        def fields(self, *fields):
                """Whitespace-separated fields joined by a space (IndexErrors ignored);
                without arguments, each line split."""
                if not fields:
                        return [el.split() for el in self]
                res = SList()
                for parts in [f.split() for f in self]:
                        picked = []
                        for fd in fields:
                                try:
                                        picked.append(parts[fd])
                                except IndexError:
                                        pass
                        if picked:
                                res.append(" ".join(picked))
                return res

        def sort(self, field=None, nums=False):
                """A new SList sorted by a field (numerically with nums)."""
                dsu = [[SList([line]).fields(field) if field is not None else line, line] for line in self]
                if nums:
                        for item in dsu:
                                try:
                                        item[0] = int("".join(ch for ch in item[0] if ch.isdigit()))
                                except ValueError:
                                        item[0] = 0
                dsu.sort()
                return SList([t[1] for t in dsu])


class LSString(str):
        """IPython's LSString, the output %sc keeps (getoutput(split=False)): a
        str with .l (its lines), .s (spaces for newlines), .n (itself), .p."""

        l = list = property(lambda self: self.split("\n"))  # noqa: E741 - IPython's names
        s = spstr = property(lambda self: self.replace("\n", " "))
        n = nlstr = property(lambda self: self)

        @property
        def p(self):
                from pathlib import Path
                return [Path(x) for x in self.split() if os.path.exists(x)]

        paths = p


class DollarFormatter(string.Formatter):
        """IPython's DollarFormatter, which expands ! lines and magic lines:
        `{expr}` is evaluated in full (a slice's ':' included, `!r`/`!s`
        applied), `$name` and `$name.attr` wherever an even number of single
        quotes follows (so not inside '...'), and `$$name` is `$name`. Any
        error leaves it to the caller (IPython keeps the line as written)."""

        # A $field, then (lookahead) the rest of the text with paired quotes.
        _DOLLAR_FIELD = re.compile(r"(.*?)\$(\$?[\w.]+)(?=([^']*'[^']*')*[^']*$)")

        def parse(self, text):
                for literal, field, spec, conversion in super().parse(text):
                        kept, end = "", 0
                        for m in self._DOLLAR_FIELD.finditer(literal):
                                before, name = m.group(1, 2)
                                end = m.end()
                                if name.startswith("$"):
                                        kept += before + name
                                        continue
                                yield kept + before, name, "", None
                                kept = ""
                        yield kept + literal[end:], field, spec, conversion

        def vformat(self, text, args, namespace):
                out = []
                for literal, field, spec, conversion in self.parse(text):
                        out.append(literal)
                        if field is None:
                                continue
                        value = eval(f"{field}:{spec}" if spec else field, namespace)
                        out.append(self.format_field(self.convert_field(value, conversion), ""))
                return "".join(out)


# Named as IPython's (type(x) of `x = !cmd` shows IPython.utils.text.SList),
# and that module's SList once imported, so isinstance checks against it hold.
SList.__module__ = "IPython.utils.text"


def _on_ipython_text_import(mod):
        mod.SList = SList
