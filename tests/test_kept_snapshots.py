"""The store of kept snapshots (E2B's snapshots API: client/c/kept_snapshots.c)
without a VM, through `cellvm list-snapshots` and `delete-snapshot`: which
references name a snapshot (its id or name, E2B's ":default" tag or none, one
"team/" namespace; a path or another tag names none), newest first, filters,
a record without snapshot.json is none, delete once. The records here are
stand-ins (snapshot.json only: listing reads nothing else); the saves and the
sandboxes made of them are tests/test_cli_fork.py's and
tests/test_serve_pause.py's."""

import fcntl
import json
import os
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.abspath(os.path.join(os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build")),
                                   "cellvm"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    if not os.path.exists(CLI):
        pytest.skip("build/cellvm is not built (make all)")
    root = tmp_path / "snapshots"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("CELLVM_SNAPSHOTS_DIR", str(root))

    def add(key, name, sandbox, created_ms, info=True):
        d = root / key
        d.mkdir(mode=0o700)
        if info:
            (d / "snapshot.json").write_text(json.dumps(
                {"name": name, "sandboxID": sandbox, "createdMs": created_ms}))
        return d
    return root, add


def cli(*args, rc=0):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == rc, (args, r.returncode, r.stdout, r.stderr)
    return r


def listed(*args):
    return [s["snapshotID"] for s in json.loads(cli("list-snapshots", "--json", *args).stdout)]


def test_references_filters_and_delete(store):
    root, add = store
    add("qemu-0000000a", "image", "qemu-11111111", 1000)
    plain = add("qemu-0000000b", "", "qemu-22222222", 2000)
    add("qemu-0000000c", "", "qemu-33333333", 3000, info=False)  # being made: none
    (root / "lock").write_text("")

    got = json.loads(cli("list-snapshots", "--json").stdout)
    assert got == [
        {"snapshotID": "qemu-0000000b:default", "names": [], "sandbox_id": "qemu-22222222",
         "key": "qemu-0000000b", "created_ms": 2000},
        {"snapshotID": "image:default", "names": ["image:default"],
         "sandbox_id": "qemu-11111111", "key": "qemu-0000000a", "created_ms": 1000}]
    for ref in ("image", "image:default", "team/image", "team/image:default", "qemu-0000000a"):
        assert listed("--name", ref) == ["image:default"], ref
    for ref in ("image:v2", "/x/image", "./image", "build/image/", "a/b/image", "../image",
                ".hidden/image", "", ":default", "nothing"):
        assert listed("--name", ref) == [], ref
    assert listed("--sandbox", "qemu-22222222") == ["qemu-0000000b:default"]
    assert listed("--sandbox", "qemu-99999999") == []
    assert "qemu-0000000b:default" in cli("list-snapshots").stdout

    assert cli("delete-snapshot", "qemu-0000000b:default").returncode == 0
    assert not plain.exists()
    assert "no such snapshot" in cli("delete-snapshot", "qemu-0000000b", rc=1).stderr
    assert cli("delete-snapshot", "/x/image", rc=1).returncode == 1
    assert cli("delete-snapshot", "team/image").returncode == 0
    assert listed() == []
    assert sorted(os.listdir(root)) == ["lock", "qemu-0000000c"]  # not a snapshot: left alone


def test_usage_and_help():
    if not os.path.exists(CLI):
        pytest.skip("build/cellvm is not built (make all)")
    for cmd in ("create-snapshot", "list-snapshots", "delete-snapshot"):
        out = cli(cmd, "--help").stdout
        assert out.startswith(f"usage: cellvm {cmd}"), out
    assert cli("create-snapshot", rc=2).returncode == 2
    assert "a bad --name" in cli("create-snapshot", "--name", "two words", "x", rc=2).stderr
    assert "a bad --name" in cli("create-snapshot", "--name", ".x", "x", rc=2).stderr
    assert cli("list-snapshots", "--bogus", rc=2).returncode == 2
    assert cli("delete-snapshot", rc=2).returncode == 2
    assert "create-snapshot" in cli("--help").stdout


def test_delete_waits_for_the_stores_lock(store):
    """A save under a name and a delete hold the store's lock (<root>/lock, a
    flock as the paused store's), so a name names one snapshot however many
    processes save under it at once: a delete waits while another holds it."""
    root, add = store
    kept = add("qemu-0000000d", "locked", "qemu-44444444", 4000)
    with open(root / "lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = subprocess.Popen([CLI, "delete-snapshot", "locked"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        assert p.poll() is None and kept.exists()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, (out, err)
    assert not kept.exists() and listed() == []
