"""--workdir: a missing directory is created, a file is a clear error."""

import os
import subprocess
import time

from conftest import AGENT, AgentProcess


def test_missing_workdir_is_created(tmp_path):
    work = str(tmp_path / "new" / "nested")
    a = AgentProcess("--workdir", work, preload="")  # the last --workdir wins
    try:
        assert os.path.isdir(work)
        # The socket listens before the agent's setup ends with its "ready" line.
        deadline = time.monotonic() + 10
        while "ready:" not in a.read_log() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert f"workdir {work}" in a.read_log()
    finally:
        a.stop()


def test_workdir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "plain"
    f.write_text("x")
    r = subprocess.run([AGENT, "--listen", f"unix:{tmp_path}/a.sock", "--workdir", str(f),
                        "--preload", ""], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert f"--workdir {f}: Not a directory" in r.stderr
