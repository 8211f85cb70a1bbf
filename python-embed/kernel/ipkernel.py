"""ipykernel.ipkernel's counterpart: Kernel, the executor of one context.
It serves X_EXECUTE requests (execute_request) and holds the user's
namespace, history and shell; how a cell runs, its result and its
traceback are its mixins' (interactiveshell, displayhook, ultratb)."""

import builtins
import os
import sys
import tempfile
import threading
import types

import _cellvm

from .display import display
from .displayhook import DisplayHook, ZMQShellDisplayHook
from .error import StdinNotImplementedError
from .foreign_frames import ipykernel_raising
from .interactiveshell import CellRunner
from .kernelbase import _set_sigint
from .session import EXEC_ERROR, EXEC_INPUT, X_END, X_EXECUTE, _send, _state
from .ultratb import FormattedTB
from .zmqshell import Shell, ZMQExitAutocall


def _stdin_error_class():
        try:
                from IPython.core.error import StdinNotImplementedError as cls
                return cls
        except Exception:  # IPython is not in every guest image
                return StdinNotImplementedError


# input() and getpass() fail in ipykernel's Kernel.raw_input and .getpass
# (E2B's kernel has no stdin), each at its line there.
_raw_input_refused = ipykernel_raising("kernelbase.py", 1174, "Kernel.raw_input", ("self", "prompt"))
_getpass_refused = ipykernel_raising("kernelbase.py", 1148, "Kernel.getpass", ("self", "prompt", "stream"))


def _no_input(prompt=""):
        _raw_input_refused(_stdin_error_class()(
            "raw_input was called, but this frontend does not support input requests."), prompt)


def _no_getpass(prompt="Password: ", stream=None):
        _getpass_refused(_stdin_error_class()(
            "getpass was called, but this frontend does not support input requests."), prompt, stream)


def _running():
        return True


def _on_asyncio_import(asyncio):
        # A cell that imports asyncio sees the kernel's loop running from then on.
        kernel = _state.kernel
        if kernel is not None and kernel.cell_running:
                kernel.loop_enter()


def _pandas_kernel_defaults():
        """pandas chose display.max_columns at import (in the zygote, before
        get_ipython existed) as for a terminal (0: fit the width); in a kernel
        it is 20, and frames wider than that wrap with '\\' as in ipykernel."""
        pd = sys.modules.get("pandas")
        if pd is None:
                return
        try:
                from pandas._config import config
                key = "display.max_columns"
                opt = config._registered_options.get(key)
                if opt is not None and opt.defval == 0:
                        config._registered_options[key] = opt._replace(defval=20)
                        if pd.get_option(key) == 0:
                                pd.set_option(key, 20)
        except Exception:  # a pandas without these internals: keep its defaults
                pass


def _e2b_startup_names(shell):
        """The library names E2B's template startup (startup_scripts/000{1,2,3}_*.py)
        leaves in every namespace (`display` too, a builtin already), so that
        a cell that forgets `import os` or uses `pandas` unimported works as
        there. They are put among the builtins, not in the namespace: what a
        cell lists of its namespace (vars(), dir(), %who, %whos) stays
        ipykernel's. Bound only when their library is already loaded (the
        zygote's default preloads load them all), so that a context never
        pays an import here; `IPython` itself, which the executor does not
        import, and E2B's own classes and hooks are not (docs/SDK.md)."""
        names = {"os": os, "ip": shell}
        pd = sys.modules.get("pandas")
        if pd is not None:
                names["pandas"] = pd
        figure = sys.modules.get("matplotlib.figure")
        if figure is not None:
                names["Figure"] = figure.Figure
        import typing
        names["Any"] = typing.Any
        pil = sys.modules.get("PIL.Image")
        if pil is not None:
                names["Image"] = pil.Image
        return names


class Kernel(CellRunner, DisplayHook, FormattedTB):
        """One context's executor: X_EXECUTE requests in, its messages out
        (session.py). How a cell runs is CellRunner's (interactiveshell.py), its
        result DisplayHook's (displayhook.py), its traceback FormattedTB's
        (ultratb.py)."""

        def __init__(self, fd):
                self.fd = fd
                self.count = 1
                self.sandbox_envs = {}  # what apply_sandbox_envs() set last
                self.flags = 0  # __future__ flags the cells have set
                self.serial = 0
                self.oldpwd = None
                self.mpl_run = False  # %matplotlib was used: %run as IPython's mpl_execfile
                self.cell_files = {}
                # ipykernel's cell files: <tmp>/ipykernel_<pid>/<hash of the raw cell>.py
                self.cell_dir = os.path.join(tempfile.gettempdir(), f"ipykernel_{os.getpid()}")
                main = types.ModuleType("__main__", "Automatically created module for IPython "
                                         "interactive environment")  # IPython's, as __doc__ shows
                main.__dict__.update({"__builtin__": builtins, "__builtins__": builtins})
                sys.modules["__main__"] = main
                self.main_module = main
                self.ns = main.__dict__
                self.shell = Shell(self)
                self.In = [""]
                self.raw_in = [""]  # what %history shows (IPython's input_hist_raw)
                self.Out = {}
                self.exiter = ZMQExitAutocall()
                self.get_ipython = self.shell.get_ipython  # one bound method: %who hides it by identity
                # IPython's init_user_ns, in its order (globals() shows it).
                self.ns.update({"_ih": self.In, "_oh": self.Out, "_dh": [os.getcwd()],
                                "In": self.In, "Out": self.Out, "get_ipython": self.get_ipython,
                                "exit": self.exiter, "quit": self.exiter,
                                "_": "", "__": "", "___": "", "_i": "", "_ii": "", "_iii": ""})
                self.under = ["", "", ""]  # _, __, ___ as the kernel last set them
                self.inputs = ["", "", "", ""]  # _iii, _ii, _i, _i00
                self.cell_text = ""  # the running cell, transformed (IPython's input_hist_parsed[-1])
                self.sys_displayhook = ZMQShellDisplayHook(self)
                sys.displayhook = self.sys_displayhook
                builtins.display = display
                builtins.get_ipython = self.get_ipython
                builtins.__IPYTHON__ = True
                # IPython's init_prompts: scripts tell an interactive session by sys.ps1.
                sys.ps1, sys.ps2, sys.ps3 = "In : ", "...: ", "Out: "
                builtins.input = _no_input
                builtins.exit = builtins.quit = self.exiter
                try:
                        import getpass
                        getpass.getpass = _no_getpass
                except Exception:
                        pass
                _pandas_kernel_defaults()
                self.loop = None
                self.in_loop = False  # self.loop stands as the running loop (loop_enter)
                self.autoreload = None  # %load_ext autoreload
                self.cell_running = False
                self.exit_warning_off = False  # %run's SystemExit shows no exit warning
                self.xmode = "Context"  # %xmode: how an error's traceback is shown
                self.error_sent = False
                self.in_events = False  # a cell runs through shell.events
                self.cell_started = False
                self.exec_result = None  # its ExecutionResult
                self.custom_exc = ((), None)  # shell.set_custom_exc: (types, handler)
                self.handled_error = None  # the cell's error such a handler took
                self.pylab_names = {}  # what %pylab put in the namespace (hidden from %who)
                self.startup_names = _e2b_startup_names(self.shell)
                for name, value in self.startup_names.items():
                        setattr(builtins, name, value)

        def ns_hidden(self):
                """IPython's user_ns_hidden: names %who leaves out while they hold these."""
                return {"In": self.In, "Out": self.Out, "get_ipython": self.get_ipython,
                        "exit": self.exiter, "quit": self.exiter, **self.pylab_names}

        def loop_enter(self):
                """ipykernel runs every cell inside its running asyncio loop, so
                there asyncio.get_event_loop() is that loop (running=True) and
                asyncio.run() or loop.run_until_complete() fail. Once asyncio is
                imported, a cell sees this kernel's loop as the running one; it
                only really runs for a top-level await (_run_code)."""
                asyncio = sys.modules.get("asyncio")
                if asyncio is None or self.in_loop or threading.current_thread() is not threading.main_thread():
                        return
                if self.loop is None:
                        self.loop = asyncio.new_event_loop()
                self.loop.is_running = _running  # shadows the method (and its repr's running=)
                asyncio._set_running_loop(self.loop)
                self.in_loop = True

        def loop_leave(self):
                if self.in_loop:
                        self.in_loop = False
                        del self.loop.is_running
                        sys.modules["asyncio"]._set_running_loop(None)

        def run_loop_until_request(self):
                """ipykernel's loop runs between cells: tasks and callbacks a cell
                left (asyncio.ensure_future, create_task, call_later) go on while
                the executor waits for its next request. What they print then is
                dropped, as E2B's server drops output of an ended execution."""
                loop = self.loop
                if loop is None or loop.is_closed() or not (
                        loop._ready or loop._scheduled or sys.modules["asyncio"].all_tasks(loop)):
                        return
                request = loop.create_future()

                def readable():
                        if not request.done():
                                request.set_result(None)

                try:
                        loop.add_reader(self.fd, readable)
                except (OSError, ValueError, RuntimeError):
                        return
                try:
                        loop.run_until_complete(request)
                except BaseException as e:  # noqa: BLE001 - a task's error is not the next cell's
                        print(f"cellvm-executor: the event loop between cells: {e!r}", file=sys.stderr)
                finally:
                        loop.remove_reader(self.fd)

        def apply_sandbox_envs(self, envs):
                """The sandbox's own environment (Sandbox(envs=...)) is set once, as
                E2B's server does at a context's first execution, so a cell that
                changes such a variable keeps its change. A client with other
                sandbox envs sets them anew."""
                if not isinstance(envs, dict) or envs == self.sandbox_envs:
                        return
                for k, v in envs.items():
                        os.environ[str(k)] = str(v)
                self.sandbox_envs = {str(k): str(v) for k, v in envs.items()}

        def execute(self, req_id, body):
                import cellvm_reseed  # a copy of a snapshot reseeds before its cell (docs/SNAPSHOTS.md)
                cellvm_reseed.before_cell(body)
                _state.req_id = req_id
                code = body.get("code", "")
                if not isinstance(code, str):
                        code = ""
                envs = body.get("envs")
                self.apply_sandbox_envs(body.get("sandbox_envs"))
                count = self.count
                try:
                        if envs:
                                for k, v in envs.items():
                                        os.environ[str(k)] = str(v)
                        # SIGINT raises from here on: the agent signals only after it has
                        # seen EXEC_INPUT, so no interrupt falls between the two.
                        self.error_sent = False
                        self.handled_error = None
                        # IPython's display_trap: the kernel's hook again for each cell
                        # (one a cell set lasts to its end).
                        sys.displayhook = self.sys_displayhook
                        _set_sigint(True)
                        _send(EXEC_INPUT, {"execution_count": count})
                        _cellvm.flusher_active(True)
                        err = self.run_cell(code)
                        if code and not code.isspace():
                                self.count += 1
                finally:
                        _set_sigint(False)
                        _cellvm.flusher_active(False)
                        # As E2B's server after the cell (_reset_env_vars_code): a
                        # sandbox-wide variable gets its sandbox value back, any other
                        # is deleted, whatever it was before the cell.
                        for k in envs or ():
                                v = self.sandbox_envs.get(str(k))
                                if v is None:
                                        os.environ.pop(str(k), None)
                                else:
                                        os.environ[str(k)] = v
                # A formatter's error (IPython's showtraceback) fails the cell too.
                status = "error" if err is not None or self.error_sent else "ok"
                _send(X_END, {"status": status, "execution_count": count})

        def serve(self):
                while True:
                        self.run_loop_until_request()
                        try:
                                msg = _cellvm.recv(self.fd)
                        except KeyboardInterrupt:
                                continue
                        if msg is None:
                                return
                        mtype, req_id, body = msg
                        if mtype != X_EXECUTE:
                                print(f"cellvm-executor: ignoring message type {mtype:#x}", file=sys.stderr)
                                continue
                        self._execute_guarded(req_id, body)

        def _execute_guarded(self, req_id, body):
                # A SIGINT landing in kernel code right at a cell's edge must still
                # end the request with exactly one X_END.
                try:
                        self.execute(req_id, body)
                except KeyboardInterrupt as e:
                        _state.req_id = req_id
                        _send(EXEC_ERROR, {"name": "KeyboardInterrupt", "value": "",
                                           "traceback": self.format_traceback(e)})
                        _send(X_END, {"status": "error", "execution_count": self.count - 1})


# The name errors and type() show, as ipykernel's kernel ("'IPythonKernel'
# object has no attribute ...").
Kernel.__name__ = Kernel.__qualname__ = "IPythonKernel"
