"""IPython.core.magics.script's counterpart: %%script, %%bash and kin."""

import errno
import functools
import inspect
import signal
import subprocess
import time

from ..foreign_frames import as_if_in_ipython, ipython_compiled_at
from ..getipython import _ipython_get_ipython
from ..iostream import _flush_std
from ..usersite import refresh as refresh_user_site


def _not_found(error, program):
        """Whether starting `program` failed for want of it: ENOENT, or EACCES
        when some directory of PATH is unreadable and none has it."""
        import shutil
        return error.errno == errno.ENOENT or shutil.which(program) is None


class _AsyncIOProxy:
        """IPython's _AsyncIOProxy: a %%script --bg process or pipe whose
        coroutine methods (read, readline, wait...) run on the scripts' loop
        and give an asyncio future of the cell's loop (`await out.read()`)."""

        def __init__(self, obj, event_loop):
                self._obj = obj
                self._event_loop = event_loop

        def __repr__(self):
                return f"<_AsyncIOProxy({self._obj!r})>"

        def __getattr__(self, key):
                import asyncio
                attr = getattr(self._obj, key)
                if not inspect.iscoroutinefunction(attr):
                        return attr

                @functools.wraps(attr)
                def wrapped(*args, **kwargs):
                        future = asyncio.run_coroutine_threadsafe(attr(*args, **kwargs), self._event_loop)
                        return asyncio.wrap_future(future)
                return wrapped

        def __dir__(self):
                return dir(self._obj)


# IPython's ScriptMagics.shebang and its named_script_magic (%%bash...), as
# their frames show in a traceback: each statement is the line there. A cell
# naming no program fails where shebang starts it (line 239), a script's
# failure is raised at line 305. Each statement spans what IPython's does, so
# Python's own tracebacks put no carets under either line.
_NO_PROGRAM = object()
_SHEBANG = {
        169: "def shebang(self, line, cell):",
        238: "            if (error := self._script(line, cell)) is _NO_PROGRAM: (",
        239: "                __import__('asyncio').create_subprocess_exec(",
        240: "            ))",
        241: "            if error is None: return",
        305: "            raise (error" + " " * 21 + ")",  # as long as `raise CalledProcessError(rc, cell)`
}

_program = None  # each named_script_magic has its own in its globals (as_if_in)


def _named_script_magic(line, cell):
        return _ipython_get_ipython().shebang(f"{_program} {line}" if line else _program, cell)


class ScriptMagics:
        """IPython's ScriptMagics (IPython.core.magics.script), mixed into zmqshell.Shell."""

        def _script(self, line, cell):
                """IPython's %%script CMD: the body on CMD's stdin; a nonzero
                exit is the error returned (CalledProcessError) unless
                --no-raise-error; an interrupt goes to the program, which then
                ends the cell quietly."""
                try:
                        return self._run_script(line, cell)
                finally:
                        refresh_user_site()  # a `pip install` in the script imports at once

        def _run_script(self, line, cell):
                import shlex
                argv = shlex.split(line)
                raise_error = "--no-raise-error" not in argv
                background = "--bg" in argv
                argv = [a for a in argv if a not in ("--no-raise-error", "--bg")]
                # --out/--err/--proc NAME (anywhere, as argparse's parse_known_args takes them).
                into = {}
                for opt in ("--out", "--err", "--proc"):
                        while opt in argv[:-1]:
                                i = argv.index(opt)
                                into[opt] = argv[i + 1]
                                del argv[i:i + 2]
                if not argv:  # shebang's call with no program fails (TypeError)
                        return _NO_PROGRAM
                if not cell.endswith("\n"):
                        cell += "\n"
                body = cell.encode("utf8", "replace")
                if background:
                        return self._script_in_background(argv, body, into)
                _flush_std()
                try:
                        p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE if "--out" in into else None,
                                             stderr=subprocess.PIPE if "--err" in into else None)
                except OSError as e:
                        if _not_found(e, argv[0]):
                                print(f"Couldn't find program: {argv[0]!r}")
                                return
                        raise
                try:
                        captured = p.communicate(body)
                        # IPython's _handle_stream: the name holds the last line read.
                        for opt, data in zip(("--out", "--err"), captured):
                                lines = (data or b"").decode("utf8", "replace").splitlines(True)
                                if opt in into and lines:
                                        self.user_ns[into[opt]] = lines[-1]
                except KeyboardInterrupt:
                        def ended():
                                try:
                                        p.wait(timeout=0.1)
                                        return True
                                except subprocess.TimeoutExpired:
                                        return False

                        p.send_signal(signal.SIGINT)
                        if ended():
                                print("Process is interrupted.")
                                return
                        p.terminate()
                        if ended():
                                print("Process is terminated.")
                                return
                        p.kill()
                        print("Process is killed.")
                        return
                if raise_error and p.returncode != 0:
                        return subprocess.CalledProcessError(p.returncode or -9, body)
                return None

        # IPython's shebang (%%script), whose frame raises a script's failure.
        shebang = cell_magic_script = ipython_compiled_at(
                _SHEBANG, "core/magics/script.py", "ScriptMagics.shebang", _NO_PROGRAM=_NO_PROGRAM)

        def _script_magic(program):
                named = as_if_in_ipython(_named_script_magic, "core/magics/script.py", 153,
                                 qualname="ScriptMagics._make_script_magic.<locals>.named_script_magic",
                                 _program=program, _ipython_get_ipython=_ipython_get_ipython)

                def magic(self, line, cell):
                        return named(line, cell)
                magic.__name__ = f"cell_magic_{program}"
                return magic

        # IPython's ScriptMagics.script_magics, each %%script with that program.
        cell_magic_bash = _script_magic("bash")
        cell_magic_sh = _script_magic("sh")
        cell_magic_perl = _script_magic("perl")
        cell_magic_ruby = _script_magic("ruby")
        cell_magic_python = _script_magic("python")
        cell_magic_python2 = _script_magic("python2")
        cell_magic_python3 = _script_magic("python3")
        cell_magic_pypy = _script_magic("pypy")
        del _script_magic

        def _scripts_loop(self):
                """The event loop of --bg scripts, on a thread of its own (made
                at the first, as IPython makes it)."""
                import asyncio
                import threading
                loop = getattr(self, "_script_event_loop", None)
                if loop is None:
                        loop = self._script_event_loop = asyncio.new_event_loop()
                        threading.Thread(target=loop.run_forever, daemon=True).start()
                return loop

        def _script_in_background(self, argv, body, into):
                """IPython's %%script --bg: the program runs on, the cell ends at
                once; --out/--err NAME get its pipes (else what it writes is
                read and dropped), --proc NAME the process."""
                import asyncio
                loop = self._scripts_loop()
                pipe = asyncio.subprocess.PIPE
                try:
                        p = asyncio.run_coroutine_threadsafe(asyncio.create_subprocess_exec(
                                *argv, stdin=pipe, stdout=pipe, stderr=pipe), loop).result()
                except OSError as e:
                        if _not_found(e, argv[0]):
                                print(f"Couldn't find program: {argv[0]!r}")
                                return
                        raise
                self._bg_scripts = [q for q in getattr(self, "_bg_scripts", []) if q.returncode is None]
                self._bg_scripts.append(p)
                if not hasattr(self, "_bg_tasks"):
                        self._bg_tasks = set()  # the loop holds its tasks weakly
                dropped = []
                for opt, stream in (("--out", p.stdout), ("--err", p.stderr)):
                        if opt in into:
                                self.user_ns[into[opt]] = _AsyncIOProxy(stream, loop)
                        else:
                                dropped.append(stream)

                async def run():
                        try:
                                p.stdin.write(body)
                                await p.stdin.drain()
                                p.stdin.close()
                                await p.stdin.wait_closed()
                        except (BrokenPipeError, ConnectionResetError):
                                pass  # it ended without reading the whole cell
                        # The dropped pipes are read while it runs (IPython reads
                        # them after, so a chatty server stops on a full pipe).
                        await asyncio.gather(p.wait(), *(stream.read() for stream in dropped))

                def start():
                        task = loop.create_task(run())
                        self._bg_tasks.add(task)
                        task.add_done_callback(self._bg_tasks.discard)
                loop.call_soon_threadsafe(start)
                if "--proc" in into:
                        proxy = _AsyncIOProxy(p, loop)
                        proxy.stdout = _AsyncIOProxy(p.stdout, loop)
                        proxy.stderr = _AsyncIOProxy(p.stderr, loop)
                        self.user_ns[into["--proc"]] = proxy

        def magic_killbgscripts(self, line):
                """IPython's %killbgscripts: each --bg script still running gets
                SIGINT, then SIGTERM, then SIGKILL, 0.1 s apart."""
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                        running = [p for p in getattr(self, "_bg_scripts", []) if p.returncode is None]
                        self._bg_scripts = running
                        if not running:
                                break
                        for p in running:
                                try:
                                        p.send_signal(sig)
                                except ProcessLookupError:
                                        pass
                        if sig != signal.SIGKILL:
                                time.sleep(0.1)
                print("All background processes were killed.")
