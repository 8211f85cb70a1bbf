"""pytest plugin: E2B's root tests/conftest.py, for E2B's own SDK tests run
unchanged (never copied here) against cellvm, each sandbox a dev-mode agent
of its test's own (cellvm_conformance.agent_of_the_test), or a micro-VM for
the tests IN_A_MICROVM.

E2B's conftest.py is left out (--confcutdir: it imports E2B's API client,
volumes and templates); what its sandbox tests use is given here:
`template`, `sandbox_test_id`, `sandbox_factory`, `sandbox`,
`async_sandbox_factory`, `async_sandbox`, `debug`, `helpers` and the
`skip_debug` marker. tests/test_e2b_sandbox_suite.py and
tests/test_e2b_git_suite.py (with cellvm_git_suite.py) run them.
"""

import asyncio
import os
import re
import uuid

import pytest

import cellvm_conformance

# A hung test fails after $CELLVM_CONFORMANCE_TEST_TIMEOUT s instead of stalling the run.
pytest_runtest_protocol = cellvm_conformance.pytest_runtest_protocol


def pytest_configure(config):
    os.environ.pop("E2B_DEBUG", None)  # E2B's tests skip some cases under it
    config.addinivalue_line("markers", "skip_debug: E2B's: skipped when E2B_DEBUG is set")
    # E2B's pytest.ini has pytest-timeout; Debian's pytest has not (our own timer above)
    config.addinivalue_line("markers", "timeout(seconds): E2B's pytest-timeout marker")


# What only a micro-VM has (pause and resume, fork, saved snapshots, a lifetime
# that ends): these tests' sandboxes are QEMU micro-VMs, restored from the
# template the VM tests share, as Sandbox.create() makes them without $CELLVM_ADDR.
IN_A_MICROVM = {(f"{side}/sandbox_{side}/{test}", name)
                for side in ("sync", "async")
                for test, name in (("test_fork.py", "(all)"), ("test_snapshot.py", "(all)"),
                                   ("test_snapshot_filesystem_only.py", "(all)"),
                                   ("test_snapshot_api.py", "(all)"), ("test_timeout.py", "test_shorten_timeout"),
                                   ("test_timeout.py", "test_get_timeout"))}


@pytest.fixture
def cellvm_agent(request, monkeypatch):
    """A dev-mode agent of this test's own, named by $CELLVM_ADDR; none for a
    test IN_A_MICROVM."""
    name = getattr(request.node, "originalname", None) or request.node.name
    if _row(IN_A_MICROVM, _rel_of(request.config, request.node.path), name):
        monkeypatch.delenv("CELLVM_ADDR", raising=False)
        yield None
        return
    yield from cellvm_conformance.agent_of_the_test(request, monkeypatch, image_user=True, preload="")


@pytest.fixture
def template():
    return "base"


@pytest.fixture
def sandbox_test_id():
    return f"test_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def debug():
    return False  # E2B_DEBUG is unset (pytest_configure)


@pytest.fixture
def sandbox_factory(request, cellvm_agent, template, sandbox_test_id):
    """E2B's: Sandbox.create(template, **kwargs), killed after the test."""
    from e2b import Sandbox

    def factory(*, template_name: str = template, **kwargs):
        kwargs.setdefault("metadata", {}).setdefault("sandbox_test_id", sandbox_test_id)
        sandbox = Sandbox.create(template_name, **kwargs)
        request.addfinalizer(sandbox.kill)
        return sandbox

    return factory


@pytest.fixture
def sandbox(sandbox_factory):
    return sandbox_factory()


@pytest.fixture
async def async_sandbox_factory(cellvm_agent, template, sandbox_test_id):
    """E2B's: AsyncSandbox.create(template, **kwargs), all killed after the test."""
    from e2b import AsyncSandbox

    sandboxes = []

    async def factory(*, template_name: str = template, **kwargs):
        kwargs.setdefault("metadata", {}).setdefault("sandbox_test_id", sandbox_test_id)
        sandbox = await AsyncSandbox.create(template_name, **kwargs)
        sandboxes.append(sandbox)
        return sandbox

    yield factory
    await asyncio.gather(*(s.kill() for s in sandboxes), return_exceptions=True)


@pytest.fixture
async def async_sandbox(async_sandbox_factory):
    return await async_sandbox_factory()


class Helpers:
    """E2B's: a command's non-zero exit fails the test."""

    @staticmethod
    def catch_cmd_exit_error_in_background(cmd):
        from e2b import CommandExitException

        disabled = False

        async def wait_for_exit():
            try:
                await cmd.wait()
            except CommandExitException as e:
                assert disabled, f"command failed with exit code {e.exit_code}: {e.stderr}"

        asyncio.create_task(wait_for_exit())

        def disable():
            nonlocal disabled
            disabled = True

        return disable

    @staticmethod
    def check_cmd_exit_error(cmd):
        from e2b import CommandExitException

        try:
            cmd.wait()
        except CommandExitException as e:
            raise AssertionError(f"command failed with exit code {e.exit_code}: {e.stderr}")


@pytest.fixture
def helpers():
    return Helpers


# --- the lists: tests/conformance/e2b_sdk/SKIPPED.md and KNOWN_FAILING.md ---

LISTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2b_sdk")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*(.+?)\s*\|\s*$")


def read_list(name):
    """{(file, test): reason} of a list's table; test "(all)" is every test of the file."""
    rows = {}
    with open(os.path.join(LISTS, name)) as f:
        for line in f:
            m = _ROW.match(line)
            if m:
                rows[(m.group(1), m.group(2))] = m.group(3)
    return rows


SKIPPED = read_list("SKIPPED.md")
KNOWN_FAILING = read_list("KNOWN_FAILING.md")


def _row(rows, rel, name):
    for key in ((rel, name), (rel, "(all)")):
        if key in rows:
            return key
    return None


class _ListedModule(pytest.Module):
    """A file SKIPPED.md lists whole: its tests, by name, skipped without
    importing it (some import E2B's API client or httpx, not here)."""

    def collect(self):
        reason = SKIPPED[(_rel_of(self.config, self.path), "(all)")]
        return [cellvm_conformance._OutOfScopeItem.from_parent(self, name=n, reason=reason, lineno=line)
                for n, line in cellvm_conformance._test_names(self.path)]


def _rel_of(config, path):
    return os.path.relpath(str(path), str(config.rootpath))


def pytest_pycollect_makemodule(module_path, parent):
    if (_rel_of(parent.config, module_path), "(all)") in SKIPPED:
        return _ListedModule.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: rows are judged against all tests
def pytest_collection_modifyitems(config, items):
    for item in items:
        rel = _rel_of(config, item.path)
        name = getattr(item, "originalname", None) or item.name
        key = _row(SKIPPED, rel, name)
        if key and not isinstance(item, cellvm_conformance._OutOfScopeItem):
            item.add_marker(pytest.mark.skip(reason=SKIPPED[key]))
        elif not key and _row(KNOWN_FAILING, rel, name):
            # strict: a test that passes again fails the run until its row goes
            item.add_marker(pytest.mark.xfail(reason=KNOWN_FAILING[_row(KNOWN_FAILING, rel, name)],
                                              strict=True))
    if not hasattr(config, "workerinput"):  # without xdist; with it, the controller judges
        _judge_rows(config, [item.nodeid for item in items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """(xdist's controller) The tests a worker collected: all of them."""
    _judge_rows(node.config, ids)


_STALE = []


def _judge_rows(config, ids):
    """A row is stale when its file is gone, or when its file was collected
    and no test of it matched (files left off the command line are not judged)."""
    tests = {(i.split("::")[0], i.split("::")[-1].split("[")[0]) for i in ids}
    files = {f for f, _ in tests}
    _STALE[:] = [f"{lst}: {f} | {t}" for lst, rows in (("SKIPPED.md", SKIPPED), ("KNOWN_FAILING.md", KNOWN_FAILING))
                 for f, t in rows
                 if not os.path.isfile(os.path.join(str(config.rootpath), f)) or
                 (f in files and t != "(all)" and (f, t) not in tests)]


def pytest_terminal_summary(terminalreporter):
    for row in _STALE:
        terminalreporter.write_line(f"STALE row, matches no test of E2B's: {row}", red=True)


def pytest_sessionfinish(session):
    if _STALE and not hasattr(session.config, "workerinput"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
