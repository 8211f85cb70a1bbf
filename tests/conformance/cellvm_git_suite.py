"""pytest plugin: E2B's own tests of sandbox.git (tests/shared/git of E2B's
Python SDK in ../shared/e2b_sdk, run unchanged with the conftest.py beside
them) against cellvm; tests/test_e2b_git_suite.py runs them with it.

E2B's root conftest.py is left out (--confcutdir: it imports E2B's API
client, volumes and templates); of it the git tests use `sandbox_factory`
and the `skip_debug` marker, given here. Each sandbox is a dev-mode agent of
its test's own, as for the code-interpreter suite (cellvm_conformance.py:
the sandbox user's home at /home/user when run as root, so each test's
global git config is its own), without preloads: git needs commands only.
"""

import os

import pytest

import cellvm_conformance

# A hung test fails after $CELLVM_CONFORMANCE_TEST_TIMEOUT s instead of stalling the run.
pytest_runtest_protocol = cellvm_conformance.pytest_runtest_protocol


def pytest_configure(config):
    os.environ.pop("E2B_DEBUG", None)  # E2B's tests skip some cases under it
    config.addinivalue_line("markers", "skip_debug: E2B's: skipped when E2B_DEBUG is set")


def pytest_unconfigure(config):
    # E2B's fixtures remove their directories below /tmp/test-git (on the
    # host: the agents share its /tmp), not the folder itself.
    if not hasattr(config, "workerinput"):  # the controller, once the workers are done
        try:
            os.rmdir("/tmp/test-git")
        except OSError:
            pass  # not there, or in use by another run


@pytest.fixture
def cellvm_agent(request, monkeypatch):
    """A dev-mode agent of this test's own: $CELLVM_ADDR names it."""
    # loopback: E2B's git_daemon fixture serves the remote on 127.0.0.1.
    yield from cellvm_conformance.agent_of_the_test(request, monkeypatch, loopback=True, preload="")


@pytest.fixture
def sandbox_factory(request, cellvm_agent):
    """E2B's: Sandbox.create(template, **kwargs), killed after the test."""
    from e2b import Sandbox

    def factory(*, template_name: str = "base", **kwargs):
        sandbox = Sandbox.create(template_name, **kwargs)
        request.addfinalizer(sandbox.kill)
        return sandbox

    return factory
