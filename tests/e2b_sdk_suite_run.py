"""Runs a directory of E2B's Python SDK tests (../shared/e2b_sdk, unchanged,
never copied here) against cellvm: pytest in a subprocess, in E2B's tests/
directory, with E2B's module names (client/python/compat) and a plugin of
tests/conformance (E2B's root conftest.py given by cellvm_sdk_suite.py).
tests/test_e2b_git_suite.py and tests/test_e2b_sandbox_suite.py use it."""

import os
import re
import subprocess

from e2b_source_api import ROOT, SHARED

# Resolved: pytest compares --confcutdir with conftest files' real paths, and
# ../shared may be a symbolic link (a CI clone's is).
E2B_TESTS = os.path.realpath(os.path.join(SHARED, "e2b-python-sdk", "tests"))


def run_e2b_tests(plugin, paths, confcutdir, workers=2, timeout=600):
    """(returncode, output, summary line) of pytest over `paths` (relative to
    E2B's tests/); conftest.py files above `confcutdir` are left out."""
    # E2B's defaults for its micro-VMs (cellvm_sdk_suite.IN_A_MICROVM): a
    # 300 s lifetime and a restore from the user's template, not the cold
    # boots and long lives tests/conftest.py gives cellvm's own suites.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "E2B_"))
           and k not in ("CELLVM_SNAPSHOT", "CELLVM_DEFAULT_TIMEOUT")}
    env["PYTHONPATH"] = os.pathsep.join(os.path.join(ROOT, p) for p in
                                        ("client/python", "client/python/compat", "tests/conformance"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing is written into E2B's directory
    # -c /dev/null and --confcutdir: neither E2B's pytest.ini nor its root
    # conftest.py (which imports E2B's API client); the plugin gives its
    # fixtures. asyncio_mode=auto is E2B's pytest.ini's.
    cmd = ["/usr/bin/python3", "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider",
           "-c", os.devnull, "--rootdir", E2B_TESTS, "--confcutdir", os.path.join(E2B_TESTS, confcutdir),
           "--import-mode=importlib", "-o", "asyncio_mode=auto", "-n", str(workers), "-q", "-rfEsx",
           *paths]
    r = subprocess.run(cmd, cwd=E2B_TESTS, env=env, capture_output=True, text=True, timeout=timeout)
    out = r.stdout + r.stderr
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed|skipped|xfailed).*) in [\d.]+s", out, re.M)
    return r.returncode, out, summary[-1] if summary else ""
