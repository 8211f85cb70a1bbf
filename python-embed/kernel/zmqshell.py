"""ipykernel.zmqshell's counterpart: ZMQInteractiveShell, what
get_ipython() returns (its magics are in magics/), and ZMQExitAutocall."""

import builtins
import functools
import os
import re
import select
import subprocess
import sys
import time

from . import formatters
from .error import UsageError
from .events import EventManager
from .foreign_frames import (TRAITLETS, as_if_in, as_if_in_ipython, chained, ipykernel_raising, ipython_calling_on,
                             ipython_raising, traitlets_calling_on)
from .formatters import DisplayFormatter
from .iostream import _flush_std
from .logger import Logger
from .macro import Macro
from .ultratb import FRAMELESS_CODES
from .magics import _IPYTHON_LINE_MAGICS, _NO_VAR_EXPAND
from .magics.basic import BasicMagics
from .magics.code import CodeMagics
from .magics.config import ConfigMagics
from .magics.display import DisplayMagics
from .magics.execution import ExecutionMagics
from .magics.extension import ExtensionManager, ExtensionMagics
from .magics.history import HistoryManager, HistoryMagics
from .magics.logging import LoggingMagics
from .magics.namespace import NamespaceMagics
from .magics.osm import _ALIASES, OSMagics
from .magics.packaging import PackagingMagics
from .magics.pylab import PylabMagics
from .magics.script import ScriptMagics
from .storemagic import StoreMagics
from .text import DollarFormatter, LSString, SList
from .usersite import refresh as _refresh_user_site

# `!cmd`: output read from its pty within this long of the last read is one
# stream message (ipykernel batches for 0.2 s; a pty splits a line from its CRLF).
_PTY_BURST_S = 0.02


# ipykernel's system_piped and IPython's getoutput read the command's output
# to its end, so they refuse a command that would go to the background, each
# at its line.
_system_background = ipykernel_raising("zmqshell.py", 617, "ZMQInteractiveShell.system_piped", ("self", "cmd"))
_getoutput_background = ipython_raising("core/interactiveshell.py", 2553, "InteractiveShell.getoutput",
                                        ("self", "cmd", "split", "depth"))


# IPython's set_custom_exc refuses a list of types at its line.
_custom_exc_refused = ipython_raising("core/interactiveshell.py", 1826, "InteractiveShell.set_custom_exc",
                                     ("self", "exc_tuple", "handler"))

# IPython's ask_yes_no asks through utils.io's, each at its line.
_ASK = [ipython_calling_on("core/interactiveshell.py", 3589, "InteractiveShell.ask_yes_no",
                           ("self", "prompt", "default", "interrupt"), carets=9),
        ipython_calling_on("utils/io.py", 102, "ask_yes_no", ("prompt", "default", "interrupt"), carets=9)]


def _refuse_background(cmd, refused):
        if cmd.rstrip().endswith("&"):
                refused(OSError("Background processes not supported."), *[None] * (refused.__code__.co_argcount - 1))


class ZMQExitAutocall:
        """exit/quit as in ipykernel (ZMQExitAutocall): the cell ends quietly, no
        SystemExit. ipykernel then stops the kernel process; a cellvm context
        stays usable (its owner removes or restarts it)."""

        rewrite = False  # IPython's ExitAutocall: autocall shows no '------>' line

        def __call__(self, keep_kernel=False):
                return None


ZMQExitAutocall.__module__ = "IPython.core.autocall"  # its type and repr read as there


def _on_ipython_shell_import(mod):
        # As ipykernel registers its ZMQInteractiveShell: isinstance() checks and
        # traits typed InteractiveShellABC (Magics.shell) accept the shell.
        mod.InteractiveShellABC.register(Shell)
        # ipykernel's shell is InteractiveShell's singleton: instance() and
        # initialized() (IPython's format_display_data, matplotlib_inline, libraries
        # telling a notebook) find the kernel's shell, where they made a second
        # shell of IPython's own here.
        from .session import _state

        def instance(cls, *args, **kwargs):
                return _state.kernel.shell if _state.kernel is not None else init_instance(*args, **kwargs)

        def initialized(cls):
                return _state.kernel is not None or init_initialized()

        init_instance, init_initialized = mod.InteractiveShell.instance, mod.InteractiveShell.initialized
        mod.InteractiveShell.instance = classmethod(instance)
        mod.InteractiveShell.initialized = classmethod(initialized)


def _on_ipython_magic_import(mod):
        # Magics(shell) makes a shell with a config its traitlets parent, which
        # must be a Configurable (ipykernel's shell is one, this one is not): a
        # Magics subclass made for this shell gets no parent instead.
        init = mod.Magics.__init__

        def __init__(self, shell=None, **kwargs):
                if isinstance(shell, Shell):
                        kwargs.setdefault("parent", None)
                init(self, shell, **kwargs)

        __init__.__wrapped__ = init
        mod.Magics.__init__ = __init__


_AUTOMAGIC_RE = re.compile(r"([\w.*]*)(.*)", re.S)
# IPython's splitinput.line_split, and its prefilter's re_fun_name and
# re_exclude_auto (autocall).
_LINE_SPLIT_RE = re.compile(r"^(\s*)([,;/%]|!!?|\?\??)?\s*(%{0,2}[\w\.\*]*)(.*?$|$)")
_FUN_NAME_RE = re.compile(r"[^\W\d]([\w.]*) *$")
_EXCLUDE_AUTO_RE = re.compile(r"^[,&^\|\*/\+-]|^is |^not |^in |^and |^or ")


_DOLLAR_FORMATTER = DollarFormatter()


# A magic is called from IPython's run_line_magic / run_cell_magic frame: an
# error in it shows that frame first, as in ipykernel.
def _call_line_magic(magic, magic_name, line, _stack_depth):
        return magic(line)


def _call_cell_magic(magic, magic_name, line, cell):
        return magic(line, cell)


_call_line_magic = as_if_in_ipython(_call_line_magic, "core/interactiveshell.py", 2309,
                                    qualname="InteractiveShell.run_line_magic",
                                    params=("self", "magic_name", "line", "_stack_depth"))
_call_cell_magic = as_if_in_ipython(_call_cell_magic, "core/interactiveshell.py", 2362,
                                    qualname="InteractiveShell.run_cell_magic",
                                    params=("self", "magic_name", "line", "cell"))
# IPython's @needs_local_scope line magics: given the caller's variables.
_NEEDS_LOCAL_SCOPE = frozenset({"time", "timeit"})
_INTERACTIVITY = ("all", "last", "last_expr", "none", "last_expr_or_assign")


def _magic_attr(kind, name):
        """The Shell attribute a line or cell magic lives in."""
        return ("magic_" if kind == "line" else "cell_magic_") + name


def _trait_error(message):
        try:
                from traitlets import TraitError
        except ImportError:
                TraitError = ValueError
        return TraitError(message)


# A value an Enum trait refuses fails in traitlets' TraitType.error, reached
# from the setter through its validation, each frame at its line there.
def _raise_trait_error(self, obj, value, error, info=None):
        raise error


_TRAIT_ERROR = as_if_in(_raise_trait_error, "traitlets.traitlets", TRAITLETS, 827, qualname="TraitType.error")
_SET_TO_ERROR = traitlets_calling_on(
    [(715, "TraitType.__set__", ("self", "obj", "value")), (689, "TraitType.set", ("self", "obj", "value")),
     (721, "TraitType._validate", ("self", "obj", "value")), (2513, "Enum.validate", ("self", "obj", "value"))])


class _Hooks:
        @staticmethod
        def synchronize_with_editor(filename, linenum, column):
                """IPython's default: nothing (an editor of one's own would open there)."""


class Shell(BasicMagics, CodeMagics, ConfigMagics, DisplayMagics, ExecutionMagics, ExtensionMagics,
            HistoryMagics, LoggingMagics, NamespaceMagics, OSMagics, PackagingMagics, PylabMagics, ScriptMagics,
            StoreMagics):
        """What `get_ipython()` returns: enough of InteractiveShell for transformed cells.
        Named as ipykernel's (below): libraries tell a notebook by the class
        (pandas' in_ipython_frontend, tqdm, plotly)."""

        def __init__(self, kernel):
                self.kernel = kernel
                self.user_ns = kernel.ns
                self.extension_manager = ExtensionManager(self)
                self.history_manager = HistoryManager(self)
                self.aliases = dict(_ALIASES)
                self.dir_stack = []  # %pushd/%popd
                self._db = None
                self._interactivity = None  # the trait's value (set on the shell, or %config)
                self._plain_interactivity = None  # set on the shell once the trait is hidden
                # IPython's init_logger; %logstart sets logfile (a trait, '' until then).
                self.logger = Logger(os.path.realpath(os.path.expanduser("~")), logfname="ipython_log.py",
                                     logmode="rotate")
                self.logfile = ""

        @property
        def db(self):
                """IPython's shell.db: the profile's PickleShareDB."""
                if self._db is None:
                        from .pickleshare import PickleShareDB
                        self._db = PickleShareDB()
                return self._db

        @staticmethod
        def _class_interactivity():
                """What a notebook set on IPython's InteractiveShell class (a common
                idiom): that string hides the trait for every shell, or None."""
                m = sys.modules.get("IPython.core.interactiveshell")
                value = getattr(getattr(m, "InteractiveShell", None), "ast_node_interactivity", None)
                return value if isinstance(value, str) else None

        @property
        def ast_node_interactivity(self):
                """InteractiveShell.ast_node_interactivity, as IPython resolves it."""
                hidden_by = self._class_interactivity()
                if hidden_by is not None:
                        return self._plain_interactivity if self._plain_interactivity is not None else hidden_by
                return self._interactivity if self._interactivity is not None else "last_expr"

        @ast_node_interactivity.setter
        def ast_node_interactivity(self, value):
                if self._class_interactivity() is not None:
                        self._plain_interactivity = value  # a plain attribute: no validation
                        return
                if value not in _INTERACTIVITY:
                        chained(_SET_TO_ERROR, _TRAIT_ERROR, None, None, None, _trait_error(
                            f"The 'ast_node_interactivity' trait of a ZMQInteractiveShell instance expected any of "
                            f"{list(_INTERACTIVITY)}, not the {type(value).__name__} {value!r}."))()
                self._interactivity = value

        @ast_node_interactivity.deleter
        def ast_node_interactivity(self):
                if self._class_interactivity() is None:
                        raise AttributeError("__delete__")  # a trait cannot be deleted
                if self._plain_interactivity is None:
                        raise AttributeError("'ZMQInteractiveShell' object has no attribute 'ast_node_interactivity'")
                self._plain_interactivity = None

        def var_expand(self, cmd, depth=0, formatter=None):
                """$name and {expr} expanded as IPython's DollarFormatter does for
                ! lines and magic lines, in the user's namespace and the locals
                of the frame that called the shell (a function's !cmd sees its
                variables); a name or expression that fails leaves the whole
                line as written (the shell may expand $NAME then)."""
                ns = dict(self.user_ns)
                try:
                        ns.update(sys._getframe(depth + 1).f_locals)
                except ValueError:  # no such frame: called from the top
                        pass
                try:
                        return (formatter or _DOLLAR_FORMATTER).vformat(cmd, (), ns)
                except Exception:  # noqa: BLE001 - as IPython: the line as written
                        return cmd

        def system(self, cmd):
                """`!cmd` as ipykernel runs it (IPython's pexpect-based system):
                /bin/sh on a pseudo-terminal of 24x80, stderr merged into stdout,
                so programs see a tty (ls in columns, CRLF line ends) and the
                output streams as it comes."""
                import codecs
                import fcntl
                import pty
                import struct
                import termios

                _refuse_background(cmd, _system_background)
                _flush_std()
                master, slave = pty.openpty()
                try:
                        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
                        p = subprocess.Popen(["/bin/sh", "-c", self.var_expand(cmd, depth=1)], stdin=slave,
                                             stdout=slave, stderr=slave, start_new_session=True)
                finally:
                        os.close(slave)
                decoder = codecs.getincrementaldecoder("utf-8")("replace")

                def read():
                        try:
                                return os.read(master, 65536)
                        except OSError:  # EIO: every holder of the slave is gone
                                return b""

                try:
                        while True:
                                chunk = read()
                                if not chunk:
                                        break
                                # What the command writes in a burst is one message, as
                                # ipykernel's batching makes it ("/home/user" and the
                                # terminal's "\r\n" come in two reads of the pty).
                                more, until = chunk, time.monotonic() + _PTY_BURST_S
                                while more and len(chunk) < 65536:
                                        left = until - time.monotonic()
                                        if left <= 0 or not select.select([master], [], [], left)[0]:
                                                break
                                        more = read()
                                        chunk += more
                                sys.stdout.write(decoder.decode(chunk))
                                sys.stdout.flush()
                                if not more:
                                        break
                except KeyboardInterrupt:
                        os.write(master, b"\x03")  # ^C as a terminal sends it
                        try:
                                p.wait(timeout=1)
                        except subprocess.TimeoutExpired:
                                p.kill()
                        raise
                finally:
                        sys.stdout.write(decoder.decode(b"", final=True))
                        os.close(master)
                        if p.poll() is None:
                                p.kill()
                        rc = p.wait()
                        _refresh_user_site()  # `!pip install x`, then `import x` in this context
                self.user_ns["_exit_code"] = rc

        system_piped = system  # IPython's `system = system_piped`

        def getoutput(self, cmd, split=True):
                _refuse_background(cmd, _getoutput_background)
                _flush_std()
                try:
                        p = subprocess.run(["/bin/sh", "-c", self.var_expand(cmd, depth=1)], stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT)
                finally:
                        _refresh_user_site()
                text = p.stdout.decode(errors="replace")
                return SList(text.splitlines()) if split else LSString(text)

        def _line_magic(self, name):
                fn = getattr(self, "magic_" + name, None)
                if fn is None and name in ("autoreload", "aimport") and self.kernel.autoreload is not None:
                        fn = getattr(self.kernel.autoreload, name)
                if fn is None and name in self.aliases:
                        fn = functools.partial(self._alias, name)
                if fn is None:
                        also = (f" (But cell magic `%%{name}` exists, did you mean that instead?)"
                                if self.find_cell_magic(name) is not None else "")
                        raise UsageError(f"Line magic function `%{name}` not found{also}.")
                return fn

        def run_line_magic(self, magic_name, line, _stack_depth=1):
                fn = self._line_magic(magic_name)
                if magic_name not in _NO_VAR_EXPAND:
                        line = self.var_expand(line, depth=_stack_depth)
                if magic_name in _NEEDS_LOCAL_SCOPE:
                        fn = functools.partial(fn, local_ns=sys._getframe(_stack_depth).f_locals)
                return _call_line_magic(fn, magic_name, line.strip(), _stack_depth)

        def run_cell_magic(self, magic_name, line, cell):
                name = magic_name
                fn = getattr(self, "cell_magic_" + name, None)
                if fn is None:
                        also = (f" (But line magic `%{name}` exists, did you mean that instead?)"
                                if self.find_line_magic(name) is not None else "")
                        raise UsageError(f"Cell magic `%%{name}` not found{also}.")
                if cell == "":
                        also = (f" Did you mean the line magic %{name} (single %)?"
                                if self.find_line_magic(name) is not None else "")
                        raise UsageError(f"%%{name} is a cell magic, but the cell body is empty.{also}")
                if name not in _NO_VAR_EXPAND:
                        line = self.var_expand(line, depth=1)
                return _call_cell_magic(fn, name, line.strip(), cell)

        def get_ipython(self):
                return self

        def excepthook(self, etype, value, tb):
                """IPython's: sys.excepthook while a cell runs (for libraries that
                call it), the error shown as showtraceback shows it, whole."""
                self.showtraceback((etype, value, tb), tb_offset=0)

        # What libraries and notebooks use of InteractiveShell beyond magics.
        auto_magic = True  # MagicsManager.auto_magic, which %automagic toggles
        active_eventloop = None  # ZMQInteractiveShell's: the GUI %matplotlib enabled (enable_gui)
        colors = "Neutral"  # the trait's default (sympy's init_printing picks its colour from it)

        @functools.cached_property
        def events(self):
                return EventManager(self)

        @functools.cached_property
        def display_formatter(self):
                formatters._display_formatter = DisplayFormatter()
                return formatters._display_formatter

        @functools.cached_property
        def config(self):
                """The kernel's traitlets config: notebook detection looks for IPKernelApp."""
                try:
                        from traitlets.config import Config
                except ImportError:
                        Config = dict
                return Config({"IPKernelApp": Config()})

        @property
        def execution_count(self):
                return self.kernel.count

        @property
        def displayhook(self):
                return self.kernel.sys_displayhook

        @property
        def user_ns_hidden(self):
                return self.kernel.ns_hidden()

        @property
        def user_global_ns(self):
                """IPython's: the user module's dict, in a kernel the namespace itself."""
                return self.user_ns

        @property
        def compile(self):
                from .compilerop import CachingCompiler
                return CachingCompiler(self.kernel)

        @property
        def input_transformer_manager(self):
                from .inputtransformer2 import TransformerManager
                return TransformerManager()

        def transform_cell(self, raw_cell):
                """IPython's transform_cell: the cell as it runs."""
                return self.input_transformer_manager.transform_cell(raw_cell)

        @property
        def hooks(self):
                """IPython's shell.hooks, as far as its ultratb calls them."""
                return _Hooks

        def magic(self, arg_s):
                """IPython's deprecated magic('name args')."""
                import warnings as _warnings
                _warnings.warn("`magic(...)` is deprecated since IPython 0.13 (warning added in "
                               "8.1), use run_line_magic(magic_name, parameter_s).",
                               DeprecationWarning, stacklevel=2)
                name, _, rest = arg_s.partition(" ")
                return self.run_line_magic(name.lstrip("%"), rest, _stack_depth=2)

        def showtraceback(self, exc_tuple=None, *args, **kwargs):
                """IPython's showtraceback: the error shown, the cell goes on.
                Its traceback leaves out its first frame (InteractiveTB's
                tb_offset 1, there the kernel's run_code): for the error being
                handled, or one given as (type, value, tb), that is the frame
                that caught it. The last error's has no kernel frame here."""
                tb = None
                if isinstance(exc_tuple, tuple) and len(exc_tuple) == 3:
                        exc, tb = exc_tuple[1], exc_tuple[2]
                elif isinstance(exc_tuple, BaseException):  # the kernel's own calls
                        exc = exc_tuple
                else:  # IPython's _get_exc_info: the error being handled, else the last one
                        exc = sys.exc_info()[1]
                        tb = exc.__traceback__ if exc is not None else None
                        if exc is None:
                                exc = getattr(sys, "last_value", None)
                if exc is None:
                        sys.stderr.write("No traceback available to show.\n")
                        return
                # showtraceback(exc_tuple, filename, tb_offset, exception_only, ...)
                only = bool(kwargs.get("exception_only", args[2] if len(args) > 2 else False))
                offset = kwargs.get("tb_offset", args[1] if len(args) > 1 else None)
                if tb is None:
                        self.kernel.report_error(exc, exception_only=only)
                        return
                saved = exc.__traceback__
                exc.__traceback__ = tb if offset == 0 else tb.tb_next
                try:
                        self.kernel.report_error(exc, exception_only=only)
                finally:
                        exc.__traceback__ = saved
                        sys.last_traceback = tb  # as IPython keeps it: whole

        def showsyntaxerror(self, filename=None, running_compiled_code=False):
                """IPython's showsyntaxerror: the error being handled (else the
                last one) as its SyntaxTB shows it, the cell going on: only the
                line and caret, or with running_compiled_code the frames that
                raised it; `filename` names the error's file."""
                exc = sys.exc_info()[1] or getattr(sys, "last_value", None)
                if exc is None:
                        raise ValueError("No exception to find")
                if filename and isinstance(exc, SyntaxError):
                        exc.filename = filename
                self.kernel._send_error(exc, running=running_compiled_code)

        def run_cell(self, raw_cell, store_history=False, silent=False, shell_futures=True, cell_id=None):
                """IPython's run_cell, from a cell: that code runs within it."""
                return self.kernel.run_nested_cell(raw_cell, store_history, silent, shell_futures, cell_id)

        @property
        def ipython_dir(self):
                """IPython's get_ipython_dir: $IPYTHONDIR, else ~/.ipython."""
                return os.environ.get("IPYTHONDIR") or os.path.join(os.path.expanduser("~"), ".ipython")

        profile = "default"

        def show_usage(self):
                """IPython's show_usage (a bare `?`): its text goes to the pager (a
                payload E2B drops)."""
                return None

        def ask_yes_no(self, prompt, default=None, interrupt=None):
                """IPython's ask_yes_no: input() until y/yes/n/no (E2B's kernel
                has no stdin: StdinNotImplementedError)."""
                answers = {"y": True, "n": False, "yes": True, "no": False}
                ans = None
                while ans not in answers:
                        try:
                                ans = chained(_ASK, builtins.input, prompt + " ")().lower()
                                if not ans:
                                        ans = default
                        except KeyboardInterrupt:
                                if interrupt:
                                        ans = interrupt
                        except EOFError:
                                if default in answers:
                                        ans = default
                                        print()
                                else:
                                        raise
                return answers[ans]

        def set_next_input(self, text, replace=False):
                """IPython's set_next_input: a payload for the frontend, which E2B drops."""
                return None

        @property
        def custom_exceptions(self):
                return self.kernel.custom_exc[0]

        def set_custom_exc(self, exc_tuple, handler):
                """IPython's set_custom_exc: errors of these types go to
                handler(shell, etype, value, tb, tb_offset=None) instead of a traceback."""
                if not isinstance(exc_tuple, tuple):
                        _custom_exc_refused(TypeError("The custom exceptions must be given as a tuple."), exc_tuple,
                                            handler)
                if handler is None:
                        def handler(self, etype, value, tb, tb_offset=None):  # IPython's dummy_handler
                                print("*** Simple custom exception handler ***")
                                print("Exception type :", etype)
                                print("Exception value:", value)
                                print("Traceback      :", tb)
                self.kernel.custom_exc = (exc_tuple, handler)

        def enable_gui(self, gui=None):
                return None

        def register_magic_function(self, func, magic_kind="line", magic_name=None):
                """IPython's register_magic_function (@register_line_magic and kin)."""
                name = magic_name or func.__name__
                if magic_kind not in ("line", "cell", "line_cell"):
                        raise ValueError(f"magic_kind must be one of ['line', 'cell', 'line_cell'], "
                                         f"{magic_kind} given")
                for kind in ("line", "cell"):
                        if kind in magic_kind:
                                setattr(self, _magic_attr(kind, name), func)

        def register_magics(self, *objs):
                """IPython's register_magics: Magics classes (or instances)."""
                for m in objs:
                        if isinstance(m, type):
                                m = m(shell=self)
                        for kind, table in getattr(m, "magics", {}).items():
                                for name, meth in table.items():
                                        if isinstance(meth, str):
                                                meth = getattr(m, meth)
                                        setattr(self, _magic_attr(kind, name), meth)

        def find_magic(self, magic_name, magic_kind="line"):
                return getattr(self, _magic_attr(magic_kind, magic_name), None)

        find_line_magic = find_magic

        def find_cell_magic(self, magic_name):
                return self.find_magic(magic_name, "cell")

        def push(self, variables, interactive=True):
                if isinstance(variables, str):
                        frame = sys._getframe(1)
                        variables = {n: eval(n, frame.f_globals, frame.f_locals) for n in variables.split()}
                self.user_ns.update(variables)

        def drop_by_id(self, variables):
                """IPython's drop_by_id: each name removed if it still holds that object."""
                for name, obj in variables.items():
                        if name in self.user_ns and self.user_ns[name] is obj:
                                del self.user_ns[name]
                                self.kernel.pylab_names.pop(name, None)

        @property
        def user_module(self):
                """IPython's user_module: the __main__ module the cells run in."""
                return self.kernel.main_module

        def ev(self, expr):
                return eval(expr, self.user_ns)

        def ex(self, cmd):
                exec(cmd, self.user_ns)

        def is_magic_name(self, name):
                """Whether a line magic has this name: one of IPython's or one
                written here (%alias and %rehashx leave such names alone)."""
                return name in _IPYTHON_LINE_MAGICS or hasattr(self, "magic_" + name)

        def automagic(self, cell):
                """IPython's automagic, applied by its prefilter to one-line cells
                only: a line starting with a magic's name runs that magic (`pwd`,
                `ls -l`, `pip install x`) unless a variable, builtin or keyword
                has the name, or the line assigns to it. A line starting with a
                Macro's name runs the macro's code (its checker comes first).
                None if neither applies."""
                if not cell[:1].isalpha():  # every magic's name starts with a letter
                        return None
                end = cell.find("\n")
                if end != -1 and cell[end:].strip("\n"):
                        return None
                ifun, rest = _AUTOMAGIC_RE.match(cell.rstrip("\n")).groups()
                if isinstance(self.user_ns.get(ifun), Macro):
                        return self.user_ns[ifun].value
                if not self.auto_magic:  # %automagic off
                        return None
                rest = rest.lstrip()
                if not ifun or rest[:1] in ("=", ","):
                        return None
                if not (self.is_magic_name(ifun) or ifun in self.aliases
                        or ifun in ("autoreload", "aimport") and self.kernel.autoreload is not None):
                        return None
                import keyword
                if ifun in self.user_ns or ifun in builtins.__dict__ or keyword.iskeyword(ifun):
                        return None
                return f"get_ipython().run_line_magic({ifun!r}, {rest!r})\n"

        def autocall_line(self, cell):
                """IPython's autocall (%autocall 1 or 2), the last check of its
                prefilter on a one-line cell that nothing else took: `f x` runs
                as `f(x)` when f is callable (and `f` alone as `f()` in mode 2),
                shown first as '------> f(x)'. None if it does not apply."""
                if not self.autocall:
                        return None
                line = cell.rstrip("\n")
                if "\n" in line or not line.strip():
                        return None
                _pre, esc, ifun, rest = _LINE_SPLIT_RE.match(line).groups()
                ifun, rest = ifun.strip(), rest.lstrip()
                # The assignment and Python-operator checks come first.
                if esc or rest[:1] in tuple("=,!()<>+*/%^&|"):
                        return None
                found, obj = self._find_object(ifun)
                if not found or not callable(obj) or _EXCLUDE_AUTO_RE.match(rest) \
                   or not _FUN_NAME_RE.match(ifun):
                        return None
                if ifun.lower() in ("b", "f", "r", "u", "br", "rb", "fr", "rf") and \
                   line.startswith((ifun + "'", ifun + '"')):
                        return None  # a string prefix
                if isinstance(obj, ZMQExitAutocall):
                        if rest.startswith("("):
                                return None
                elif not rest and self.autocall < 2:
                        return None
                elif rest.startswith("[") and hasattr(obj, "__getitem__"):
                        return None
                newcmd = f"{ifun}({rest[:-1]});" if rest.endswith(";") else f"{ifun}({rest})"
                try:
                        rewrite = obj.rewrite
                except Exception:
                        rewrite = True
                if rewrite:
                        # IPython's auto_rewrite_input, twice: ipykernel transforms
                        # the cell once to decide whether it is async, then
                        # run_cell transforms it again.
                        print("------> " + newcmd)
                        print("------> " + newcmd)
                return newcmd + "\n"


Shell.__name__ = Shell.__qualname__ = "ZMQInteractiveShell"
# IPython's InteractiveShell defines these (a bound method's repr names it).
Shell.get_ipython.__qualname__ = "InteractiveShell.get_ipython"
Shell.excepthook.__qualname__ = "InteractiveShell.excepthook"
Shell.__module__ = "ipykernel.zmqshell"
# Deleting the interactivity trait fails as Python itself does, without a frame.
FRAMELESS_CODES.add(Shell.ast_node_interactivity.fdel.__code__)
