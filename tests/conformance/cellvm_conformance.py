"""pytest plugin: E2B's code-interpreter SDK tests (../shared/e2b_conformance,
run unchanged, with their own conftest.py) against cellvm. tests/conformance/run
loads it (`-p cellvm_conformance`); docs/CONFORMANCE.md explains the classes.

Each test gets a fresh dev-mode agent (tests/agent_process.py) named by
$CELLVM_ADDR, with its working directory at /home/user as in the image: as root,
the agent runs in a mount namespace of its own where a tmpfs hides /home and a
directory of the test is bind-mounted on /home/user. E2B's `Sandbox.create()`
(client/python/compat) then connects to it.

Every collected test is put in one class:
  python, bash, javascript-typescript  must pass (a failure fails the run);
  other-language    R and Java, which cellvm does not offer (not asked for):
                    run, and expected to fail (xfail; an XPASS is reported);
  e2b-plumbing      E2B's own services and transport: skipped, with the reason.
The summary gives the counts per class and names every test that did not pass;
its last line is `conformance: N passed, N failed, N skipped` (skipped counts
the out-of-scope and not-asked-for tests).
"""

import ast
import inspect
import itertools
import os
import re
import shutil
import signal
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # tests/: agent_process
from agent_process import AgentProcess  # noqa: E402

SUITE = os.path.realpath(os.environ.get("CELLVM_CONFORMANCE_SUITE",
                                        os.path.join(os.path.dirname(ROOT), "shared",
                                                     "e2b_conformance")))
SANDBOX_WORKDIR = "/home/user"  # the image's, where E2B's tests expect it
TEST_TIMEOUT = float(os.environ.get("CELLVM_CONFORMANCE_TEST_TIMEOUT", "300"))

PYTHON, BASH, JSTS = "python", "bash", "javascript-typescript"
OTHER, PLUMBING = "other-language", "e2b-plumbing"
CLASSES = (PYTHON, BASH, JSTS, OTHER, PLUMBING)
MUST_PASS = (PYTHON, BASH, JSTS)

# Whole files that test E2B's own services, not a sandbox's behaviour.
PLUMBING_FILES = {
    "sync/test_systemd.py": "E2B plumbing: restarts of its jupyter and uvicorn services "
                            "under systemd (cellvm has neither)",
    "async/test_async_systemd.py": "E2B plumbing: restarts of its jupyter and uvicorn services "
                                   "under systemd (cellvm has neither)",
    "test_sandbox_url.py": "E2B plumbing: its sandbox URL scheme (https://PORT-ID.domain, "
                           "e2b.connection_config); cellvm sandboxes have no URL",
    "test_execute_timeout.py": "E2B plumbing: the timeouts of its httpx transport "
                               "(e2b.connection_config); cellvm speaks its own protocol",
}
# E2B files these under bash, though they run `!pwd` (a shell escape of IPython).
BASH_FILES = {"sync/test_bash.py", "async/test_async_bash.py"}
LANGUAGE_CLASS = {"python": PYTHON, "bash": BASH, "js": JSTS, "javascript": JSTS,
                  "ts": JSTS, "typescript": JSTS}
OTHER_REASON = "R and Java contexts are not offered by cellvm (not asked for)"
LANGUAGE_RE = re.compile(r"""\blanguage\s*=\s*["']([A-Za-z0-9_+-]+)["']""")


def _rel(path):
    return os.path.relpath(os.path.realpath(str(path)), SUITE)


def _languages(item):
    fn = getattr(item, "function", None)
    try:
        src = inspect.getsource(fn) if fn is not None else ""
    except (OSError, TypeError):
        src = ""
    return {m.lower() for m in LANGUAGE_RE.findall(src)}


def classify(item):
    """(class, reason): plumbing by file; else the most foreign language the
    test's source names (language="..."), python when it names none."""
    rel = _rel(item.path)
    if rel in PLUMBING_FILES:
        return PLUMBING, PLUMBING_FILES[rel]
    classes = {LANGUAGE_CLASS.get(lang, OTHER) for lang in _languages(item)}
    if os.path.basename(rel).startswith("test_bash") or rel in BASH_FILES:
        classes.add(BASH)
    for c in (OTHER, JSTS, BASH):
        if c in classes:
            return c, OTHER_REASON if c == OTHER else ""
    return PYTHON, ""


# --- collection: a plumbing module that cannot be imported here ------------

class _OutOfScopeItem(pytest.Item):
    """A test of a plumbing module that cannot even be imported here (it needs
    E2B's own modules): listed, and skipped with the reason."""

    def __init__(self, *, reason, lineno, **kw):
        super().__init__(**kw)
        self.reason = reason
        self.lineno = lineno
        self.add_marker(pytest.mark.skip(reason=reason))

    def runtest(self):
        pytest.skip(self.reason)

    def reportinfo(self):
        return self.path, self.lineno, self.name


def _param_ids(deco):
    """The ids pytest gives @pytest.mark.parametrize("name", [...]) of literals."""
    if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize"
            and len(deco.args) >= 2 and isinstance(deco.args[1], (ast.List, ast.Tuple))):
        return None
    name = deco.args[0].value if isinstance(deco.args[0], ast.Constant) else "arg"
    ids = []
    for i, v in enumerate(deco.args[1].elts):
        ok = isinstance(v, ast.Constant) and isinstance(v.value, (str, int, float, bool))
        ids.append(str(v.value) if ok else f"{name}{i}")
    return ids


def _test_names(path):
    """(name, 0-based line) of each test function, parametrized ones once per id."""
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name.startswith("test"):
            params = [p for p in map(_param_ids, node.decorator_list) if p]
            if not params:
                yield node.name, node.lineno - 1
                continue
            for combo in itertools.product(*reversed(params)):
                yield f"{node.name}[{'-'.join(combo)}]", node.lineno - 1


class _PlumbingModule(pytest.Module):
    def collect(self):
        try:
            return super().collect()
        except self.CollectError as e:
            lines = str(e).strip().splitlines()
            last = re.sub(r"^E\s+", "", lines[-1]) if lines else type(e).__name__
            reason = f"{PLUMBING_FILES[_rel(self.path)]}; not importable here: {last}"
            return [_OutOfScopeItem.from_parent(self, name=n, reason=reason, lineno=line)
                    for n, line in _test_names(self.path)]


def pytest_pycollect_makemodule(module_path, parent):
    if _rel(module_path) in PLUMBING_FILES:
        return _PlumbingModule.from_parent(parent, path=module_path)
    return None


# nodeid -> class, nodeid -> outcome, nodeid -> why it did not pass, collectors that failed
_STATE = {"classes": {}, "results": {}, "why": {}, "collect_errors": []}


def pytest_configure(config):
    os.environ.pop("E2B_DEBUG", None)  # E2B's tests skip some cases under it
    config.addinivalue_line("markers", "skip_debug: E2B's: skipped when E2B_DEBUG is set")


def pytest_collection_modifyitems(config, items):
    for item in items:
        cls, reason = classify(item)
        _STATE["classes"][item.nodeid] = cls
        item.user_properties.append(("cellvm_class", cls))
        if cls == PLUMBING and not isinstance(item, _OutOfScopeItem):
            item.add_marker(pytest.mark.skip(reason=reason))
        elif cls == OTHER:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))


def pytest_deselected(items):
    """-k/-m: what the command line leaves out is not counted."""
    for item in items:
        _STATE["classes"].pop(item.nodeid, None)


# --- a fresh agent per test ------------------------------------------------

# The image's sandbox user: uid/gid 1000 named `user` (files.get_info().owner),
# over the host's /etc/passwd and /etc/group, seen by this namespace only.
_IMAGE_USER = ("grep -v '^[^:]*:[^:]*:1000:' /etc/passwd > /home/.passwd && "
               "echo 'user:x:1000:1000::/home/user:/bin/bash' >> /home/.passwd && "
               "grep -v '^[^:]*:[^:]*:1000:' /etc/group > /home/.group && "
               "echo 'user:x:1000:' >> /home/.group && "
               "mount --bind /home/.passwd /etc/passwd && mount --bind /home/.group /etc/group && ")


def _home_user_launcher(workdir, loopback=False, image_user=False):
    """unshare(1) into a private mount namespace where /home is a tmpfs and the
    test's `workdir` is bind-mounted on /home/user, then exec the agent.
    loopback: into a network namespace of its own too, with only lo up.
    image_user: uid 1000 is named `user`, as in the image."""
    script = ('mount -t tmpfs -o mode=0755 cellvm-home /home && mkdir /home/user && '
              + (_IMAGE_USER if image_user else "") +
              'mount --bind "$0" /home/user && exec "$@"')
    net = []
    if loopback:
        script = "ip link set lo up && " + script
        net = ["--net"]
    return ["unshare", "--mount", *net, "--propagation", "private", "--", "/bin/sh", "-c", script,
            workdir]


def agent_of_the_test(request, monkeypatch, loopback=False, image_user=False, **agent_args):
    """(generator, for a fixture) A dev-mode agent of this test's own, named
    by $CELLVM_ADDR; its log goes into the report, a sanitizer's report fails
    the test. loopback: user code may use TCP/IP on 127.0.0.1, in a network
    namespace where nothing else is up (as in a guest without NIC).
    image_user: uid 1000 is named `user` (as in the image). The E2B SDK
    suites (cellvm_sdk_suite.py, cellvm_git_suite.py) share it."""
    if os.geteuid() == 0:
        policy = ("--network", "loopback") if loopback else ()
        agent = AgentProcess(*policy, launcher=lambda workdir: _home_user_launcher(workdir, loopback, image_user),
                             agent_workdir=SANDBOX_WORKDIR, **agent_args)
    else:  # no namespaces: the tests that expect /home/user or loopback fail, visibly
        agent = AgentProcess(**agent_args)
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    try:
        yield agent
    finally:
        agent.stop()
        log, report = agent.read_log(), agent.sanitizer_report()
        shutil.rmtree(agent.dir, ignore_errors=True)
        request.node.add_report_section("teardown", "agent log", log[-6000:])
        assert report is None, report


@pytest.fixture(autouse=True)
def cellvm_agent(request, monkeypatch):
    """A dev-mode agent of this test's own: $CELLVM_ADDR names it."""
    yield from agent_of_the_test(request, monkeypatch)


class _TestTimeout(Exception):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A hung test fails after TEST_TIMEOUT s instead of stalling the run."""
    def expired(signum, frame):
        raise _TestTimeout(f"{item.nodeid}: still running after {TEST_TIMEOUT:.0f} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, TEST_TIMEOUT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- outcomes and the summary ------------------------------------------------

def pytest_collectreport(report):
    if report.failed:
        _STATE["collect_errors"].append(report.nodeid)


def pytest_runtest_logreport(report):
    results = _STATE["results"]
    xfail = hasattr(report, "wasxfail")
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.passed:
            outcome = "xpassed" if xfail else "passed"
        elif report.skipped:
            outcome = "xfailed" if xfail else "skipped"
        else:
            outcome = "failed" if report.when == "call" else "error"
        results[report.nodeid] = outcome
        crash = getattr(report.longrepr, "reprcrash", None)
        if outcome in ("failed", "error", "xfailed") and crash is not None:
            _STATE["why"][report.nodeid] = crash.message.strip().splitlines()[0][:160]
    elif report.when == "teardown" and report.failed:
        results[report.nodeid] = "error"


def _origin():
    try:
        with open(os.path.join(SUITE, "ORIGIN")) as f:
            m = re.search(r"\b[0-9a-f]{40}\b", f.read())
            return m.group(0)[:12] if m else "?"
    except OSError:
        return "?"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = _STATE
    counts = {c: {} for c in CLASSES}
    for nodeid, cls in state["classes"].items():
        outcome = state["results"].get(nodeid, "not run")
        counts[cls][outcome] = counts[cls].get(outcome, 0) + 1
    tr = terminalreporter
    cols = ("passed", "failed", "error", "xfailed", "xpassed", "skipped", "not run")
    tr.section(f"cellvm conformance: E2B's tests at {_origin()} ({SUITE})")
    tr.write_line(f"{'class':24}" + "".join(f"{c:>9}" for c in cols) + f"{'total':>8}")
    for cls in CLASSES:
        row = counts[cls]
        note = {OTHER: "  (not asked for: expected to fail)",
                PLUMBING: "  (out of scope: skipped)"}.get(cls, "  (must pass)")
        tr.write_line(f"{cls:24}" + "".join(f"{row.get(c, 0):>9}" for c in cols) +
                      f"{sum(row.values()):>8}{note}")
    for err in state["collect_errors"]:
        tr.write_line(f"collection error: {err}")
    # Every test that did not pass, by class: nothing is hidden behind a count.
    for cls in CLASSES if not config.option.collectonly else ():
        for nodeid, c in state["classes"].items():
            outcome = state["results"].get(nodeid, "not run")
            if c == cls and outcome != "passed":
                why = state["why"].get(nodeid)
                tr.write_line(f"  {outcome.upper():8} [{cls}] {nodeid}" + (f": {why}" if why else ""))
    if config.option.collectonly:
        tr.write_line(f"collected only: {len(state['classes'])} tests, none run")
        tr.write_line("conformance: 0 passed, 0 failed, 0 skipped")
        return
    passed = sum(row.get("passed", 0) + row.get("xpassed", 0) for row in counts.values())
    failed = sum(counts[c].get(o, 0) for c in MUST_PASS for o in ("failed", "error", "not run"))
    failed += len(state["collect_errors"])
    skipped = sum(row.get("skipped", 0) + row.get("xfailed", 0) for row in counts.values())
    failed += sum(counts[c].get("failed", 0) + counts[c].get("error", 0) for c in (OTHER, PLUMBING))
    tr.write_line(f"conformance: {passed} passed, {failed} failed, {skipped} skipped")
