"""IPython.core.interactiveshell's counterpart: how a cell runs (run_cell,
run_ast_nodes, the CachingCompiler's file names and flags, the input
history), and showtraceback's error message."""

import __future__
import ast
import codeop
import linecache
import re
import sys

import _cellvm

from .backend_inline import _figures_pending, _flush_figures, _flush_figures_callback
from .error import UsageError
from .foreign_frames import (as_if_in_ipykernel, as_if_in_ipython, chained, ipython_calling_on,
                             warn_as_if_from)
from .inputtransformer2 import _may_transform, _tokenize_error, cleanup_cell, transform_cell
from .iostream import _flush_std
from .kernelbase import _set_sigint
from .session import EXEC_ERROR, _send
from .ultratb import HIDDEN_CODES, HIDDEN_START_CODES, _kernel_dropped, _user_tb

# The recursion count where ipykernel runs a cell's code (cell_depth.h).
_IPYKERNEL_CELL_DEPTH = 24
_IPYKERNEL_TASK_DEPTH = 14
_IPYKERNEL_AWAIT_DEPTH = 15

# IPython's HistoryManager._exit_re: inputs history does not keep.
_EXIT_RE = re.compile(r"(exit|quit)(\s*\(.*\))?$")


# A cell's code runs in IPython's run_code frame (its exec, or its await of a
# cell with a top-level await): a warning pointing above the cell (stacklevel
# 2) names that file and line, as in ipykernel. Tracebacks hide the frame.
# The cell's code is counted against the recursion limit as deep as there
# (cell_depth.h): DEPTH is where its frame is in ipykernel. Python's own
# traceback (traceback.print_last) underlines a call narrower than the line it
# reads from IPython's file: each call below is as wide as IPython's there.
def _exec(user_ns, code_obj):
        return eval_at_depth(code_obj, user_ns, DEPTH          )


# A coroutine's shift lasts until its loop is done (_run_code undoes it); made
# where the coroutine first runs, in the one line the frame stands for.
async def _await(user_ns, coroutine):
        return await (SHIFTS.append(depth_shift(DEPTH)) or coroutine                   )


DEPTH = None  # each stand-in below has its own in its globals (as_if_in)
_AWAIT_SHIFTS = []
_DEPTHS = dict(eval_at_depth=_cellvm.eval_at_depth, depth_shift=_cellvm.depth_shift, SHIFTS=_AWAIT_SHIFTS)
eval_at_depth, depth_shift, SHIFTS = _DEPTHS.values()
_RUN_CODE = dict(qualname="InteractiveShell.run_code", params=("self", "code_obj"), **_DEPTHS)
# A cell's code; a cell with a top-level await: its code up to an await, and
# its coroutine, which ipykernel runs as a task of its loop.
_run_code_exec = as_if_in_ipython(_exec, "core/interactiveshell.py", 3378, **_RUN_CODE, DEPTH=_IPYKERNEL_CELL_DEPTH)
_run_code_exec_in_task = as_if_in_ipython(_exec, "core/interactiveshell.py", 3378, **_RUN_CODE,
                                          DEPTH=_IPYKERNEL_TASK_DEPTH)
_run_code_await = as_if_in_ipython(_await, "core/interactiveshell.py", 3376, **_RUN_CODE,
                                   DEPTH=_IPYKERNEL_AWAIT_DEPTH)
HIDDEN_CODES.update((_run_code_exec.__code__, _run_code_exec_in_task.__code__, _run_code_await.__code__))


# IPython's loop runner (_AsyncIORunner), by which its run_cell runs code with
# a top-level await: on ipykernel's loop, which is running.
_LOOP_RUNNER = ipython_calling_on("core/async_helpers.py", 56, "_AsyncIORunner.__call__", ("self", "coro"),
                                  carets=9)


async def _never_run():
        pass  # what the refused runner is given, closed unrun (_loop_refusal)


def _top_level_await(cell, flags):
        """IPython's _should_be_async: the cell compiles only as a coroutine."""
        try:
                code = compile(cell, "<>", "exec", flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError):
                return False
        return bool(code.co_flags & 0x80)


# An error whose str() raises: ipykernel's _showtraceback calls it, from
# showtraceback, from run_code's handler (hidden), where that second error's
# traceback starts.
def _str_of(self, etype, evalue, stb):
        return str(evalue)


_showtraceback_str = as_if_in_ipykernel(_str_of, "zmqshell.py", 538, "ZMQInteractiveShell._showtraceback")
_SHOWTRACEBACK = [ipython_calling_on("core/interactiveshell.py", 3400, "InteractiveShell.run_code",
                                     ("self", "code_obj", "result")),
                  ipython_calling_on("core/interactiveshell.py", 2008, "InteractiveShell.showtraceback",
                                     ("self", "exc_tuple", "filename", "tb_offset", "exception_only",
                                      "running_compiled_code"))]
HIDDEN_CODES.add(_SHOWTRACEBACK[0].__code__)
HIDDEN_START_CODES.add(_SHOWTRACEBACK[0].__code__)


def _ending_newline(cell):
        return cell if cell.endswith("\n") else cell + "\n"


# The flags IPython's CachingCompiler (a codeop.Compile) parses cells with.
PARSE_FLAGS = codeop.PyCF_DONT_IMPLY_DEDENT | codeop.PyCF_ALLOW_INCOMPLETE_INPUT

# Bits of compile() flags that come from `from __future__ import ...`.
FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
        FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag
del _name


class ExecutionInfo:
        """IPython's ExecutionInfo: what pre_run_cell callbacks get."""

        __module__ = "IPython.core.interactiveshell"
        raw_cell = None
        store_history = False
        silent = False
        shell_futures = True
        cell_id = None

        def __init__(self, raw_cell, store_history, silent, shell_futures, cell_id):
                self.raw_cell = raw_cell
                self.store_history = store_history
                self.silent = silent
                self.shell_futures = shell_futures
                self.cell_id = cell_id

        def __repr__(self):
                raw_cell = (self.raw_cell[:50] + "..") if len(self.raw_cell) > 50 else self.raw_cell
                return ('<%s object at %x, raw_cell="%s" store_history=%s silent=%s shell_futures=%s '
                        'cell_id=%s>' % (type(self).__qualname__, id(self), raw_cell, self.store_history,
                                         self.silent, self.shell_futures, self.cell_id))


class ExecutionResult:
        """IPython's ExecutionResult: what post_run_cell callbacks get."""

        __module__ = "IPython.core.interactiveshell"
        execution_count = None
        error_before_exec = None
        error_in_exec = None
        info = None
        result = None

        def __init__(self, info):
                self.info = info

        @property
        def success(self):
                return (self.error_before_exec is None) and (self.error_in_exec is None)

        def raise_error(self):
                if self.error_before_exec is not None:
                        raise self.error_before_exec
                if self.error_in_exec is not None:
                        raise self.error_in_exec

        def __repr__(self):
                return ('<%s object at %x, execution_count=%s error_before_exec=%s error_in_exec=%s '
                        'info=%s result=%s>' % (type(self).__qualname__, id(self), self.execution_count,
                                                self.error_before_exec, self.error_in_exec,
                                                repr(self.info), repr(self.result)))


# What compiling a cell may raise: reported as the cell's error.
_COMPILE_ERRORS = (OverflowError, SyntaxError, ValueError, TypeError, MemoryError)


class CellRunner:
        """Kernel's run_cell and what it uses (ipkernel.Kernel mixes it in)."""

        def _cell_filename(self, raw):
                """ipykernel's name for a cell's file (compiler.get_file_name): a
                hash of the raw cell, so the same source always gets the same name."""
                try:
                        return f"{self.cell_dir}/{_cellvm.cell_hash(raw)}.py"
                except UnicodeEncodeError:  # lone surrogates: not UTF-8
                        self.serial += 1
                        return f"{self.cell_dir}/cell{self.serial}.py"

        def _register_source(self, source, filename, numbered=True):
                """IPython's compiler.cache: the source for tracebacks and inspect,
                and the execution count its file name shows as (In[n]), unless
                not `numbered` (a cell run without the shell's futures has a
                compiler of its own, whose names tracebacks do not know)."""
                # Each line ends in a newline, the last one too (Python's traceback
                # places its carets by the line's length as read).
                lines = [line + "\n" for line in source.splitlines()]
                linecache.cache[filename] = (len(source), None, lines, filename)
                if numbered:
                        self.cell_files[filename] = self.count
                return filename

        def _store_inputs(self, raw, transformed):
                """IPython's store_inputs: In/_ih and _i* without trailing newlines;
                an exit/quit cell is left out (In's indexes then trail the count)."""
                n = self.count
                raw, transformed = raw.rstrip("\n"), transformed.rstrip("\n")
                head = raw.lstrip()
                if head[:4] in ("exit", "quit") and _EXIT_RE.match(head.strip()):
                        return
                self.In.append(transformed)
                self.raw_in.append(raw)
                self.inputs = self.inputs[1:] + [raw]
                _iii, _ii, _i, _i00 = self.inputs
                self.ns.update({"_i": _i, "_ii": _ii, "_iii": _iii, f"_i{n}": _i00})

        def _run_code(self, code, ctx=None):
                """ctx: the contextvars context of a cell with a top-level await.
                sys.excepthook is the shell's while it runs, as IPython's run_code
                makes it (and puts back what was there after)."""
                hook, sys.excepthook = sys.excepthook, self.shell.excepthook
                try:
                        return self._run_code_hooked(code, ctx)
                finally:
                        sys.excepthook = hook

        def _run_code_hooked(self, code, ctx):
                result = _run_code_exec(self.ns, code) if ctx is None \
                    else ctx.run(_run_code_exec_in_task, self.ns, code)
                if code.co_flags & 0x80 and result is not None:  # CO_COROUTINE: top-level await
                        import asyncio
                        if self.loop is None:
                                self.loop = asyncio.new_event_loop()
                        inside = self.in_loop
                        self.loop_leave()  # the loop really runs now
                        awaited = _run_code_await(self.ns, result)
                        try:
                                result = self.loop.run_until_complete(
                                        awaited if ctx is None else self.loop.create_task(awaited, context=ctx))
                        finally:
                                while _AWAIT_SHIFTS:
                                        _cellvm.depth_unshift(_AWAIT_SHIFTS.pop())
                                if inside:
                                        self.loop_enter()
                return result

        def _parse(self, cell, filename):
                # IPython's CachingCompiler parses with codeop.Compile's flags: a cell
                # cut short (an unclosed bracket) is "incomplete input".
                return compile(cell, filename, "exec",
                               self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST
                               | PARSE_FLAGS, dont_inherit=True)

        def _compile(self, cell, filename, tree=None):
                """(module code or None, trailing expression code or None); `tree`:
                the cell already parsed (_parse) under this filename."""
                flags = self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                if tree is None:
                        tree = self._parse(cell, filename)
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                        last = ast.Expression(tree.body.pop().value)
                code = None
                if tree.body or last is None:
                        code = compile(tree, filename, "exec", flags, dont_inherit=True)
                        self.flags |= code.co_flags & FUTURE_FLAGS
                if last is not None:
                        last = compile(last, filename, "eval", self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                                       dont_inherit=True)
                return code, last

        def _compile_nodes(self, cell, filename, tree, interactivity):
                """IPython's run_ast_nodes for an ast_node_interactivity other than
                'last_expr': statement by statement, those run interactively in
                'single' mode (each expression they hold goes to sys.displayhook).
                (codes of the statements up to the first that does not compile,
                None, its error)."""
                if tree is None:
                        tree = self._parse(cell, filename)
                nodes = tree.body
                if interactivity == "last_expr_or_assign":
                        node = nodes[-1] if nodes else None
                        target = None
                        if isinstance(node, ast.Assign) and len(node.targets) == 1:
                                target = node.targets[0]
                        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                                target = node.target
                        if isinstance(target, ast.Name):
                                nodes.append(ast.fix_missing_locations(ast.Expr(ast.Name(target.id, ast.Load()))))
                        interactivity = "last_expr"
                if interactivity == "last_expr":
                        interactivity = "last" if nodes and isinstance(nodes[-1], ast.Expr) else "none"
                if interactivity not in ("none", "last", "all"):
                        return [], None, ValueError(f"Interactivity was {interactivity!r}")
                first_single = {"none": len(nodes), "last": len(nodes) - 1, "all": 0}[interactivity]
                codes = []
                flags = self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                try:
                        for i, node in enumerate(nodes):
                                mod, mode = (ast.Module([node], []), "exec") if i < first_single \
                                    else (ast.Interactive([node]), "single")
                                code = compile(mod, filename, mode, flags, dont_inherit=True)
                                self.flags |= code.co_flags & FUTURE_FLAGS
                                flags = self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                                codes.append(code)
                except _COMPILE_ERRORS as e:
                        return codes, None, e
                return codes, None, None

        def _compile_statements(self, cell, filename, error):
                """The cell parsed but does not compile as a whole ('break' outside
                a loop, a late `from __future__`...). IPython compiles and runs a
                cell statement by statement: (codes of the statements before the
                first that does not compile, None, its error); or, when each one
                compiles alone, (all but a trailing expression, its code, None)."""
                try:
                        tree = self._parse(cell, filename)
                except _COMPILE_ERRORS:
                        return (), None, error
                body = tree.body
                last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
                codes = []
                try:
                        for node in body:
                                code = compile(ast.Module([node], []), filename, "exec",
                                               self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
                                self.flags |= code.co_flags & FUTURE_FLAGS
                                codes.append(code)
                        if last is not None:
                                last = compile(ast.Expression(last.value), filename, "eval",
                                               self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
                except _COMPILE_ERRORS as e:
                        return codes, None, e
                return codes, last, None

        def run_cell(self, raw):
                """Runs one cell; returns the exception it raised (or None)."""
                if not raw or raw.isspace():
                        return None
                # IPython's pre_execute: each cell warns afresh where an earlier one
                # already did (the "default" action shows a warning once per registry).
                self.ns.pop("__warningregistry__", None)
                events = self.shell.__dict__.get("events")
                if events is not None and events._user_callbacks():
                        return self._run_cell_events(raw, events)
                if self.autoreload is None:
                        err = self._run_cell(raw)
                else:
                        self.autoreload.pre_run_cell()
                        try:
                                err = self._run_cell(raw)
                        finally:
                                self.autoreload.post_execute()
                if self.exec_result is not None:  # the cell registered the first callback
                        result, self.exec_result = self.exec_result, None
                        self._post_events(self.shell.events, result, err)
                return err

        def _events_registered(self):
                """A callback was registered while a cell ran outside the events:
                its post_execute and post_run_cell still fire for it, as in IPython."""
                if self.cell_running and not self.in_events and self.exec_result is None:
                        self.exec_result = ExecutionResult(
                            ExecutionInfo(self.inputs[-1], True, False, True, None))
                        self.exec_result.execution_count = self.count

        def _run_cell_events(self, raw, events):
                """run_cell with shell.events triggered as IPython does: pre_execute,
                pre_run_cell(info), the cell, then post_execute (which flushes the
                figures, where the inline backend registered it) and post_run_cell(result)."""
                info = ExecutionInfo(raw, True, False, True, None)
                result = self.exec_result = ExecutionResult(info)
                result.execution_count = self.count
                self.cell_started = False
                events.trigger("pre_execute")
                if self.autoreload is not None:
                        self.autoreload.pre_run_cell()
                events.trigger("pre_run_cell", info)
                self.in_events = True
                try:
                        err = self._run_cell(raw)
                finally:
                        self.in_events = False
                        self.exec_result = None
                if self.autoreload is not None:
                        self.autoreload.post_execute()
                if _flush_figures_callback not in events.callbacks["post_execute"]:
                        try:
                                _flush_figures()  # figures of a backend activated some other way
                        except Exception as e:
                                self.report_error(e)
                return self._post_events(events, result, err)

        def _post_events(self, events, result, err):
                if err is not None:
                        if self.cell_started:
                                result.error_in_exec = err
                        else:
                                result.error_before_exec = err
                _set_sigint(True)
                try:
                        events.trigger("post_execute")
                        events.trigger("post_run_cell", result)
                finally:
                        _set_sigint(False)
                return err

        def _run_cell(self, raw):
                cleaned = cleanup_cell(raw)
                filename = self._cell_filename(raw)
                # Plain Python (nothing to transform) is parsed here, under the name
                # the cell gets below: a cell that parses cannot fail IPython's
                # tokenizer check, whose pure-Python tokenize is then skipped.
                plain = not _may_transform(cleaned)
                tree = parse_err = None
                if plain:
                        try:
                                tree = self._parse(cleaned, filename)
                        except _COMPILE_ERRORS as e:
                                parse_err = e
                # A cell magic's body is not Python: IPython never tokenizes it.
                if tree is not None or cleaned.startswith("%%"):
                        tok_err = None
                else:
                        tok_err = _tokenize_error(cleaned)
                if tok_err is not None:
                        # IPython 8.5 counts a cell failing there twice (run_cell_async
                        # and its error_before_exec both increment).
                        self._store_inputs(raw, raw)
                        self.shell.logger.log(raw, raw)
                        self.count += 1
                        self._send_error(tok_err)
                        return tok_err
                cell = cleaned if plain else transform_cell(cleaned)
                magic = self.shell.automagic(cell)
                if magic is None:
                        magic = self.shell.autocall_line(cell)
                if magic is not None:
                        cell, tree, parse_err = magic, None, None
                self._store_inputs(raw, cell)
                self.shell.logger.log(_ending_newline(cell), raw)  # IPython's transform_cell ends it so
                self._register_source(cell, filename)
                self.cell_text = cell
                compile_err = None
                interactivity = self.shell.ast_node_interactivity
                try:
                        if parse_err is not None:
                                raise parse_err
                        if interactivity == "last_expr":
                                code, last = self._compile(cell, filename, tree)
                                codes = (code,) if code is not None else ()
                        else:
                                codes, last, compile_err = self._compile_nodes(cell, filename, tree, interactivity)
                except _COMPILE_ERRORS as e:
                        codes, last, compile_err = ((), None, e) if parse_err is not None \
                            else self._compile_statements(cell, filename, e)
                if compile_err is not None and not codes and last is None:
                        self._send_error(compile_err)
                        return compile_err
                err = running = None
                self.cell_running = self.cell_started = True
                self.loop_enter()
                _set_sigint(True)
                # ipykernel runs a cell with a top-level await as a task of its own:
                # in a copy of the context (a ContextVar set there is gone after it).
                ctx = None
                if last is not None and last.co_flags & 0x80 or any(c.co_flags & 0x80 for c in codes):
                        import contextvars
                        ctx = contextvars.copy_context()
                try:
                        try:
                                for code in codes:
                                        self._run_code(code, ctx)
                                if last is not None:
                                        value = self._run_code(last, ctx)
                                        show, args, kw = self._display_target(value)
                                        if ctx is None:
                                                show(*args, **kw)
                                        else:
                                                ctx.run(show, *args, **kw)
                                err = compile_err
                        except BaseException as e:  # noqa: BLE001 - every cell error is reported
                                err = running = e
                                self._custom_exc(e)
                        if err is not None and not self.in_events and _figures_pending():
                                # IPython shows the cell's error before post_execute's
                                # callbacks draw the figures (E2B keeps the first error).
                                _set_sigint(False)
                                self._send_error(err, running=err is running)
                                _set_sigint(True)
                        try:
                                if not self.in_events:
                                        _flush_figures()
                        except BaseException as e:  # noqa: BLE001
                                err = err or e
                finally:
                        _set_sigint(False)
                        self.cell_running = False
                        self.loop_leave()
                if err is not None:
                        self._send_error(err, running=err is running)
                return err

        def _custom_exc(self, e):
                """IPython's run_code: an error of a type given to set_custom_exc
                goes to its handler, whose traceback nobody shows (the cell's
                status is still "error"). A handler that fails is unregistered
                and its error shown, then the original's. True if handled."""
                types, handler = self.custom_exc
                if not types or not isinstance(e, types):
                        return False
                self.handled_error = e
                try:
                        stb = handler(self.shell, type(e), e, e.__traceback__, tb_offset=None)
                        # IPython's validate_stb: a list of strings, a string or None.
                        if not (stb is None or isinstance(stb, str) or isinstance(stb, list)
                                and all(isinstance(line, str) for line in stb)):
                                raise TypeError(f"CustomTB must return list of strings, not {stb!r}")
                except Exception as herr:  # noqa: BLE001 - IPython's bare except
                        self.custom_exc = ((), None)
                        _flush_std()
                        sys.stderr.write("Custom TB Handler failed, unregistering\n")
                        print("\n".join(self.structured_traceback(herr)))
                        print("The original exception:")
                return True

        def run_nested_cell(self, raw, store_history=False, silent=False, shell_futures=True, cell_id=None):
                """IPython's shell.run_cell called by a cell: `raw` runs within it,
                its trailing expression shown with the cell's execution count (silent:
                not shown) and its error shown; the cell goes on. Returns the
                ExecutionResult."""
                info = ExecutionInfo(raw, store_history and not silent, silent, shell_futures, cell_id)
                result = ExecutionResult(info)
                if not raw or raw.isspace():
                        return result
                events = None if silent else self.shell.__dict__.get("events")
                cell = transform_cell(cleanup_cell(raw))
                if _top_level_await(cell, self.flags):
                        # IPython's run_cell gives such code to its loop runner, and
                        # ipykernel's loop, running, refuses it before it runs:
                        # nothing stored, no pre_ events, the error shown.
                        refused = self._loop_refusal()
                        if refused is not None:
                                result.error_in_exec = refused
                                self._send_error(refused, running=True)
                                return self._nested_ended(result, silent, events)
                if events is not None:
                        events.trigger("pre_execute")
                        events.trigger("pre_run_cell", info)
                saved = self.exec_result
                self.exec_result = result
                if not silent:
                        self.shell.logger.log(_ending_newline(cell), raw)
                # store_history: the code is an input of its own, at the running
                # count, which it then takes (the cell's result and the cells
                # after count on from there), as IPython's run_cell does.
                if info.store_history:
                        result.execution_count = self.count
                        self._store_inputs(raw, cell)
                        self.cell_text = cell  # the last input: what a ';' is looked for in
                filename = self._register_source(cell, self._cell_filename(raw), numbered=shell_futures)
                try:
                        try:
                                code, last = self._compile(cell, filename)
                        except _COMPILE_ERRORS as e:
                                result.error_before_exec = e
                                self._send_error(e)
                                return result
                        try:
                                if code is not None:
                                        self._run_code(code)
                                if last is not None:
                                        value = self._run_code(last)
                                        if not silent:
                                                # IPython's quiet() reads the last stored input
                                                # (cell_text): the running cell's unless this
                                                # one was stored.
                                                show, args, kw = self._display_target(value, more=True)
                                                show(*args, **kw)
                        except KeyboardInterrupt:
                                raise
                        except BaseException as e:  # noqa: BLE001 - IPython's showtraceback
                                result.error_in_exec = e
                                if isinstance(e, UsageError):
                                        # IPython's show_usage_error: a line on stderr, and the
                                        # running cell's status stays (no error message).
                                        sys.last_type, sys.last_value = type(e), e
                                        sys.last_traceback = _kernel_dropped(e.__traceback__)
                                        sys.stderr.write(f"UsageError: {e}\n")
                                elif not self._custom_exc(e):
                                        self._send_error(e, running=True)
                                else:
                                        self.handled_error = None  # shown by no one, the cell goes on
                finally:
                        self.exec_result = saved
                        if info.store_history:
                                self.count += 1
                return self._nested_ended(result, silent, events)

        def _loop_refusal(self):
                """The RuntimeError of IPython's loop runner on the running loop, from
                its frames; None where no loop runs, and the code runs instead."""
                import asyncio
                if asyncio._get_running_loop() is None:
                        self.loop_enter()
                # A thread's cell: the kernel's loop, running in the main thread.
                loop = asyncio._get_running_loop() or (self.loop if self.in_loop else None)
                if loop is None:
                        return None
                coro = _never_run()
                try:
                        chained([_LOOP_RUNNER], loop.run_until_complete, coro)()
                except RuntimeError as e:
                        return e
                finally:
                        coro.close()  # never awaited, without the warning
                return None

        def _nested_ended(self, result, silent, events):
                """The end of IPython's run_cell for a nested cell: post_execute
                flushes the figures (inside a %%capture body, into it), then
                post_run_cell. Returns the ExecutionResult."""
                if not silent and (events is None or _flush_figures_callback not in events.callbacks["post_execute"]):
                        try:
                                _flush_figures()
                        except Exception as e:
                                self.report_error(e)
                if events is not None:
                        events.trigger("post_execute")
                        events.trigger("post_run_cell", result)
                return result

        def report_error(self, e, exit_warning=True, exception_only=False):
                """An error shown while the cell goes on (a formatter's, as IPython's
                showtraceback); the cell's status becomes "error"."""
                if not exit_warning:
                        saved, self.exit_warning_off = self.exit_warning_off, True
                        try:
                                self._send_error(e, exception_only=exception_only)
                        finally:
                                self.exit_warning_off = saved
                        return
                self._send_error(e, exception_only=exception_only)

        def _rendered_traceback(self, e):
                """IPython's showtraceback: an error may render its own traceback
                (a list of strings; notebooks' StopExecution returns None to stop
                quietly). The client joins the list as E2B's server does; None
                is no traceback (ipykernel sends None, on which E2B's server
                fails, docs/NOTEBOOK.md)."""
                try:
                        tb = e._render_traceback_()
                except Exception as err:  # noqa: BLE001 - IPython's own
                        # As IPython's traceback.print_exc() there: both errors, chained
                        # (less the kernel's frames, which IPython's show).
                        _flush_std()
                        print("Unexpected exception formatting exception. Falling back to standard exception")
                        _flush_std()
                        import traceback
                        e.__traceback__ = _user_tb(e.__traceback__)
                        err.__context__ = e
                        traceback.print_exception(type(err), err, err.__traceback__.tb_next)
                        return []
                if tb is None:
                        return []
                if isinstance(tb, str):
                        return [tb]
                return [str(line) for line in tb]

        def _send_error(self, e, running=False, full=False, exception_only=False):
                """running: e was raised by the cell's code (IPython's
                showtraceback(running_compiled_code=True)). full: a SystemExit's
                whole traceback too (%tb). exception_only: showtraceback's short
                form, as run_code shows a SystemExit."""
                # IPython's _get_exc_info: sys.last_* (traceback.print_last, pdb.pm)
                # hold the error, so its frames live until the next one (as there:
                # a coroutine it held warns "never awaited" then, not now). They
                # start at IPython's run_code, which caught it (traceback.print_last
                # shows that frame); the kernel's frames below it are left out.
                last_tb = _kernel_dropped(e.__traceback__)
                sys.last_type, sys.last_value, sys.last_traceback = type(e), e, last_tb
                # The protocol carries one EXEC_ERROR per execution; E2B keeps the first.
                if self.error_sent:
                        e.__traceback__ = last_tb
                        return
                self.error_sent = True
                rendered = False  # its own _render_traceback_ (IPython's debugger opens after it too)
                if e is self.handled_error:
                        tb = []  # a set_custom_exc handler took it: no traceback shown
                elif isinstance(e, SyntaxError):
                        tb = self.syntax_error_traceback(e, running)
                elif isinstance(e, UsageError):
                        # IPython's show_usage_error: one line on stderr and no
                        # traceback (E2B gets the error from execute_reply alone).
                        sys.stderr.write(f"UsageError: {e}\n")
                        tb = []
                elif exception_only or isinstance(e, SystemExit) and not full:
                        tb = ["An exception has occurred, use %tb to see the full traceback.\n",
                              self._exc_only(e) + "\n"]
                        # IPython's run_code warns (once per context, as the warning
                        # filters decide).
                        if not exception_only and not self.exit_warning_off:
                                warn_as_if_from("To exit: use 'exit', 'quit', or Ctrl-D.", UserWarning,
                                                "core/interactiveshell.py", 3386)
                elif hasattr(e, "_render_traceback_"):
                        tb = self._rendered_traceback(e)
                        rendered = True
                else:
                        tb = None
                try:
                        value = str(e)
                except Exception as err:
                        value = "<exception str() failed>"
                        if tb is None:
                                # ipykernel's own str(evalue) raises in turn: the cell shows
                                # that error, raised while handling e, from ipykernel's frames.
                                try:
                                        chained(_SHOWTRACEBACK, _showtraceback_str, None, None, e, None)()
                                except Exception as again:
                                        err = again
                                e.__traceback__ = last_tb
                                err.__context__ = e
                                err.__cause__ = None
                                err.__suppress_context__ = False
                                e = err
                                last_tb = _kernel_dropped(err.__traceback__)
                                sys.last_type, sys.last_value, sys.last_traceback = type(e), e, last_tb
                                try:
                                        value = str(e)
                                except Exception:
                                        pass
                debug = self.shell.call_pdb and (tb is None or rendered or isinstance(e, SystemExit))
                if tb is None:
                        tb = self.structured_traceback(e)
                _send(EXEC_ERROR, {"name": type(e).__name__, "value": value, "traceback": tb})
                sys.last_value.__traceback__ = last_tb
                if debug:
                        # %pdb: IPython's debugger opens here and asks for a command,
                        # which E2B's kernel cannot read (ipykernel then never ends
                        # the cell); shown as %debug shows it, and the cell ends.
                        self.shell.debugger_entry()
