"""ipykernel.iostream's counterpart: sys.stdout and sys.stderr of a cell
(OutStream), buffered in the executor and flushed in order with the
messages, by a timer while a cell runs, and before child processes start."""

import io
import os
import subprocess
import sys
import threading

import _cellvm


# Output buffered in the executor (stream_sink.c) before it reaches the
# agent's pipes. Flushed when full, when fd 1 or 2 is written (C code,
# os.write, child processes: captured, fd_capture.c), before every message
# (ordering, PROTOCOL.md section 8) and every OUTPUT_FLUSH_INTERVAL while a
# cell runs.
OUTPUT_FLUSH_INTERVAL = 0.03


class _BinaryOut:
        """sys.stdout.buffer: bytes join the text layer's buffer, so
        print('a'); sys.stdout.buffer.write(b'b') keeps its order; the rest
        (fileno, mode, raw, ...) is a BufferedWriter's on the fd."""

        def __init__(self, text, binary):
                self._text = text
                self._binary = binary

        def write(self, data):
                return self._text.write_bytes(data)

        def writelines(self, lines):
                for line in lines:
                        self._text.write_bytes(line)

        def flush(self):
                self._text.flush()

        def __getattr__(self, name):
                return getattr(self._binary, name)

        def __enter__(self):
                return self

        def __exit__(self, *exc):
                self._binary.__exit__(*exc)


class _OutStream(_cellvm.OutStream, io.TextIOBase):
        """sys.stdout/sys.stderr of a cell: text buffered in C (_cellvm.OutStream,
        out_stream.c) and handed to the agent in order with what fd 1 or 2
        receives. Like ipykernel's OutStream it is an io.TextIOBase and reports
        encoding 'UTF-8', errors None, isatty() False, name 'stdout'/'stderr';
        fileno() is the real fd, so child processes writing to it land in the
        same stream."""

        encoding = "UTF-8"
        softspace = 0  # IPython's run_code resets it after each cell (print's Python 2 flag)

        def __init__(self, fd, name):
                super().__init__(fd)
                raw = io.FileIO(fd, "w", closefd=False)
                self._cellvm_name = name
                self._cellvm_binary = _BinaryOut(self, io.BufferedWriter(raw))

        @property
        def name(self):
                return self._cellvm_name

        @property
        def buffer(self):
                return self._cellvm_binary

        def fileno(self):
                return self._cellvm_binary.fileno()

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
