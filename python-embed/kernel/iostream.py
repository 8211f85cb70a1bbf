"""ipykernel.iostream's counterpart: sys.stdout and sys.stderr of a cell
(OutStream), buffered in the executor and flushed in order with the
messages, by a timer while a cell runs, and before child processes start."""

import codecs
import io
import os
import subprocess
import sys
import threading

import _cellvm

from .foreign_frames import ipykernel_compiled_at, ipykernel_raising


# Output buffered in the executor (stream_sink.c) before it reaches the
# agent's pipes. Flushed when full, when fd 1 or 2 is written (C code,
# os.write, child processes: captured, fd_capture.c), before every message
# (ordering, PROTOCOL.md section 8) and every OUTPUT_FLUSH_INTERVAL while a
# cell runs.
OUTPUT_FLUSH_INTERVAL = 0.03


def _lone_surrogates(error):
        """The "cellvm-lone-surrogates" encoding error handler of the streams
        (out_stream.c): U+DC80..U+DCFF as the bytes they stand for, as
        jupyter_client's surrogateescape sends them (E2B's receiving end
        decodes them to U+FFFD); the others, which ipykernel fails to send,
        escaped (backslashreplace)."""
        if not isinstance(error, UnicodeEncodeError):
                raise error
        out = bytearray()
        for c in error.object[error.start:error.end]:
                n = ord(c)
                out += bytes([n - 0xDC00]) if 0xDC80 <= n <= 0xDCFF else ("\\u%04x" % n).encode("ascii")
        return bytes(out), error.end


codecs.register_error("cellvm-lone-surrogates", _lone_surrogates)


class _OutStream(_cellvm.OutStream, io.TextIOBase):
        """sys.stdout/sys.stderr of a cell: text buffered in C (_cellvm.OutStream,
        out_stream.c) and handed to the agent in order with what fd 1 or 2
        receives. Like ipykernel's OutStream it is an io.TextIOBase and reports
        encoding 'UTF-8', errors None, isatty() False, name 'stdout'/'stderr',
        no `buffer` (ipykernel issue 786). fileno() is not fd 1 or 2 but, as
        ipykernel's, a copy of where the kernel's own output went before the
        capture (its _original_stdstream_copy, in E2B the server's log; here
        /dev/null): what is written there, by os.write or a child process
        given sys.stdout, is not the cell's output. What write() refuses
        fails in ipykernel's frame (the hooks out_stream.c calls)."""

        encoding = "UTF-8"
        softspace = 0  # IPython's run_code resets it after each cell (print's Python 2 flag)

        _cellvm_write_not_str = staticmethod(ipykernel_raising("iostream.py", 537, "OutStream.write",
                                                               ("self", "string")))
        _cellvm_write_closed = staticmethod(ipykernel_raising("iostream.py", 547, "OutStream.write",
                                                              ("self", "string")))

        # ipykernel's writelines, each line through write(), each at its line there
        writelines = ipykernel_compiled_at({567: "def writelines(self, sequence):",
                                            568: "    if self.closed:",
                                            569: "        raise ValueError('I/O operation on closed file')",
                                            571: "    for string in sequence:",
                                            572: "        self.write(string)"},
                                           "iostream.py", "OutStream.writelines")

        def __init__(self, fd, name):
                super().__init__(fd)
                self._cellvm_original = None  # (fd, its stat), opened at first use
                self._cellvm_name = name

        @property
        def name(self):
                return self._cellvm_name

        def fileno(self):
                # Checked at each use: the executor's setup after a zygote's fork
                # closes the fds it did not make, and the number may be reused.
                if self._cellvm_original is not None:
                        fd, st = self._cellvm_original
                        try:
                                now = os.fstat(fd)
                                if (now.st_dev, now.st_ino, now.st_rdev) == st:
                                        return fd
                        except OSError:
                                pass
                fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
                st = os.fstat(fd)
                self._cellvm_original = (fd, (st.st_dev, st.st_ino, st.st_rdev))
                return fd

        def isatty(self):
                return False

        def writable(self):
                return True


# The name errors show, as ipykernel's ("'OutStream' object has no attribute
# ..."), and the module its repr names.
_OutStream.__name__ = _OutStream.__qualname__ = "OutStream"
_OutStream.__module__ = "ipykernel.iostream"


class _StreamFlusher:
        """What the output flusher thread (output_flusher.c) calls every interval
        while a cell runs, so `print('a'); time.sleep(5)` shows 'a' at once.
        The sinks' locks order these flushes against the cell's writes; `lock`
        keeps fork() from copying a flush in progress."""

        def __init__(self, streams):
                self.streams = streams
                self.lock = threading.Lock()

        def __call__(self):
                with self.lock:
                        self._flush()

        def _flush(self):
                for stream in self.streams:
                        try:
                                stream.flush()
                        except Exception:  # closed or broken pipe: nothing to deliver to
                                pass

        def before_fork(self):
                self.lock.acquire()
                self._flush()  # or the child would write the pending output a second time

        def after_fork(self):
                self.lock.release()


_out_streams = ()
_flusher = None


def _flush_std():
        for stream in (sys.stdout, sys.stderr) + _out_streams:
                try:
                        stream.flush()
                except Exception:  # a user-replaced stream may be broken; never fail the kernel
                        pass


def _flushing_first(fn):
        """fn, but with the cell's buffered output flushed first: it starts a child
        process that writes to the same fds, and what was printed before must
        come out before the child's output (which capturing fds 1/2 ensures
        too, unless the capture could not start)."""

        def wrapper(*args, **kwargs):
                _flush_std()
                _cellvm.watch_fd_output()  # text printed after the child's waits for its output
                return fn(*args, **kwargs)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__qualname__ = getattr(fn, "__qualname__", wrapper.__name__)
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        wrapper.__wrapped__ = fn
        return wrapper


def _install_output_streams():
        global _out_streams, _flusher
        sys.stdout = _OutStream(1, "stdout")
        sys.stderr = _OutStream(2, "stderr")
        _out_streams = (sys.stdout, sys.stderr)
        _flusher = _StreamFlusher(_out_streams)
        _cellvm.flusher_start(_flusher, OUTPUT_FLUSH_INTERVAL)
        os.register_at_fork(before=_flusher.before_fork, after_in_parent=_flusher.after_fork,
                            after_in_child=_flusher.after_fork)
        # Child processes that do not go through fork(): subprocess (fork_exec or
        # posix_spawn), os.system and os.posix_spawn*.
        if getattr(subprocess, "_fork_exec", None) is not None:
                subprocess._fork_exec = _flushing_first(subprocess._fork_exec)
        for name in ("system", "posix_spawn", "posix_spawnp"):
                if hasattr(os, name):
                        setattr(os, name, _flushing_first(getattr(os, name)))
        # Writes to fds 1/2 and exits that mind their capture (fd_capture.h).
        os.write, os._exit = _cellvm.wrap_os(os.write, os._exit)
