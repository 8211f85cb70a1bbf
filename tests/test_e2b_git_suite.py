"""E2B's own tests of sandbox.git (tests/shared/git of E2B's Python SDK in
../shared/e2b_sdk, unchanged, never copied here) against cellvm
(e2b_sdk_suite_run.py), with the plugin tests/conformance/cellvm_git_suite.py
(a dev-mode agent per test). Every one of them must pass."""

import os
import re

import pytest

from e2b_sdk_suite_run import E2B_TESTS, run_e2b_tests

GIT = "shared/git"

pytestmark = [
    # E2B's own suite: run by `make conformance` (tests/conformance/run-reference),
    # not by `make test` (tests/run).
    pytest.mark.reference,
    pytest.mark.skipif(not os.path.isdir(os.path.join(E2B_TESTS, GIT)),
                       reason="E2B's git tests are not at " + os.path.join(E2B_TESTS, GIT)),
    # The plugin's namespaces (/home/user, a loopback of its own for E2B's git daemon) need root.
    pytest.mark.skipif(os.geteuid() != 0, reason="E2B's git tests run here as root only"),
]


def test_e2bs_git_tests_pass_against_cellvm():
    # Two workers, as the tests mostly wait (E2B's git daemon fixture sleeps a second).
    rc, out, summary = run_e2b_tests("cellvm_git_suite", [GIT], GIT)
    assert rc == 0 and summary, out[-8000:]
    # Nothing but passes: no skip or xfail hides a test.
    assert re.fullmatch(r"\d+ passed(, \d+ warnings?)?", summary), out[-8000:]
    assert int(summary.split()[0]) >= 31, out[-8000:]  # E2B 2.45.1 has 31
