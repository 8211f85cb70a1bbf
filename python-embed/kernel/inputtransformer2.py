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
_ASSIGN_RE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*([!%])(.*)$")
_MAGIC_RE = re.compile(r"^(\s*)%(%?[A-Za-z_]\w*)\s?(.*)$")
_SHELL_RE = re.compile(r"^(\s*)!(.*)$")
_HELP_RE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\(\))?)\s*(\?\??)\s*$")
# IPython's ESC_PAREN, ESC_QUOTE and ESC_QUOTE2: a line starting with one is
# never Python, so the fast path looks for them at a line's start only.
_ESCAPED_CALL_RE = re.compile(r"^(\s*)([/,;])(.*)$")
_ESCAPED_CALL_START_RE = re.compile(r"^[ \t]*[/,;]", re.M)


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
        m = re.match(r"^%%([A-Za-z_]\w*)\s?(.*)$", lines[0]) if lines else None
        if m:
                body = "\n".join(lines[1:])
                return f"get_ipython().run_cell_magic({m.group(1)!r}, {m.group(2)!r}, {body!r})\n"
        if not _may_transform(cell):
                return cell
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
                m = _HELP_RE.match(line) or re.match(r"^(\s*)(\?\??)([A-Za-z_][\w.]*)\s*$", line)
                if m:
                        out.append(f"{m.group(1)}get_ipython().run_line_magic('pinfo', '')")
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
