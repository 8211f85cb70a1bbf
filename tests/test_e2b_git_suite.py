"""E2B's own tests of sandbox.git (tests/shared/git of E2B's Python SDK in
../shared/e2b_sdk, unchanged, never copied here) against cellvm: pytest in
a subprocess, in their directory, with E2B's module names
(client/python/compat) and the plugin tests/conformance/cellvm_git_suite.py
(a dev-mode agent per test). Every one of them must pass."""

import os
import re
import subprocess

import pytest

from e2b_source_api import ROOT, SHARED

GIT_TESTS = os.path.join(SHARED, "e2b-python-sdk", "tests", "shared", "git")

pytestmark = [
    # E2B's own suite: run by `make conformance` (tests/conformance/run-reference),
    # not by `make test` (tests/run).
    pytest.mark.reference,
    pytest.mark.skipif(not os.path.isdir(GIT_TESTS), reason="E2B's git tests are not at " + GIT_TESTS),
    # The plugin's namespaces (/home/user, a loopback of its own for E2B's git daemon) need root.
    pytest.mark.skipif(os.geteuid() != 0, reason="E2B's git tests run here as root only"),
]


def test_e2bs_git_tests_pass_against_cellvm():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "E2B_"))}
    env["PYTHONPATH"] = os.pathsep.join(os.path.join(ROOT, p) for p in
                                        ("client/python", "client/python/compat", "tests/conformance"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing is written into E2B's directory
    # -c /dev/null and --confcutdir: neither E2B's pytest.ini nor its root
    # conftest.py (which imports E2B's API client); two workers, as the tests
    # mostly wait (E2B's git daemon fixture sleeps a second).
    cmd = ["/usr/bin/python3", "-m", "pytest", "-p", "cellvm_git_suite", "-p", "no:cacheprovider",
           "-c", os.devnull, "--rootdir", GIT_TESTS, "--confcutdir", GIT_TESTS,
           "--import-mode=importlib", "-n", "2", "-q", "-rfEs", GIT_TESTS]
    r = subprocess.run(cmd, cwd=GIT_TESTS, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    summary = re.findall(r"^=*\s*(\d+ passed.*) in [\d.]+s", out, re.M)
    assert r.returncode == 0 and summary, out[-8000:]
    # Nothing but passes: no skip or xfail hides a test.
    assert re.fullmatch(r"\d+ passed(, \d+ warnings?)?", summary[-1]), out[-8000:]
    assert int(summary[-1].split()[0]) >= 31, out[-8000:]  # E2B 2.45.1 has 31
