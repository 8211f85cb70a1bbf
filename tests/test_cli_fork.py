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


def test_snapshots_by_the_sdk_and_the_cli(vm_template, tmp_path, monkeypatch):
    """E2B's snapshots API in the SDK (`cellvm create-snapshot`,
    `list-snapshots`, `delete-snapshot`; Sandbox.create(snapshot_id) is
    `cellvm create --template`): the source runs on with its clock set; each
    sandbox made of a snapshot, after the source is gone, has the moment's
    variables and files, the create's metadata, an id and random numbers of
    its own; a name names the newest; a deleted one is gone."""
    store = tmp_path / "snapshots"
    monkeypatch.setenv("CELLVM_SNAPSHOTS_DIR", str(store))
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, metadata={"who": "snap-test"})
    sid = sbx.sandbox_id
    made = []
    try:
        sbx.run_code("import random, time\nx = 5")
        sbx.files.write("/tmp/kept.txt", "at the snapshot")
        info = sbx.create_snapshot(name="sdk-snap")
        assert (info.snapshot_id, info.names) == ("sdk-snap:default", ["sdk-snap:default"])
        plain = Sandbox.create_snapshot(sid)
        assert plain.names == [] and plain.snapshot_id.endswith(":default"), plain
        assert sbx.run_code("x + 1").text == "6"
        assert abs(float(sbx.run_code("time.time()").text) - time.time()) < 2
        ids = {info.snapshot_id, plain.snapshot_id}
        assert {s.snapshot_id for s in sbx.list_snapshots().next_items()} == ids
        pages = Sandbox.list_snapshots(limit=1)
        first = pages.next_items()
        assert len(first) == 1 and pages.has_next
        assert {s.snapshot_id for s in first + pages.next_items()} == ids and not pages.has_next
        assert [s.snapshot_id for s in Sandbox.list_snapshots(name="sdk-snap").next_items()] == \
            ["sdk-snap:default"]
        sbx.kill()

        # The second with E2B's onTimeout "pause", which its entry carries.
        for ref, lifecycle in ((info.snapshot_id, None),
                               (plain.snapshot_id, {"on_timeout": "pause"})):
            new = Sandbox.create(ref, metadata={"from": ref}, lifecycle=lifecycle)
            made.append(new)
            assert new.sandbox_id not in (sid, *(m.sandbox_id for m in made[:-1]))
            assert new.run_code("x").text == "5"
            assert new.files.read("/tmp/kept.txt") == "at the snapshot"
            assert new.get_info().metadata == {"from": ref}
            assert ps_state(new.sandbox_id) == "running"
            entry, = [e for e in json.loads(cli("ps", "--json").stdout)
                      if e["sandbox_id"] == new.sandbox_id]
            assert entry["on_timeout"] == ("pause" if lifecycle else "kill"), entry
        draws = {m.run_code("random.random()").text for m in made}
        assert len(draws) == 2, draws

        # The CLI: a name given again names the newest; delete, then none.
        again = json.loads(cli("create-snapshot", "--json", "--name", "sdk-snap",
                               made[0].sandbox_id).stdout)
        assert again == {"snapshotID": "sdk-snap:default", "names": ["sdk-snap:default"]}
        listed = json.loads(cli("list-snapshots", "--json").stdout)
        assert {s["sandbox_id"] for s in listed} == {sid, made[0].sandbox_id}, listed
        assert Sandbox.delete_snapshot(plain.snapshot_id) is True
        assert Sandbox.delete_snapshot(plain.snapshot_id) is False
        assert cli("delete-snapshot", "sdk-snap").returncode == 0
        assert json.loads(cli("list-snapshots", "--json").stdout) == []
        assert "no live sandbox" in cli("create-snapshot", "qemu-00000000", rc=1).stderr
        assert os.listdir(snapshot.paused_root()) == ["lock"]  # every copy resumed
    finally:
        for m in made:
            m.kill()
        Sandbox.kill(sid)
