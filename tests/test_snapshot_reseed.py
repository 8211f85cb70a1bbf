"""After NEW_GENERATION (or the kernel's VM-fork notice) every interpreter a
snapshot copied reseeds before it runs more user code (docs/SNAPSHOTS.md):
live Python, bash and JavaScript contexts, the Python spare executor, the
Node.js spare. A real dev-mode agent with the real executors; the state a
copy would share is made known first (fixed seeds), so "reseeded" is "no
longer what that seed gives", and each test first shows that without a new
generation the known state stays (the test can fail)."""

import itertools
import os
import stat
import tempfile
import textwrap
import time

import pytest

import conftest
from test_agent_protocol import (CONTEXT_CREATE, OK, Raw, execute, result_text, stdout_text)

SNAPSHOT_PREPARE, NEW_GENERATION = 0x0034, 0x0035
_generations = itertools.count(2)


def new_generation(conn, prepare=True):
    """SNAPSHOT_PREPARE then NEW_GENERATION with the next number, as after a restore."""
    if prepare:
        assert conn.call(SNAPSHOT_PREPARE, 90, {})[0] == OK
    t, _, body = conn.call(NEW_GENERATION, 91, {"generation": next(_generations),
                                                 "entropy": os.urandom(32),
                                                 "realtime_ns": time.time_ns()})
    assert t == OK, body


_ids = itertools.count(100)


def value(conn, code, **kw):
    """The cell's result (text/plain), or its stdout when it has none."""
    msgs = execute(conn, next(_ids), code, **kw)
    assert msgs[-1][0] == OK and msgs[-1][2].get("status") == "ok", msgs
    r = result_text(msgs)
    return r[0] if r else stdout_text(msgs).strip()


def new_context(conn, language="python"):
    t, _, body = conn.call(CONTEXT_CREATE, next(_ids), {"language": language})
    assert t == OK, body
    return body["id"]


@pytest.fixture(scope="module")
def numpy_agent():
    a = conftest.AgentProcess(preload="numpy")
    yield a
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


@pytest.fixture
def conn(numpy_agent):
    c = Raw(numpy_agent.addr)
    c.hello()
    yield c
    c.close()


# A Python context's known state: random, numpy's global RandomState, tempfile's names.
FIX_PYTHON = textwrap.dedent("""\
    import os, random, tempfile, numpy
    random.seed(1234)
    numpy.random.seed(1234)
    numpy.random.randn()  # the legacy Box-Muller pair: one value kept for the next randn()
    _ref = numpy.random.RandomState(1234)
    _ref.randn()
    _seq = tempfile._RandomNameSequence()
    _seq._rng, _seq._rng_pid = random.Random(1234), os.getpid()
    tempfile._name_sequence = _seq
    """)
DRAW_PYTHON = textwrap.dedent("""\
    import os, random, tempfile, numpy
    fd, path = tempfile.mkstemp(dir=os.getcwd()); os.close(fd); os.unlink(path)
    (random.random() == random.Random(1234).random(),
     numpy.random.randn() == _ref.randn(),
     numpy.random.rand() == _ref.rand(),
     os.path.basename(path)[3:] ==
         ''.join(random.Random(1234).choices(tempfile._RandomNameSequence.characters, k=8)))
    """)


def test_a_live_python_context_reseeds_random_numpy_and_tempfile(conn):
    ctx = new_context(conn)
    value(conn, FIX_PYTHON, context=ctx)
    assert value(conn, DRAW_PYTHON, context=ctx) == "(True, True, True, True)"  # nothing reseeds by itself
    value(conn, FIX_PYTHON, context=ctx)
    new_generation(conn)
    assert value(conn, DRAW_PYTHON, context=ctx) == "(False, False, False, False)"
    # Once: the next cell of the same epoch keeps what it is given.
    value(conn, FIX_PYTHON, context=ctx)
    assert value(conn, DRAW_PYTHON, context=ctx) == "(True, True, True, True)"


def test_the_default_context_reseeds_too(conn):
    value(conn, FIX_PYTHON)
    new_generation(conn, prepare=False)  # a refresh without a snapshot does the same
    assert value(conn, DRAW_PYTHON) == "(False, False, False, False)"


def test_a_live_bash_context_reseeds_random(conn):
    ctx = new_context(conn, "bash")
    first_of_1234 = value(conn, "bash -c 'RANDOM=1234; echo $RANDOM'", context=ctx)
    value(conn, "RANDOM=1234", context=ctx)
    assert value(conn, "echo $RANDOM", context=ctx) == first_of_1234
    value(conn, "RANDOM=1234", context=ctx)
    new_generation(conn)
    assert value(conn, "echo $RANDOM", context=ctx) != first_of_1234
    # The shell itself lives on: its variables are still there.
    value(conn, "KEPT=yes", context=ctx)
    assert value(conn, "echo $KEPT", context=ctx) == "yes"


def test_a_live_javascript_context_gets_a_math_random_from_the_kernel(conn):
    ctx = new_context(conn, "javascript")
    mine = new_context(conn, "javascript")
    native = "Math.random.toString().includes('[native code]')"
    assert value(conn, native, context=ctx) == "true"
    value(conn, "Math.random = () => 0.25; 1", context=mine)  # a program's own stays
    value(conn, "globalThis.kept = 41; 1", context=ctx)
    new_generation(conn)
    assert value(conn, native, context=ctx) == "false"
    stats = value(conn, textwrap.dedent("""\
        const xs = Array.from({length: 20000}, () => Math.random());
        const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
        [xs.every((x) => x >= 0 && x < 1), new Set(xs).size === xs.length,
         mean > 0.48 && mean < 0.52, kept + 1].join(' ')"""), context=ctx)
    assert stats == "true true true 42", stats
    assert value(conn, "Math.random()", context=mine) == "0.25"


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None


def node_spares(agent):
    """Pids of the agent's Node.js processes started as spares (`driver.js ... --spare`,
    waiting or since given to a context; the agent is their parent, a subreaper: other
    agents on this machine have theirs)."""
    return {pid for pid, cmd in conftest._cmdlines()
            if b"driver.js" in cmd and b"--spare" in cmd.split(b"\0")
            and parent_of(pid) == agent.proc.pid}


def wait_for(pred, what, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_node_spare_of_an_older_epoch_is_replaced(numpy_agent, conn):
    earlier = node_spares(numpy_agent)  # other tests' contexts
    first = new_context(conn, "javascript")
    assert value(conn, "1 + 1", context=first) == "2"  # a JavaScript context ran: a spare follows
    old = wait_for(lambda: node_spares(numpy_agent) - earlier, "no Node.js spare started")
    new_generation(conn)
    ctx = new_context(conn, "javascript")
    argv = value(conn, "[process.pid, process.argv.slice(2).join(' '), "
                       "Math.random.toString().includes('[native code]')].join(' ')", context=ctx)
    pid, *rest = argv.split(" ")
    assert int(pid) not in old, (argv, old)  # a fresh Node.js: its V8 and OpenSSL are its own
    assert rest[-1] == "true"  # fresh: V8's own Math.random, no replacement needed
    assert "--epoch" in rest
    wait_for(lambda: not (node_spares(numpy_agent) & old), "the old spare still runs")


def test_sample_gives_the_values_two_copies_must_not_share(conn):
    got = value(conn, "import cellvm_reseed; s = cellvm_reseed.sample(); t = cellvm_reseed.sample(); "
                      "print(sorted(s)); print(all(s[k] != t[k] for k in s)); "
                      "print(len(s['urandom']), len(s['uuid4']), float(s['random']) < 1, "
                      "float(s['numpy']) < 1)")
    assert got.splitlines() == ["['numpy', 'random', 'urandom', 'uuid4']", "True",
                                "32 36 True True"], got


# --- the Python spare: a state fixed in the zygote, inherited by every fork ---

FIXED_SEED_MODULE = textwrap.dedent("""\
    # Test fixture, preloaded in the zygote: every process it forks starts with a
    # known random and tempfile state, as every copy of a snapshot would.
    import os, random, tempfile

    def fix():
        random.seed(1234)
        seq = tempfile._RandomNameSequence()
        seq._rng, seq._rng_pid = random.Random(1234), os.getpid()
        tempfile._name_sequence = seq

    fix()
    os.register_at_fork(after_in_child=fix)  # after random's own reseed at fork
    """)
DRAW_SPARE = textwrap.dedent("""\
    import cellvm_reseed, os, random, tempfile
    fd, path = tempfile.mkstemp(dir=os.getcwd()); os.close(fd); os.unlink(path)
    print(os.getpid(), cellvm_reseed.epoch, random.random() == random.Random(1234).random(),
          os.path.basename(path)[3:] ==
              ''.join(random.Random(1234).choices(tempfile._RandomNameSequence.characters, k=8)))
    """)


def process_started_s(pid):
    """When `pid` started, in CLOCK_BOOTTIME seconds (field 22 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return ticks / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def fixed_seed_agent(monkeypatch):
    d = tempfile.mkdtemp(prefix="cellvm-test-mod-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "cellvm_test_fixed_seed.py")
    with open(path, "w") as f:
        f.write(FIXED_SEED_MODULE)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    monkeypatch.setenv("PYTHONPATH", d)
    a = conftest.AgentProcess(preload="cellvm_test_fixed_seed")
    yield a
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


def test_the_spare_forked_before_the_generation_reseeds_before_its_first_cell(fixed_seed_agent):
    c = Raw(fixed_seed_agent.addr)
    c.hello()
    # Without a new generation a context made from the spare keeps the fixed state.
    pid, epoch, same_random, same_name = value(c, DRAW_SPARE, context=new_context(c)).split()
    assert (epoch, same_random, same_name) == ("1", "True", "True"), (pid, epoch)
    time.sleep(1.5)  # the next spare is forked meanwhile, before the generation
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    new_generation(c)
    pid, epoch, same_random, same_name = value(c, DRAW_SPARE, context=new_context(c)).split()
    assert process_started_s(int(pid)) < before, "not the spare forked before the generation"
    assert (epoch, same_random, same_name) == ("2", "False", "False"), (pid, epoch)
    # Forked from the zygote after the generation: born in the new epoch.
    _, epoch, _, _ = value(c, DRAW_SPARE, context=new_context(c)).split()
    assert epoch == "2"
    c.close()


# --- the VM-fork notice of the vmgenid driver, through a FIFO in /dev/kmsg's format ---

@pytest.fixture
def kmsg_agent(tmp_path):
    fifo = str(tmp_path / "kmsg")
    os.mkfifo(fifo)
    # Opened for writing first (without blocking: the agent opens it for reading).
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(fifo, os.O_WRONLY)
    os.close(rfd)
    a = conftest.AgentProcess("--vmfork-log", fifo, preload="numpy")
    yield a, wfd
    os.close(wfd)
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


NOTICE = "random: crng reseeded due to virtual machine fork"


def test_the_kernels_vm_fork_notice_reseeds_without_the_host(kmsg_agent):
    agent, kmsg = kmsg_agent
    c = Raw(agent.addr)
    c.hello()
    ctx = new_context(c)
    value(c, FIX_PYTHON, context=ctx)
    # The same words from user space (facility LOG_USER, as /dev/kmsg's writers get) count for nothing.
    os.write(kmsg, f"14,500,1000000,-;{NOTICE}\n6,501,1000001,-;random: crng init done\n".encode())
    time.sleep(0.5)
    assert value(c, DRAW_PYTHON, context=ctx) == "(True, True, True, True)"
    value(c, FIX_PYTHON, context=ctx)
    # No wait: a notice logged before the cell is sent counts for it (the agent
    # reads the log before every X_EXECUTE, not only when epoll says so).
    os.write(kmsg, f"6,502,1000002,-;{NOTICE}\n".encode())
    assert value(c, DRAW_PYTHON, context=ctx) == "(False, False, False, False)"
    assert "the kernel says the VM generation ID changed" in agent.read_log()
    # The host's part stays the host's: no generation change, nothing refused.
    hello = c.hello()
    assert (hello["generation"], hello["awaiting_generation"]) == (1, False)
    c.close()
