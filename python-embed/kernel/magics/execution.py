"""IPython.core.magics.execution's counterpart: %time, %timeit, %run, %tb,
%prun, %debug, %%capture."""

import ast
import io
import os
import re
import sys
import time
import types

from ..capture import CapturedIO
from ..debugger import IPDB_ASKING, ask_for_command, format_stack_entry
from ..display import _capturing
from ..error import UsageError
from ..foreign_frames import (as_if_in_ipython, chained, frames_from, ipython_calling_on, ipython_raising_from,
                              through, warn_as_if_from)
from ..iostream import _flush_std
from . import find_py_file, magic_parser, parse_options
from ..pylabtools import _run_file_with_matplotlib
from ..ultratb import _from_file



# %run without a file, or with one that is not there, fails in IPython's run()
# (its first argument, its file_finder) with the error chained from that
# cause, each frame at its line there.
def _first_argument(arg_lst, parameter_s, runner, file_finder):
        return arg_lst[0]


def _find_file(file_finder, fpath, runner, unused):
        return file_finder(fpath)


def _get_py_filename(name):
        raise OSError("File `%r` not found." % name)


_RUN = dict(qualname="ExecutionMagics.run", params=("self", "parameter_s", "runner", "file_finder"))
_run_first_argument = as_if_in_ipython(_first_argument, "core/magics/execution.py", 695, **_RUN)
_run_find_file = as_if_in_ipython(_find_file, "core/magics/execution.py", 696, **_RUN)
_run_raise_no_file = ipython_raising_from("core/magics/execution.py", 699, **_RUN)
_run_raise_not_found = ipython_raising_from("core/magics/execution.py", 707, **_RUN)
_get_py_filename = as_if_in_ipython(_get_py_filename, "utils/path.py", 92, qualname="get_py_filename")
# %debug's path to its debugger's first command, each frame at its line.
_DEBUG = ipython_calling_on("core/magics/execution.py", 451, "ExecutionMagics.debug", ("self", "line", "cell"))
_DEBUG_POST_MORTEM = ipython_calling_on("core/magics/execution.py", 465, "ExecutionMagics._debug_post_mortem",
                                        ("self",))
_SHELL_DEBUGGER = ipython_calling_on("core/interactiveshell.py", 1111, "InteractiveShell.debugger", ("self", "force"))
_TB_DEBUGGER = ipython_calling_on("core/ultratb.py", 935, "VerboseTB.debugger", ("self", "force"))
# %prun runs the code through these two, then cProfile's runctx.
_PRUN = [ipython_calling_on("core/magics/execution.py", 296, "ExecutionMagics.prun", ("self", "parameter_s", "cell"),
                            carets=9),
         ipython_calling_on("core/magics/execution.py", 318, "ExecutionMagics._run_with_profiler",
                            ("self", "code", "opts", "namespace"), carets=9)]


def _format_time(seconds, precision=3):
        """IPython's _format_time."""
        if seconds >= 60:
                minutes, s = divmod(seconds, 60)
                h, m = divmod(minutes, 60)
                parts = []
                for n, suffix in ((h, "h"), (m, "min"), (s, "s")):
                        if n:
                                parts.append(f"{n:.0f}{suffix}")
                return " ".join(parts)
        units = ["s", "ms", "\xb5s", "ns"]
        scaling = [1, 1e3, 1e6, 1e9]
        order = min(-int(__import__("math").floor(__import__("math").log10(seconds)) // 3), 3) \
            if seconds > 0.0 else 3
        return "%.*g %s" % (precision, seconds * scaling[order], units[order])


class TimeitResult:
        """IPython's TimeitResult: what %timeit prints (and returns with -o),
        with its attributes (all_runs per run, timings per loop)."""

        def __init__(self, loops, repeat, best, worst, all_runs, compile_time, precision):
                self.loops, self.repeat, self.best, self.worst = loops, repeat, best, worst
                self.all_runs, self.compile_time, self._precision = all_runs, compile_time, precision
                self.timings = [dt / loops for dt in all_runs]

        @property
        def average(self):
                import math
                return math.fsum(self.timings) / len(self.timings)

        @property
        def stdev(self):
                import math
                mean = self.average
                return (math.fsum([(x - mean) ** 2 for x in self.timings]) / len(self.timings)) ** 0.5

        def __str__(self):
                return ("{mean} \xb1 {std} per loop (mean \xb1 std. dev. of {runs} run{rp}, "
                        "{loops:,} loop{lp} each)").format(
                            mean=_format_time(self.average, self._precision),
                            std=_format_time(self.stdev, self._precision),
                            runs=self.repeat, loops=self.loops, rp="" if self.repeat == 1 else "s",
                            lp="" if self.loops == 1 else "s")

        def __repr__(self):
                return f"<TimeitResult : {self}>"


def _run_with_timing(run, nruns):
        """IPython's %run -t [-N N]: CPU (getrusage) and wall times of the runs."""
        import resource
        wall0 = time.perf_counter()
        t0 = resource.getrusage(resource.RUSAGE_SELF)[:2]
        for _ in range(nruns):
                run()
        t1 = resource.getrusage(resource.RUSAGE_SELF)[:2]
        usr, syst = t1[0] - t0[0], t1[1] - t0[1]
        print("\nIPython CPU timings (estimated):")
        if nruns == 1:
                print("  User   : %10.2f s." % usr)
                print("  System : %10.2f s." % syst)
        else:
                print("Total runs performed:", nruns)
                print("  Times  : %10s   %10s" % ("Total", "Per run"))
                print("  User   : %10.2f s, %10.2f s." % (usr, usr / nruns))
                print("  System : %10.2f s, %10.2f s." % (syst, syst / nruns))
        print("Wall time: %10.2f s." % (time.perf_counter() - wall0))


class ExecutionMagics:
        """IPython's ExecutionMagics (IPython.core.magics.execution), mixed into zmqshell.Shell."""

        call_pdb = False  # InteractiveShell.call_pdb: %pdb's state

        def magic_pdb(self, line):
                """IPython's %pdb on|1|off|0, or a toggle. With it on, an error
                shows where it was raised, as the debugger would (debugger_entry)."""
                arg = line.strip().lower()
                if arg:
                        new = {"off": 0, "0": 0, "on": 1, "1": 1}.get(arg)
                        if new is None:
                                print("Incorrect argument. Use on/1, off/0, or nothing for a toggle.")
                                return
                else:
                        new = not self.call_pdb
                self.call_pdb = new
                print("Automatic pdb calling has been turned", "ON" if new else "OFF")

        def debugger_entry(self):
                """What the debugger shows first, post-mortem on the last error:
                its innermost frame (%debug, and each error under %pdb)."""
                tb = getattr(sys, "last_traceback", None)
                while tb is not None and tb.tb_next is not None:
                        tb = tb.tb_next
                if tb is not None:
                        print(format_stack_entry(tb.tb_frame, tb.tb_lineno))

        def magic_tb(self, line):
                """The last error's whole traceback (in another mode if given)."""
                k = self.kernel
                mode = k.xmode
                try:
                        if line.strip() and not self._set_xmode(line.strip().capitalize()):
                                return None
                        exc = getattr(sys, "last_value", None)
                        if exc is None:
                                sys.stderr.write("No traceback available to show.\n")
                                return None
                        k._send_error(exc, full=True)
                finally:
                        k.xmode = mode
                return None

        def magic_time(self, line, cell=None, local_ns=None):
                src = cell if cell is not None else line
                ns = self.user_ns
                local_ns = ns if local_ns is None else local_ns  # a function's %time sees its variables
                from . import timeit_timer
                from ..inputtransformer2 import cleanup_cell, transform_cell
                tree = timeit_timer.time_parse(transform_cell(cleanup_cell(src)))()
                code = ecode = None
                # Compiled as IPython's %time does (its line 1297); a trailing
                # expression after the statements ran, an error there shown as
                # the timed code's.
                last = None
                if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
                        ecode = timeit_timer.shell_compile(1297, "time", ast.Expression(tree.body[0].value),
                                                           "<timed eval>", "eval")
                else:
                        if len(tree.body) > 1 and isinstance(tree.body[-1], ast.Expr):
                                last = ast.Expression(tree.body.pop().value)
                        code = timeit_timer.shell_compile(1297, "time", tree, "<timed exec>", "exec")
                w0 = time.time()
                r0 = os.times()
                out = None
                try:
                        if code is not None:
                                exec(code, ns, local_ns)
                        if last is not None:
                                ecode = compile(last, "<timed exec>", "eval")
                        if ecode is not None:
                                out = eval(ecode, ns, local_ns)
                except BaseException as e:  # noqa: BLE001 - IPython's bare except
                        # IPython shows the traceback (from the timed code on) and
                        # prints no times; the cell goes on.
                        self.kernel.report_error(e)
                        return None
                wall = time.time() - w0
                r1 = os.times()
                user, sys_ = r1.user - r0.user, r1.system - r0.system
                print(f"CPU times: user {_format_time(user)}, sys: {_format_time(sys_)}, "
                      f"total: {_format_time(user + sys_)}")
                print(f"Wall time: {_format_time(wall)}")
                return out

        @staticmethod
        def _run_options(line):
                """IPython's %run options ('nidtN:b:pD:l:rs:T:em:G', posix words): a
                `--` goes after -m's module, whose arguments are the script's."""
                import shlex
                if "-m" in line and "--" not in line:
                        argv = shlex.split(line)
                        for idx, arg in enumerate(argv):
                                if not (arg and arg.startswith("-") and arg != "-"):
                                        break
                                if arg == "-m":
                                        argv.insert(idx + 2, "--")
                                        break
                        line = " ".join(shlex.quote(arg) for arg in argv)
                return parse_options(line, "nidtN:b:pD:l:rs:T:em:G", list_all=True)

        def _run_ipy(self, filename):
                """IPython's %run of a .ipy file or a notebook (safe_execfile_ipy):
                its code cells run one by one as cells (silent: no results shown,
                IPython's syntax works), its directory on sys.path meanwhile and
                __file__ set, then restored; the first error stops it and is the
                %run cell's too."""
                fname = os.path.realpath(os.path.expanduser(filename))
                if fname.endswith(".ipynb"):
                        import nbformat
                        nb = nbformat.read(fname, as_version=4)
                        cells = [c.source for c in nb.cells if c.cell_type == "code"]
                else:
                        with open(fname, encoding="utf-8") as f:
                                cells = [f.read()]
                ns = self.user_ns
                missing = object()
                saved_file = ns.get("__file__", missing)
                ns["__file__"] = filename
                dname = os.path.dirname(fname)
                added = dname not in sys.path
                if added:
                        sys.path.insert(0, dname)
                try:
                        for cell in cells:
                                self.run_cell(cell, silent=True, shell_futures=False).raise_error()
                finally:
                        if added and dname in sys.path:
                                sys.path.remove(dname)
                        if saved_file is missing:
                                ns.pop("__file__", None)
                        else:
                                ns["__file__"] = saved_file

        def magic_run(self, line):
                """IPython's %run [-i] [-n] [-e] [-t [-N N]] [-p] [-G] FILE [ARGS] and
                %run -m MODULE [ARGS]: the file runs as __main__ (or its own name
                with -n) with sys.argv set (ARGS glob-expanded unless -G), in a
                namespace of its own (the user's with -i); what it defines is then
                the user's."""
                import glob
                opts, args = self._run_options(line)
                if "d" in opts or "b" in opts:
                        raise UsageError("%run -d needs an interactive frontend")
                module = opts["m"][0] if "m" in opts else None
                if module is not None:
                        import importlib.util
                        spec = importlib.util.find_spec(module)
                        origin = spec.origin if spec is not None else None
                        if not origin or origin.rsplit(".", 1)[-1] not in ("py", "pyw"):
                                raise Exception(f"{module!r} is not a valid modulename on sys.path")
                        args = [origin] + args
                # The cause's frames start at IPython's run() (the stand-in), not here.
                if not args:
                        try:
                                _run_first_argument(args, line, None, None)
                        except IndexError as e:
                                _run_raise_no_file(Exception("you must provide at least a filename."),
                                                   e.with_traceback(e.__traceback__.tb_next), None, None)
                path = find_py_file(args[0])
                if path is None:
                        try:
                                _run_find_file(_get_py_filename, os.path.expanduser(args[0]), None, None)
                        except OSError as e:
                                _run_raise_not_found(Exception(str(e)), e.with_traceback(e.__traceback__.tb_next),
                                                     None, None)
                if path.lower().endswith((".ipy", ".ipynb")):
                        return self._run_ipy(path)
                try:
                        with open(path, "rb") as f:
                                source = f.read()
                except OSError:
                        raise Exception(f"File `{args[0]!r}` not found.") from None
                # IPython's safe_execfile compiles the file under its resolved
                # path (Path.resolve(), which is realpath).
                fname = os.path.realpath(path)
                code = compile(source, fname, "exec", dont_inherit=True)
                argv = args[1:] if "G" in opts else [
                    u for a in map(os.path.expanduser, args[1:])
                    for u in (glob.glob(a) or [re.sub(r"\\([*?\[])", r"\1", a)])]
                interactive = "i" in opts
                name = os.path.splitext(os.path.basename(path))[0] if "n" in opts else "__main__"
                if interactive:
                        main_mod, ns = self.user_module, self.user_ns
                        saved_main = ns.get("__name__")
                        ns.update({"__name__": name, "__file__": path})
                else:
                        main_mod = self._new_main_mod(path, name)
                        ns = main_mod.__dict__
                # As `python script.py` has it: the script's module is sys.modules'
                # __main__ (or its own name with -n) while it runs, so pickle,
                # multiprocessing and unittest.main() find what it defines.
                restore_main = sys.modules["__main__"] if name == "__main__" else None
                sys.modules[name] = main_mod
                saved_argv = sys.argv
                sys.argv = [path] + argv
                if module is not None:
                        def run():
                                import runpy
                                ns.update(runpy.run_module(module, run_name="__main__", alter_sys=True))
                else:
                        def execfile():
                                # IPython's safe_execfile: the script's directory on sys.path.
                                dname = os.path.dirname(fname)
                                added = dname not in sys.path
                                if added:
                                        sys.path.insert(0, dname)
                                try:
                                        exec(code, ns)
                                finally:
                                        if added and dname in sys.path:
                                                sys.path.remove(dname)
                        if self.kernel.mpl_run:
                                def run():
                                        _run_file_with_matplotlib(execfile)
                        else:
                                run = execfile
                try:
                        if "p" in opts:
                                import cProfile
                                cProfile.Profile().runcall(run)
                                print("", end=" ")  # the report goes to the pager, as %prun's
                        elif "t" in opts:
                                _run_with_timing(run, int(opts.get("N", ["1"])[0]))
                        else:
                                run()
                except SystemExit as e:
                        # IPython's safe_execfile: exit(0) is quiet, any other
                        # status shown as the error alone (unless -e); the cell
                        # goes on. Its safe_run_module: as any other error.
                        if e.code and module is not None:
                                self._module_failed(e, module)
                        elif e.code and "e" not in opts:
                                self.kernel.report_error(e, exit_warning=False)
                except KeyboardInterrupt:
                        raise  # the cell's interrupt, as the agent expects it
                except BaseException as e:  # noqa: BLE001 - IPython's bare except
                        # Shown from the script's frames on (showtraceback(tb_offset=2)),
                        # and the cell goes on.
                        if module is not None:
                                self._module_failed(e, module)
                        else:
                                self.kernel.report_error(_from_file(e, fname))
                finally:
                        sys.argv = saved_argv
                        if restore_main is not None:
                                sys.modules["__main__"] = restore_main
                                if "__mp_main__" in sys.modules:
                                        sys.modules["__mp_main__"] = restore_main
                        else:
                                sys.modules.pop(name, None)
                        if interactive:
                                # IPython restores __name__ only: the script's __file__
                                # stays the user's (and __main__'s) after %run -i.
                                ns["__name__"] = saved_main
                if not interactive:
                        # What the script defined becomes the user's; the user's
                        # __file__ and __builtins__ stay (IPython's preserve_keys).
                        self.user_ns.update({k: v for k, v in ns.items()
                                             if k not in ("__name__", "__file__", "__builtins__")})

        def _module_failed(self, e, module):
                """IPython's safe_run_module on an error or exit status: the whole
                traceback from runpy.run_module on (a SystemExit's too), then its
                warning, from its file and line (Debian's IPython 8.5, whose
                source line shows if installed), once per module until the
                warning filters change."""
                import runpy
                e.__traceback__ = frames_from(e.__traceback__, runpy.run_module.__code__) or e.__traceback__
                self.kernel._send_error(e, full=True)
                # IPython's safe_run_module warns from its own file and line.
                warn_as_if_from(f"Unknown failure executing module: <{module}>", UserWarning,
                                "core/interactiveshell.py", 2850)

        def _new_main_mod(self, path, name):
                """IPython's new_main_mod: the module a script runs in, one per file
                (a second run clears it: functions of the first see the second's
                globals, as there)."""
                path = os.path.abspath(path)
                cache = self.__dict__.setdefault("_main_mod_cache", {})
                mod = cache.get(path)
                if mod is None:
                        mod = cache[path] = types.ModuleType(name, "Module created for script run in IPython")
                else:
                        mod.__dict__.clear()
                        mod.__name__ = name
                mod.__file__ = path
                mod.__nonzero__ = lambda: True  # IPython's, for pydoc
                return mod

        def magic_prun(self, line, cell=None):
                """IPython's %prun / %%prun: the code run under cProfile. Its report
                goes to the pager (a payload E2B drops): only a ' ' is printed, and
                what -D/-T saved; -r returns the pstats.Stats."""
                import cProfile
                import pstats
                opts, args = parse_options(line, "D:l:rs:T:q", posix=False, list_all=True)
                code = " ".join(args)
                if cell is not None:
                        code += "\n" + cell
                code = self.transform_cell(code)  # cleaned up first: a leading empty line goes
                sort = opts.get("s", ["time"])
                lims = []
                for a in opts.get("l", []):
                        for conv in (int, float, str):
                                try:
                                        lims.append(conv(a))
                                        break
                                except ValueError:
                                        pass
                prof = cProfile.Profile()
                try:
                        prof = chained(_PRUN, lambda c: prof.runctx(c, self.user_ns, self.user_ns), code)()
                        sys_exit = ""
                except SystemExit:
                        sys_exit = "*** SystemExit exception caught in code being profiled."
                stats = pstats.Stats(prof).strip_dirs().sort_stats(*sort)
                out = io.StringIO()
                stream, stats.stream = stats.stream, out
                try:
                        stats.print_stats(*lims)
                finally:
                        stats.stream = stream
                print(sys_exit, end=" ")
                dump = opts.get("D", [""])[0]  # IPython's opts.D[0]: the first
                text = opts.get("T", [""])[0]
                if dump:
                        prof.dump_stats(dump)
                        print(f"\n*** Profile stats marshalled to file {dump!r}.{sys_exit}")
                if text:
                        with open(text, "w", encoding="utf-8") as f:
                                f.write(out.getvalue().rstrip())
                        print(f"\n*** Profile printout saved to text file {text!r}.{sys_exit}")
                return stats if "r" in opts else None

        def magic_debug(self, line):
                """IPython's %debug, post-mortem: the debugger shows where the last
                error was raised, then asks for a command, which E2B's kernel cannot
                read (allow_stdin False). With code to step through, the same."""
                if line.strip():
                        raise UsageError("%debug with a statement needs an interactive frontend")
                if not hasattr(sys, "last_traceback"):
                        import logging
                        logging.error("No traceback has been produced, nothing to debug.")
                        return
                self.debugger_entry()
                through([_DEBUG, _DEBUG_POST_MORTEM, _SHELL_DEBUGGER, _TB_DEBUGGER] + IPDB_ASKING, ask_for_command)

        def cell_magic_prun(self, line, cell):
                return self.magic_prun(line, cell)

        def magic_timeit(self, line, cell=None, local_ns=None):
                """IPython's %timeit: -n loops, -r runs, -p precision, -q quiet,
                -o return the result (-t/-c, the timer, accepted)."""
                import gc

                from . import timeit_timer
                opts, stmt = parse_options(line, "n:r:tcp:qo", posix=False, preserve_non_opts=True)
                if not stmt and cell is None:
                        return None
                number, repeat, precision = 0, 7, 3
                for opt in ("n", "r", "p"):
                        if opt in opts:
                                try:
                                        value = int(opts[opt])
                                except ValueError:
                                        raise ValueError(f"invalid literal for int() with base 10: "
                                                         f"{opts[opt]!r}") from None
                                if opt == "n":
                                        number = value
                                elif opt == "r":
                                        repeat = value
                                else:
                                        precision = value
                quiet, ret = "q" in opts, "o" in opts
                setup = "pass"
                if cell is not None:
                        setup, stmt = stmt or "pass", cell
                # A function's %timeit: its variables join the user's globals, as
                # in IPython, which restores the ones they hid after timing.
                hidden = {}
                if local_ns and cell is None:
                        hidden = {k: v for k, v in self.user_ns.items() if k in local_ns}
                        self.user_ns.update(local_ns)
                t0 = time.perf_counter()
                timer = timeit_timer.Timer(timeit_timer.compile_inner(setup, stmt, self.user_ns, cell is not None))
                compile_time = time.perf_counter() - t0
                gc_was_on = gc.isenabled()
                gc.disable()
                try:
                        if number == 0:
                                for index in range(10):
                                        number = 10 ** index
                                        if timeit_timer.time_number(timer, number, cell, None) >= 0.2:
                                                break
                        all_runs = timeit_timer.all_runs(timer, repeat, number, None)
                finally:
                        if gc_was_on:
                                gc.enable()
                self.user_ns.update(hidden)
                runs = [t / number for t in all_runs]
                worst, best = max(runs), min(runs)
                result = TimeitResult(number, repeat, best, worst, all_runs, compile_time, precision)
                if not quiet:
                        if worst > 4 * best and best > 0 and worst > 1e-6:
                                print(f"The slowest run took {worst / best:0.2f} times longer than the fastest. "
                                      "This could mean that an intermediate result is being cached.")
                        print(result)
                return result if ret else None

        def cell_magic_timeit(self, line, cell):
                return self.magic_timeit(line, cell, self.user_ns)

        def cell_magic_time(self, line, cell):
                if line:
                        raise UsageError("Can't use statement directly after '%%time'!")
                return self.magic_time("", cell)

        def cell_magic_capture(self, line, cell):
                """IPython's %%capture [--no-stdout] [--no-stderr] [--no-display] [name]:
                the body runs with its prints and displays kept in a CapturedIO."""
                import shlex
                parser = magic_parser("%capture")
                parser.add_argument("output", nargs="?", default="")
                for flag in ("--no-stderr", "--no-stdout", "--no-display"):
                        parser.add_argument(flag, action="store_true")
                args = parser.parse_args(shlex.split(line, posix=False))
                _flush_std()
                saved = sys.stdout, sys.stderr
                out = None if args.no_stdout else io.StringIO()
                err = None if args.no_stderr else io.StringIO()
                outputs = []
                if out is not None:
                        sys.stdout = out
                if err is not None:
                        sys.stderr = err
                k = self.kernel
                saved_hook = k.capture_outputs
                if not args.no_display:
                        _capturing.append(outputs)
                        k.capture_outputs = outputs
                try:
                        k.run_nested_cell(cell)  # IPython's run_cell, with its events
                finally:
                        sys.stdout, sys.stderr = saved
                        k.capture_outputs = saved_hook
                        if _capturing and _capturing[-1] is outputs:
                                _capturing.pop()
                if args.output:  # IPython 8.5's: a body ending in ';' is captured too
                        self.user_ns[args.output] = CapturedIO(out, err, outputs)
