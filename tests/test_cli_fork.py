"""E2B's fork through the Python SDK (`cellvm fork --json --paused`, then each
fork resumed as a copy: cellvm/fork.py) and `cellvm fork` itself
(client/c/cli_fork.c), with real QEMU restoring the real image's template
(docs/SNAPSHOTS.md, "Fork"). Registry and paused store private to each test,
as in tests/test_cli_pause.py, whose helpers it uses."""

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_cli_pause import cli, private_state, ps_state  # noqa: E402,F401 (autouse fixture)
from cellvm import InvalidArgumentException, Sandbox  # noqa: E402
import snapshot_format as snapshot  # noqa: E402
from conftest import IMAGE, SNAPSHOT_MEMORY_MB  # noqa: E402


def test_fork_by_the_sdk_and_the_cli(vm_template):
    """E2B's fork() in the SDK (`cellvm fork --json --paused`, then each fork
    resumed as a copy) and `cellvm fork`: the source runs on with its state
    and this host's clock; each fork has the variables, files, envs and
    metadata of the moment, an id, E2B_SANDBOX_ID and random numbers of its
    own, and a life of its own."""
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, metadata={"who": "fork-test"},
                         envs={"FROM": "source"})
    sid = sbx.sandbox_id
    forks = []
    try:
        sbx.run_code("import random, time\nx = 41")
        sbx.files.write("/tmp/kept.txt", "before fork")
        with pytest.raises(InvalidArgumentException):
            sbx.fork(count=0)
        forks = sbx.fork(count=2, timeout=120)
        assert len(forks) == 2 and all(isinstance(f, Sandbox) for f in forks), forks
        ids = {f.sandbox_id for f in forks}
        assert len(ids) == 2 and sid not in ids, ids

        assert sbx.run_code("x + 1").text == "42"
        assert abs(float(sbx.run_code("time.time()").text) - time.time()) < 2
        for f in forks:
            assert f.is_running() and ps_state(f.sandbox_id) == "running"
            assert f.run_code("x").text == "41"
            assert abs(float(f.run_code("time.time()").text) - time.time()) < 2
            assert f.files.read("/tmp/kept.txt") == "before fork"
            r = f.commands.run("echo $FROM $E2B_SANDBOX_ID")
            assert r.stdout.split() == ["source", f.sandbox_id], r.stdout
            assert f.get_info().metadata == {"who": "fork-test"}
            assert 100 < (f.get_info().end_at.timestamp() - time.time()) <= 120
        forks[0].files.write("/tmp/kept.txt", "in fork 0")
        forks[0].run_code("x = 0")
        assert sbx.files.read("/tmp/kept.txt") == "before fork"
        assert forks[1].files.read("/tmp/kept.txt") == "before fork"
        assert sbx.run_code("x").text == "41"
        draws = {s.run_code("random.random()").text for s in (sbx, *forks)}
        assert len(draws) == 3, draws

        # By the CLI once the SDK let go of it (the CLI sets its clock then).
        sbx.close()
        out = cli("fork", "--json", "--timeout", "60", sid).stdout.splitlines()
        assert len(out) == 1, out
        entry = json.loads(out[0])
        assert entry["sandbox_id"] not in ids | {sid} and ps_state(entry["sandbox_id"]) == "running"
        cli("kill", entry["sandbox_id"])
        assert "no live sandbox" in cli("fork", "qemu-00000000", rc=1).stderr
        assert cli("fork", "--count", "0", sid, rc=2).returncode == 2
        assert os.listdir(snapshot.paused_root()) == ["lock"]  # every record consumed
    finally:
        for f in forks:
            if isinstance(f, Sandbox):
                f.kill()
        Sandbox.kill(sid)
