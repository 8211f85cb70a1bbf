"""pytest plugin: E2B's own tests of sandbox.git (tests/shared/git of E2B's
Python SDK in ../shared/e2b_sdk, run unchanged with the conftest.py beside
them) against cellvm; tests/test_e2b_git_suite.py runs them with it.

E2B's root conftest.py is left out (--confcutdir); of it the git tests use
`sandbox_factory` and the `skip_debug` marker, given by cellvm_sdk_suite.py
(E2B's root fixtures for its sandbox suites). Each sandbox is a dev-mode
agent of its test's own (the sandbox user's home at /home/user when run as
root, so each test's global git config is its own), with a loopback of its
own for E2B's git daemon, without preloads: git needs commands only.
"""

import os

import pytest

import cellvm_conformance
from cellvm_sdk_suite import (debug, pytest_configure, pytest_runtest_protocol, sandbox_factory,
                              sandbox_test_id, template)

# E2B's fixtures and the hooks, for pytest to find here (not its lists: git has no skips)
__all__ = ["debug", "pytest_configure", "pytest_runtest_protocol", "sandbox_factory",
           "sandbox_test_id", "template", "pytest_unconfigure", "cellvm_agent"]


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
