"""IPython.core.inputtransformer2's counterpart: the cleanup of a cell
(prompts, indent) and its transformation (!cmd, %magic, %%magic, help, the
/ , ; call escapes)."""

import io
import re
import tokenize


# Cell transformation. Line-based: only lines that start a logical line are
# looked at (not continuation lines of brackets, backslashes or multi-line
# strings), and only these forms, as IPython transforms them:
#   !cmd            -> get_ipython().system('cmd')
#   x = !cmd        -> x = get_ipython().getoutput('cmd')
#   %magic args     -> get_ipython().run_line_magic('magic', 'args')
#   x = %magic args -> x = get_ipython().run_line_magic('magic', 'args')
#   %%magic (first line) -> get_ipython().run_cell_magic('magic', 'args', body)
#   %%magic (elsewhere)  -> get_ipython().run_line_magic('%magic', '') (no such
#                           line magic: a UsageError, as in IPython)
#   /f a b          -> f(a, b)
#   ,f a b          -> f("a", "b")
#   ;f a b          -> f("a b")
#   ?obj, ??obj, ?  -> get_ipython().run_line_magic('pinfo', 'obj') (pinfo2,
#                      psearch for a pattern; show_usage() for a bare ?)
# and, before all of these, as IPython's HelpEnd token transform does (it
# comes first): a logical line whose last token is ? or ?? (`obj?`,
# `%magic?`, `x = len?`) becomes the help call for the name it ends with.
_ASSIGN_RE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*([!%])(.*)$")
_MAGIC_RE = re.compile(r"^(\s*)%(%?[A-Za-z_]\w*)\s?(.*)$")
_SHELL_RE = re.compile(r"^(\s*)!(.*)$")
# IPython's _help_end_re: the name (a magic's too, or a pattern) a help line
# ends with.
_HELP_END_RE = re.compile(r"(%{0,2}(?!\d)[\w*]+(\.(?!\d)[\w*]+)*)(\?\??)$")
_HELP_ESCAPE_RE = re.compile(r"^(\s*)(\?\??)(.*)$")
# IPython's ESC_PAREN, ESC_QUOTE and ESC_QUOTE2: a line starting with one is
# never Python, so the fast path looks for them at a line's start only.
_ESCAPED_CALL_RE = re.compile(r"^(\s*)([/,;])(.*)$")
_ESCAPED_CALL_START_RE = re.compile(r"^[ \t]*[/,;]", re.M)


def _help_call(target, esc):
        """IPython's _make_help_call: ?? is pinfo2, a pattern psearch, else pinfo."""
        method = "pinfo2" if esc == "??" else "psearch" if "*" in target else "pinfo"
        return "get_ipython().run_line_magic(%r, %r)" % (method, target)


def _help_end_line(lines):
        """IPython's HelpEnd.find: ((row, col) where the first logical line whose
        last token is `?` starts, the row of its `?`), 0-based, or None."""
        group, depth = [], 0
        try:
                for tok in tokenize.generate_tokens(iter(lines).__next__):
                        group.append(tok)
                        if tok.type == tokenize.NEWLINE or (tok.type == tokenize.NL and depth <= 0):
                                if len(group) > 2 and group[-2].string == "?":
                                        first = next(t for t in group
                                                     if t.type not in (tokenize.INDENT, tokenize.DEDENT))
                                        return (first.start[0] - 1, first.start[1]), group[-2].start[0] - 1
                                group = []
                        elif tok.string in ("(", "[", "{"):
                                depth += 1
                        elif tok.string in (")", "]", "}") and depth > 0:
                                depth -= 1
        except (tokenize.TokenError, SyntaxError):  # IndentationError too: the compiler's
                pass
        return None


def _transform_help_end(cell):
        """IPython's HelpEnd, applied while it finds a line: the whole logical
        line becomes the help call for the name it ends with (`x = len?` asks
        for len). It stops at a line with no such name (`a[0]?`), which IPython
        leaves to the compiler."""
        lines = (cell if cell.endswith("\n") else cell + "\n").splitlines(keepends=True)
        for _ in range(500):  # IPython's TRANSFORM_LOOP_LIMIT
                found = _help_end_line(lines)
                if found is None:
                        break
                (row, col), qrow = found
                piece = "".join(lines[row:qrow + 1])
                m = _HELP_END_RE.search(piece[col:])
                if not m:
                        break
                lines[row:qrow + 1] = [piece[:col] + _help_call(m.group(1), m.group(3)) + "\n"]
        out = "".join(lines)
        return out if cell.endswith("\n") else out[:-1]


def _escaped_call(esc, content):
        """IPython's _tr_paren, _tr_quote and _tr_quote2: NAME and its
        arguments (the rest of the line) as a call."""
        name, _, args = content.partition(" ")
        if esc == "/":
                return "%s(%s)" % (name, ", ".join(args.split()))
        if esc == ",":
                return '%s("%s")' % (name, '", "'.join(args.split()))
        return '%s("%s")' % (name, args)


def _protected_rows(cell):
        """Rows (1-based) that continue a logical line: inside brackets, strings, after '\\'."""
        rows = set()
        try:
                depth = 0
                for tok in tokenize.generate_tokens(io.StringIO(cell).readline):
                        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
                        elif tok.type == tokenize.OP and tok.string in "([{":
                                if depth == 0:
                                        open_row = tok.start[0]
                                depth += 1
                        elif tok.type == tokenize.OP and tok.string in ")]}":
                                depth = max(depth - 1, 0)
                                if depth == 0:
                                        rows.update(range(open_row + 1, tok.end[0] + 1))
        except (tokenize.TokenError, SyntaxError, IndentationError):
                pass
        lines = cell.split("\n")
        for i, line in enumerate(lines[:-1]):
                if line.endswith("\\"):
                        rows.add(i + 2)
        return rows


_CLASSIC_PROMPT_RE = re.compile(r"^(>>>|\.\.\.)( |$)")
_IPYTHON_PROMPT_RE = re.compile(r"^(In \[\d+\]: |\s*\.{3,}: ?)")
_IPYTHON_PROMPT_INITIAL_RE = re.compile(r"^In \[\d+\]: ")


def _strip_prompts(lines, prompt_re, initial_re):
        if lines and (initial_re.match(lines[0]) or (len(lines) > 1 and prompt_re.match(lines[1]))):
                return [prompt_re.sub("", line, count=1) for line in lines]
        return lines


def cleanup_cell(cell):
        """IPython's cleanup transforms, before anything else looks at a cell:
        leading empty lines dropped, the first line's indent removed from every
        line that has it, '>>> '/'... ' and 'In [n]: ' prompts stripped."""
        if cell[:1] not in " \t\r\n\f\v" and ">>>" not in cell and "..." not in cell \
                        and "In [" not in cell:
                return cell  # none of the above can apply
        lines = cell.splitlines(keepends=True)
        for i, line in enumerate(lines):
                if line and not line.isspace():
                        lines = lines[i:]
                        break
        m = re.match(r"^[ \t]+", lines[0]) if lines else None
        if m:
                space = m.group(0)
                lines = [line[len(space):] if line.startswith(space) else line for line in lines]
        lines = _strip_prompts(lines, _CLASSIC_PROMPT_RE, _CLASSIC_PROMPT_RE)
        lines = _strip_prompts(lines, _IPYTHON_PROMPT_RE, _IPYTHON_PROMPT_INITIAL_RE)
        return "".join(lines)


def _may_transform(cell):
        """False when transform_cell() would return `cell` unchanged (no shell
        escape, magic, help, call escape or exit/quit): plain Python, the
        common case."""
        return ("!" in cell or "%" in cell or "?" in cell or "exit" in cell
                or "quit" in cell or _ESCAPED_CALL_START_RE.search(cell) is not None)


def transform_cell(cell):
        lines = cell.split("\n")
        # `%%name?` is help, not the cell magic (IPython's cell_magic leaves it).
        m = re.match(r"^%%([A-Za-z_]\w*)\s?(.*)$", lines[0]) if lines else None
        if m and not re.match(r"%%\w+\?", lines[0]):
                # IPython's transform_cell first ends the cell with a newline: the body has one.
                body = (cell if cell.endswith("\n") else cell + "\n").partition("\n")[2]
                return f"get_ipython().run_cell_magic({m.group(1)!r}, {m.group(2)!r}, {body!r})\n"
        if not _may_transform(cell):
                return cell
        if "?" in cell:
                cell = _transform_help_end(cell)
                lines = cell.split("\n")
        protected = _protected_rows(cell)
        out = []
        for row, line in enumerate(lines, 1):
                if row in protected:
                        out.append(line)
                        continue
                m = _ASSIGN_RE.match(line)
                if m and not line.lstrip().startswith(("!=",)) and not m.group(4).startswith("="):
                        indent, target, kind, rest = m.groups()
                        if kind == "!":
                                out.append(f"{indent}{target} = get_ipython().getoutput({rest!r})")
                                continue
                        mm = re.match(r"^([A-Za-z_]\w*)\s?(.*)$", rest)
                        if mm:
                                out.append(f"{indent}{target} = get_ipython().run_line_magic("
                                           f"{mm.group(1)!r}, {mm.group(2)!r})")
                                continue
                m = _HELP_ESCAPE_RE.match(line)
                if m:  # IPython's _tr_help, _tr_help2
                        indent, esc, content = m.group(1), m.group(2), m.group(3).rstrip()
                        out.append(indent + (_help_call(content, esc) if content
                                             else "get_ipython().show_usage()"))
                        continue
                m = re.match(r"^(\s*)(exit|quit)\s*$", line)
                if m:
                        out.append(f"{m.group(1)}{m.group(2)}()")
                        continue
                m = _SHELL_RE.match(line)
                if m:
                        out.append(f"{m.group(1)}get_ipython().system({m.group(2)!r})")
                        continue
                m = _MAGIC_RE.match(line)
                if m:
                        out.append(f"{m.group(1)}get_ipython().run_line_magic("
                                   f"{m.group(2)!r}, {m.group(3)!r})")
                        continue
                m = _ESCAPED_CALL_RE.match(line)
                if m:
                        out.append(m.group(1) + _escaped_call(m.group(2), m.group(3)))
                        continue
                out.append(line)
        return "\n".join(out)


def _tokenize_error(cell):
        """The IndentationError IPython's input transformer raises while
        tokenizing the cell (before compiling it), or None."""
        try:
                for _tok in tokenize.generate_tokens(io.StringIO(cell).readline):
                        pass
        except IndentationError as e:
                return e
        except (tokenize.TokenError, SyntaxError):
                pass
        return None


class TransformerManager:
        """get_ipython().input_transformer_manager: a cell's IPython syntax
        (magics, !, ?) as the Python it runs as."""

        @staticmethod
        def transform_cell(cell):
                if not cell.endswith("\n"):
                        cell += "\n"  # as IPython's TransformerManager
                return transform_cell(cleanup_cell(cell))
