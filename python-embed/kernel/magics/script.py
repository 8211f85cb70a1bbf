"""IPython.core.magics.script's counterpart: %%script, %%bash and kin."""

import errno
import signal
import subprocess

from ..iostream import _flush_std
from ..usersite import refresh as refresh_user_site


class ScriptMagics:
        """IPython's ScriptMagics (IPython.core.magics.script), mixed into zmqshell.Shell."""

        def cell_magic_script(self, line, cell):
                """IPython's %%script CMD: the body on CMD's stdin; a nonzero
                exit fails the cell (CalledProcessError) unless --no-raise-error;
                an interrupt goes to the program, which then ends the cell quietly."""
                try:
                        return self._script(line, cell)
                finally:
                        refresh_user_site()  # a `pip install` in the script imports at once

        def _script(self, line, cell):
                import shlex
                argv = shlex.split(line)
                raise_error = "--no-raise-error" not in argv
                argv = [a for a in argv if a != "--no-raise-error"]
                # --out/--err NAME (anywhere, as argparse's parse_known_args takes them).
                into = {}
                for opt in ("--out", "--err"):
                        while opt in argv[:-1]:
                                i = argv.index(opt)
                                into[opt] = argv[i + 1]
                                del argv[i:i + 2]
                if not cell.endswith("\n"):
                        cell += "\n"
                body = cell.encode("utf8", "replace")
                _flush_std()
                try:
                        p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE if "--out" in into else None,
                                             stderr=subprocess.PIPE if "--err" in into else None)
                except OSError as e:
                        # EACCES too when some directory of PATH is unreadable and
                        # none has the program.
                        import shutil
                        if e.errno == errno.ENOENT or shutil.which(argv[0]) is None:
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
                        raise subprocess.CalledProcessError(p.returncode or -9, body)

        def _script_magic(program):
                def magic(self, line, cell):
                        return self.cell_magic_script(f"{program} {line}" if line else program, cell)
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

        def magic_killbgscripts(self, line):
                """IPython's %killbgscripts: no %%script runs in the background here
                (no --bg), so there is none to kill."""
                print("All background processes were killed.")
