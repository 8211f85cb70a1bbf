"""IPython.core.debugger's counterpart, as ipykernel sets it up: pdb's Pdb
and set_trace are IPython's, so a stop shows IPython's stack entry (the
return value if any, '> file(line)func()' and the lines around it) before
the debugger asks for a command (which E2B's kernel cannot answer: allow_stdin
is False, a StdinNotImplementedError); and breakpoint() does nothing, as
ipykernel's debugpy hook does with no debugger attached."""

import builtins
import functools
import os
import sys

from .foreign_frames import calling_on, ipython_calling_on, through

# IPython's Pdb (ipykernel's): its interaction and its InterruptiblePdb's
# command loop, each at its line, around pdb's and cmd's own.
_IPDB_INTERACTION = ipython_calling_on("core/debugger.py", 336, "Pdb.interaction", ("self", "frame", "traceback"))
_IPDB_CMDLOOP_LOOP = ipython_calling_on("core/debugger.py", 985, "InterruptiblePdb._cmdloop", ("self",))
_IPDB_CMDLOOP = ipython_calling_on("core/debugger.py", 971, "InterruptiblePdb.cmdloop", ("self", "intro"))
# The same path as frames only, for %debug (post-mortem), which runs no Pdb:
# stdlib pdb's interaction and cmd's cmdloop at their lines, asking for a
# command with IPython's prompt.
_PDB_INTERACTION = calling_on("pdb", "/usr/lib/python3.11/pdb.py", 435, "Pdb.interaction",
                              ("self", "frame", "traceback"))
_CMD_CMDLOOP = calling_on("cmd", "/usr/lib/python3.11/cmd.py", 126, "Cmd.cmdloop", ("self", "intro"))
IPDB_ASKING = [_IPDB_INTERACTION, _PDB_INTERACTION, _IPDB_CMDLOOP_LOOP, _IPDB_CMDLOOP, _CMD_CMDLOOP]


def ask_for_command():
        """What IPython's Pdb does once it showed where it stands: input() of a
        command (ipykernel's raw_input, which E2B's kernel refuses)."""
        return builtins.input("ipdb> ")


def format_stack_entry(frame, lineno, context=5):
        """IPython's Pdb.format_stack_entry for the current frame (colours aside)."""
        import linecache
        import reprlib
        out = []
        if "__return__" in frame.f_locals:
                out.append(reprlib.repr(frame.f_locals["__return__"]) + "\n")
        filename = frame.f_code.co_filename
        if not (filename.startswith("<") and filename.endswith(">")):
                filename = os.path.normcase(os.path.abspath(filename))  # bdb's canonic
        out.append(f"> {filename}({lineno}){frame.f_code.co_name or '<lambda>'}()\n")
        lines = linecache.getlines(filename)
        start = max(min(lineno - 1 - context // 2, len(lines) - context), 0)
        for i, text in enumerate(lines[start:start + context], start + 1):
                if i == lineno:
                        pad = 7 - len(str(i))
                        num = ("-" * (pad - 2) + "> " if pad >= 2 else ">" if pad == 1 else "") + str(i)
                else:
                        num = "%7s" % i
                out.append(f"{num} {text}")
        return "".join(out)


def _breakpointhook(*args, **kwargs):
        """debugpy's breakpoint hook with no debugger attached: nothing."""
        return None


def install_breakpointhook():
        sys.breakpointhook = _breakpointhook


def _on_pdb_import(pdb):
        """pdb.Pdb (so post_mortem and pm too) and pdb.set_trace as
        ipykernel's _replace_pdb leaves them (once: the zygote and each
        executor install the hooks)."""
        if getattr(pdb.Pdb, "_ipython_entries", False):
                return

        OldPdb = pdb.Pdb  # pdb.Pdb is this subclass from here on

        class Pdb(OldPdb):
                _ipython_entries = True

                def print_stack_entry(self, frame_lineno, prompt_prefix="\n-> ", context=5):
                        print(format_stack_entry(*frame_lineno, context=context), file=self.stdout)

                def interaction(self, frame, traceback):
                        return through([_IPDB_INTERACTION], functools.partial(OldPdb.interaction, self, frame,
                                                                              traceback))

                def _cmdloop(self):
                        self.allow_kbdint = True
                        through([_IPDB_CMDLOOP_LOOP], self.cmdloop)
                        self.allow_kbdint = False

                def cmdloop(self, intro=None):
                        return through([_IPDB_CMDLOOP], functools.partial(OldPdb.cmdloop, self, intro))

        def set_trace(frame=None):
                """IPython's set_trace: stop in the caller's frame (or `frame`)."""
                Pdb().set_trace(frame or sys._getframe().f_back)

        pdb.Pdb = Pdb
        pdb.set_trace = set_trace
