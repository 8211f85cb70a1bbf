"""The executor's buffered stdout/stderr: few STREAM messages for many prints,
prompt delivery while a cell runs, order kept against messages, child
processes and fork(), and the attributes ipykernel's OutStream reports."""

import os
import time

from cellvm import _wire as W

from test_executor_harness import DISPLAY, RESULT, STREAM, ex, zygote  # noqa: F401


def test_many_prints_arrive_whole_in_few_writes(ex):
    r = ex.ok("for i in range(10000):\n    print(i)")
    assert r.stdout == "".join(f"{i}\n" for i in range(10000))
    # Unbuffered, this was one write (and up to one STREAM) per print.
    assert len(r.of(STREAM)) < 20


def test_output_of_a_running_cell_arrives_before_it_ends(agent):
    conn = W.Connection.connect(agent.addr)
    try:
        conn.call(W.HELLO, {"protocol": 1})
        seen = []
        req = conn.request(W.EXECUTE, {"code": "import time\nprint('a')\ntime.sleep(2)\nprint('b')"})
        for mtype, body in req.messages(timeout=30):
            if mtype == W.EXEC_INPUT:  # the cell starts (a fresh agent's zygote may still be importing)
                t0 = time.monotonic()
            elif mtype == W.STREAM:
                seen.append((time.monotonic() - t0, body["text"]))
        end = time.monotonic() - t0
    finally:
        conn.close()
    assert "".join(t for _, t in seen) == "a\nb\n"
    first = seen[0]
    assert first[1].startswith("a") and first[0] < 1.0, seen
    # The cell sleeps 2 s after 'a'; both ends are client-side arrival times,
    # and EXEC_INPUT may take longer to arrive than the end (seen: 1.9996 s).
    assert end >= 1.95


def test_order_against_display_result_and_child_processes(ex):
    r = ex.ok("import os, subprocess, sys\n"
              "print('a')\n"
              "subprocess.run(['echo', 'b'])\n"
              "os.system('echo c')\n"
              "print('d')\n"
              "display('e')\n"
              "print('f', file=sys.stderr)\n"
              "print('g')\n"
              "'h'")
    kinds = []
    for mtype, body in r.events[1:]:
        item = body["text"] if mtype == STREAM else body["data"]["text/plain"]
        if mtype == STREAM and body["name"] == "stderr":
            continue
        if mtype == STREAM and kinds and kinds[-1][0] == STREAM:
            kinds[-1] = (STREAM, kinds[-1][1] + item)
        else:
            kinds.append((mtype, item))
    assert kinds == [(STREAM, "a\nb\nc\nd\n"), (DISPLAY, "'e'"), (STREAM, "g\n"), (RESULT, "'h'")]
    assert r.stderr == "f\n"


def test_fork_does_not_duplicate_pending_output(ex):
    r = ex.ok("import os, sys\n"
              "print('a')\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    print('child')\n"
              "    sys.stdout.flush()\n"
              "    os._exit(0)\n"
              "os.waitpid(pid, 0)\n"
              "print('b')")
    assert r.stdout == "a\nchild\nb\n"


def test_stream_attributes_as_in_ipykernel(ex):
    # ipykernel 6.17 OutStream: encoding 'UTF-8', errors None, isatty() False,
    # name 'stdout'/'stderr', a fileno() that is not the cell's output (as
    # ipykernel's, a copy of the kernel's own stdout before the capture);
    # flush() returns None.
    r = ex.ok("import sys, os\n"
              "for s in (sys.stdout, sys.stderr):\n"
              "    print((s.encoding, s.errors, s.isatty(), s.name, s.writable(), s.flush()))")
    assert r.stdout == "('UTF-8', None, False, 'stdout', True, None)\n" \
                       "('UTF-8', None, False, 'stderr', True, None)\n"
    r = ex.ok("os.write(sys.stdout.fileno(), b'not shown\\n'), sys.stdout.fileno() > 2")
    assert r.stdout == "" and r.result["data"]["text/plain"] == "(10, True)"
    r = ex.ok("import subprocess\nsubprocess.run(['echo', 'child'], stdout=sys.stdout).returncode")
    assert r.stdout == "" and r.result["data"]["text/plain"] == "0"
    r = ex.ok("os.write(1, b'fd 1 is\\n');")
    assert r.stdout == "fd 1 is\n"


def test_lone_surrogates_and_no_binary_buffer_as_in_ipykernel(ex):
    # jupyter_client sends U+DC80..U+DCFF as the bytes they stand for
    # (surrogateescape), which the receiving end decodes to U+FFFD; other
    # lone surrogates, which ipykernel fails to send, show escaped.
    r = ex.ok("import sys\nprint('\\udcff x \\ud800')")
    assert r.stdout == "\ufffd x \\ud800\n"
    r = ex.run("sys.stdout.buffer")
    assert (r.error["name"], r.error["value"]) == \
        ("AttributeError", "'OutStream' object has no attribute 'buffer'")
    # write() refuses bytes in ipykernel's frame, with its message
    r = ex.run("sys.stdout.write(b'x')")
    assert (r.error["name"], r.error["value"]) == \
        ("TypeError", "write() argument must be str, not <class 'bytes'>")
    assert any("ipykernel/iostream.py:537" in line for line in r.error["traceback"]), r.error["traceback"]


def test_a_closed_stream_refuses_writes_but_its_fd_stays_open(ex):
    """As ipykernel's OutStream.close(): `closed` turns True and writes raise
    ValueError, while the fd (which child processes share) keeps working."""
    r = ex.ok("import sys, os\nprint('before')\nsys.stderr.close()\nsys.stderr.closed, sys.stdout.closed")
    assert r.stdout == "before\n" and r.result["data"]["text/plain"] == "(True, False)"
    r = ex.run("print('x', file=sys.stderr)")
    assert (r.error["name"], r.error["value"]) == ("ValueError", "I/O operation on closed file")
    assert any("ipykernel/iostream.py:547" in line for line in r.error["traceback"]), r.error["traceback"]
    r = ex.ok("os.write(2, b'fd 2 still open\\n');")
    assert r.stderr == "fd 2 still open\n"


def test_stream_is_a_text_io_base_named_outstream_as_in_ipykernel(ex):
    # ipykernel's OutStream derives from io.TextIOBase: what it does not
    # define (reconfigure, read, ...) fails as there, naming 'OutStream'.
    r = ex.ok("import io, sys\n"
              "isinstance(sys.stdout, io.TextIOBase), sys.stdout.newlines, sys.stdout.readable(), "
              "sys.stdout.seekable(), type(sys.stdout).__name__")
    assert r.result["data"]["text/plain"] == "(True, None, False, False, 'OutStream')"
    r = ex.run("sys.stdout.reconfigure(encoding='utf-8')")
    assert (r.error["name"], r.error["value"]) == \
        ("AttributeError", "'OutStream' object has no attribute 'reconfigure'")
    r = ex.run("sys.stdout.read()")
    assert (r.error["name"], r.error["value"]) == ("UnsupportedOperation", "read")
    r = ex.run("sys.stdout.write(b'x')")
    assert (r.error["name"], r.error["value"]) == ("TypeError", "write() argument must be str, not <class 'bytes'>")
    r = ex.ok("n = sys.stdout.write('h\\u00e9llo \\u6771\\n'); sys.stdout.writelines(['a', 'b\\n']); n")
    assert r.stdout == "h\u00e9llo \u6771\nab\n" and r.result["data"]["text/plain"] == "8"


def test_writes_bigger_than_the_buffer_and_from_threads_arrive_whole(ex):
    r = ex.ok("print('x' * 200000)\nprint('y' * 10)")
    assert r.stdout == "x" * 200000 + "\n" + "y" * 10 + "\n"
    r = ex.ok("import threading\n"
              "def w(c):\n"
              "    for _ in range(2000):\n"
              "        print(c * 50)\n"
              "ts = [threading.Thread(target=w, args=(c,)) for c in 'abcd']\n"
              "[t.start() for t in ts]; [t.join() for t in ts];")
    lines = r.stdout.splitlines()
    assert len(lines) == 8000 and all(len(ln) == 50 and len(set(ln)) == 1 for ln in lines)
    assert sorted({ln[0] for ln in lines}) == list("abcd")


def test_a_stream_that_is_dropped_writes_what_it_holds(ex):
    # The stream type on another fd: its pending text is written when it is
    # collected (IOBase's finaliser closes it), as TextIOWrapper's would be.
    r = ex.ok("import gc, os, sys\n"
              "r, w = os.pipe()\n"
              "s = type(sys.stdout)(w, 'other')\n"
              "s.write('pending')\n"
              "del s; gc.collect()\n"
              "os.read(r, 100)")
    assert r.result["data"]["text/plain"] == "b'pending'"


def test_tracemalloc_started_and_stopped_while_the_flusher_runs(ex):
    # The flusher thread used to make and free a thread state at each tick;
    # with tracemalloc's allocator hooks going in and out under it, that
    # crashed the executor (SIGSEGV) within a second or two of this loop.
    r = ex.ok("import tracemalloc, time\n"
              "t, n = time.monotonic(), 0\n"
              "while time.monotonic() - t < 2:\n"
              "    tracemalloc.start()\n"
              "    x = [list(range(50)) for _ in range(50)]\n"
              "    tracemalloc.stop()\n"
              "    n += 1\n"
              "print(n > 0, tracemalloc.is_tracing())")
    assert r.stdout == "True False\n"


# fds 1 and 2 are captured (python-embed/fd_capture.h): what C code, os.write
# and child processes write there keeps its place among the printed text,
# where it used to overtake text still buffered (ipykernel's order, which its
# capture thread keeps most of the time, not always).

def test_fd_writes_keep_their_place_among_prints(ex):
    r = ex.ok("import os, sys\n"
              "for k in range(300):\n"
              "    print('p', k); os.write(1, b'w%d\\n' % k)\n"
              "    print('e', k, file=sys.stderr); os.write(2, b'x%d\\n' % k)")
    assert r.stdout == "".join(f"p {k}\nw{k}\n" for k in range(300))
    assert r.stderr == "".join(f"e {k}\nx{k}\n" for k in range(300))


def test_c_writes_and_child_processes_keep_their_place(ex):
    # A C extension's writes, once fd 1 is watched (os.write arms it here; a
    # first write after a quiet spell races the text printed microseconds
    # after it, as in ipykernel), and each write found arms it again.
    r = ex.ok("import ctypes, os, subprocess\n"
              "libc = ctypes.CDLL(None)\n"
              "os.write(1, b''); libc.printf(b'c start\\n'); libc.fflush(None)\n"
              "for k in range(100):\n"
              "    print('p', k); libc.printf(b'c%d\\n', k); libc.fflush(None)\n"
              "for k in range(5):\n"
              "    print('q', k); subprocess.run(['echo', 's%d' % k])\n"
              "print('end')")
    assert r.stdout == ("c start\n" + "".join(f"p {k}\nc{k}\n" for k in range(100)) +
                        "".join(f"q {k}\ns{k}\n" for k in range(5)) + "end\n")


def test_a_write_to_fd_1_with_the_gil_held_bigger_than_a_pipe(ex):
    # printf through ctypes.PyDLL keeps the GIL while the pipe fills: the
    # capture thread drains it without the GIL, so nothing waits for ever.
    r = ex.ok("import ctypes\n"
              "print('before')\n"
              "py = ctypes.PyDLL(None)\n"
              "py.printf(b'%s\\n', b'y' * 300000); py.fflush(None)\n"
              "print('after')", timeout=60)
    assert r.stdout == "before\n" + "y" * 300000 + "\nafter\n"


def test_a_child_writing_all_along_does_not_hold_up_the_cell(ex):
    # A background child floods fd 1 while the cell prints and ends: each
    # flush forwards what the pipe held when asked, no more.
    r = ex.ok("import subprocess, time\n"
              "p = subprocess.Popen(['sh', '-c', 'yes | head -c 3000000'])\n"
              "for k in range(2000):\n"
              "    print(k)\n"
              "p.wait()\n"
              "print('done')", timeout=120)
    # The child's bytes may come between the pieces of a print ('7' 'y\n...' '\n').
    assert r.stdout.endswith("done\n") and r.stdout.count("y") == 1500000
    assert r.stdout.replace("y", "").split() == [str(k) for k in range(2000)] + ["done"]


def test_a_forked_child_writes_its_text_and_its_fd_output(ex):
    r = ex.ok("import os\n"
              "print('parent')\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    print('child text'); os.write(1, b'child fd\\n'); os._exit(0)\n"
              "os.waitpid(pid, 0)\n"
              "print('parent again')")
    assert r.stdout.splitlines()[0] == "parent" and r.stdout.splitlines()[-1] == "parent again"
    assert sorted(r.stdout.splitlines()[1:3]) == ["child fd", "child text"]


def test_os_write_and_exit_stay_builtins(ex):
    # Wrapped in C (python-embed/cellvm_module.c): no frame of their own in an
    # error, and they look as os's own.
    r = ex.run("import os\nos.write(1, 'text')")
    assert r.error["name"] == "TypeError"
    assert "a bytes-like object is required, not 'str'" in r.error["value"]
    tb = "\n".join(r.error["traceback"])
    assert "iostream" not in tb and "cellvm" not in tb
    r = ex.ok("repr(os.write), repr(os._exit), os.write.__text_signature__")
    assert r.text == "('<built-in function write>', '<built-in function _exit>', '(fd, data, /)')"


def test_a_cell_held_up_by_a_full_pipe_still_takes_an_interrupt(ex):
    # The agent stops reading while its client is slow: a cell printing (and
    # a child writing fd 1) then waits for room, and SIGINT still raises
    # KeyboardInterrupt there, as in a blocking write (the namespace stays).
    import signal
    ex.ok("kept = 1")
    for code in ("child = None\nwhile True:\n    print('x' * 1000)",
                 "import subprocess\nchild = subprocess.Popen(['yes'])\nwhile True:\n    print('p')"):
        rid = ex.start(code)
        time.sleep(1.5)  # nobody reads: both pipes fill, the cell waits
        os.kill(ex.pid, signal.SIGINT)
        r = ex.collect(rid, timeout=30)
        assert r.error is not None and r.error["name"] == "KeyboardInterrupt", r.error
        ex.ok("if child: child.kill(); child.wait()")
    assert ex.ok("kept").text == "1"
