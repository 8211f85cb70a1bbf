"""The snapshot store without a VM (docs/SNAPSHOTS.md; tests/snapshot_format.py):
the manifest format a C reader must parse, the template name, what makes a
snapshot unusable, the directory locks."""

import fcntl
import os
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import snapshot_format as snapshot  # noqa: E402
from cellvm.launch import SNAPSHOT_ENV  # noqa: E402
from snapshot_format import Manifest, SnapshotError  # noqa: E402
from conftest import IMAGE  # noqa: E402


def sample(**kw):
    m = Manifest(kind="template", vmm="qemu", vmm_version="QEMU emulator version 7.2.22",
                 accel="tcg", memory_mb=1024, vcpus=1, image="/img", cmdline="console=ttyS0 a=b",
                 file=["kernel 10 20 /img/vmlinuz", "rootfs 30 40 /img/root fs.ext4"],
                 arg=["qemu-system-x86_64", "-m", "1024", "unix:@DIR@/qmp.sock,server=on"],
                 state="state", state_size=3, memory="memory", memory_size=4,
                 metadata={"k": "v"})
    for k, v in kw.items():
        setattr(m, k, v)
    return m


def test_manifest_text_round_trips_and_keeps_list_order():
    m = sample()
    text = m.to_text()
    assert text.startswith("cellvm-snapshot 1\nkind=template\n")
    assert "file=rootfs 30 40 /img/root fs.ext4\n" in text  # the path is the rest of the line
    assert "metadata={\"k\": \"v\"}\n" in text
    back = Manifest.from_text(text, "/x/manifest")
    assert back.arg == m.arg and back.file == m.file and back.memory_mb == 1024
    assert back.files() == {"kernel": "10 20 /img/vmlinuz", "rootfs": "30 40 /img/root fs.ext4"}
    assert back.metadata == {"k": "v"} and back.to_text() == text


def test_unknown_names_are_ignored_and_bad_manifests_name_the_file():
    text = sample().to_text() + "from_a_newer_writer=1\n"
    assert Manifest.from_text(text, "m").kind == "template"
    with pytest.raises(SnapshotError, match="/x/manifest: not a cellvm snapshot manifest"):
        Manifest.from_text("PK\x03\x04\n", "/x/manifest")
    with pytest.raises(SnapshotError, match="incomplete manifest: no kind, vmm"):
        Manifest.from_text("cellvm-snapshot 1\nstate=state\n", "m")
    with pytest.raises(SnapshotError, match="memory_mb is not a number"):
        Manifest.from_text("cellvm-snapshot 1\nkind=t\nvmm=q\nstate=s\nmemory_mb=lots\n", "m")
    with pytest.raises(SnapshotError, match="line without '='"):
        Manifest.from_text("cellvm-snapshot 1\nkind=t\ngarbage\n", "m")
    with pytest.raises(ValueError, match="line break"):
        sample(cmdline="a\nb").to_text()


def test_read_manifest_refuses_what_is_no_manifest(tmp_path):
    with pytest.raises(SnapshotError, match="not found: not a complete snapshot"):
        snapshot.read_manifest(str(tmp_path))
    (tmp_path / "manifest").write_bytes(b"\xff\xfe binary")
    with pytest.raises(SnapshotError, match="not UTF-8"):
        snapshot.read_manifest(str(tmp_path))
    (tmp_path / "manifest").write_bytes(b"x" * (snapshot.MAX_MANIFEST + 1))
    with pytest.raises(SnapshotError, match="larger than"):
        snapshot.read_manifest(str(tmp_path))


def test_the_template_name_is_fnv1a_64_of_the_launch():
    assert snapshot.fnv1a64(b"") == 0xcbf29ce484222325
    assert snapshot.fnv1a64(b"a") == 0xaf63dc4c8601ec8c  # the published test vectors
    assert snapshot.fnv1a64(b"foobar") == 0x85944171f73967e8
    assert snapshot.template_name("qemu", ["a", "b"]) == f"qemu-{snapshot.fnv1a64(b'a' + bytes(1) + b'b'):016x}"


def test_differences_say_what_changed():
    have = sample()
    assert snapshot.differences(have, sample()) == []
    d = snapshot.differences(have, sample(memory_mb=768, vmm_version="QEMU 8.0"))
    assert "vmm_version: snapshot has 'QEMU emulator version 7.2.22', now 'QEMU 8.0'" in d
    assert "memory_mb: snapshot has 1024, now 768" in d
    d = snapshot.differences(have, sample(file=["kernel 10 20 /img/vmlinuz", "rootfs 30 41 /img/root fs.ext4"]))
    assert d == ["rootfs file: snapshot was taken with '30 40 /img/root fs.ext4' (size mtime_ns "
                 "path), now '30 41 /img/root fs.ext4'"]
    d = snapshot.differences(have, sample(arg=have.arg[:-1] + ["unix:@DIR@/other.sock"]))
    assert d and d[0].startswith("the VMM's command line: ")


def test_the_hosts_tsc_frequency_is_compared_within_a_tolerance():
    """tsc_early_khz is this host's TSC frequency, measured anew per host boot
    (and per runtime directory) with a few kHz of noise: one template serves
    all such measurements, another host's gets its own (C: tsc_word.c)."""
    def with_tsc(khz, rest="ro quiet"):
        line = f"{rest} tsc_early_khz={khz}" if khz is not None else rest
        return sample(cmdline=line, arg=["qemu", "-append", line])
    have = with_tsc(2300001)
    assert snapshot.differences(have, with_tsc(2300003)) == []  # ~1 ppm: noise
    assert snapshot.differences(have, with_tsc(2300001 + 230)) == []  # 100 ppm: the line
    assert snapshot.differences(have, with_tsc(2323000)) == [
        "tsc_early_khz: snapshot has 2300001, this host's TSC is now 2323000 kHz "
        "(more than 100 ppm apart)"]
    assert snapshot.differences(have, with_tsc(2300001, "rw quiet"))[0].startswith("cmdline: ")
    assert snapshot.tsc_neutral("a tsc_early_khz=1\ttsc_early_khz=22 xtsc_early_khz=3 "
                                "tsc_early_khz=4x") == (
        "a tsc_early_khz=host\ttsc_early_khz=host xtsc_early_khz=3 tsc_early_khz=4x")
    name = snapshot.template_name("qemu", with_tsc(2300001).arg)
    assert snapshot.template_name("qemu", with_tsc(2300999).arg) == name
    assert snapshot.template_name("qemu", with_tsc(None).arg) != name


def test_a_launchs_template_does_not_change_with_the_tsc_measurement(monkeypatch):
    """Two processes that measured the TSC a few kHz apart look for the same
    template (`cellvm snapshot manifest`), and it fits both."""
    from conftest import CliLaunch
    image = os.path.join(ROOT, "build", "image")
    if not os.path.exists(os.path.join(image, "launch.txt")):
        pytest.skip("needs `make image`")
    monkeypatch.setenv("CELLVM_TSC_KHZ", "2300001")
    a = CliLaunch(image)
    monkeypatch.setenv("CELLVM_TSC_KHZ", "2300004")
    b = CliLaunch(image)
    assert "tsc_early_khz=2300001" in a.want.cmdline and "tsc_early_khz=2300004" in b.want.cmdline
    assert a.name == b.name and snapshot.differences(a.want, b.want) == []
    monkeypatch.setenv("CELLVM_TSC_KHZ", "2400000")
    c = CliLaunch(image)
    assert c.name == a.name and snapshot.differences(a.want, c.want) == [
        "tsc_early_khz: snapshot has 2300001, this host's TSC is now 2400000 kHz "
        "(more than 100 ppm apart)"]


def test_check_files_names_a_missing_or_truncated_file(tmp_path):
    m = sample()
    with pytest.raises(SnapshotError, match=f"{tmp_path}/state: No such file.*missing"):
        snapshot.check_files(m, str(tmp_path))
    (tmp_path / "state").write_bytes(b"abc")
    with pytest.raises(SnapshotError, match=f"{tmp_path}/memory: .*memory file is missing"):
        snapshot.check_files(m, str(tmp_path))
    (tmp_path / "memory").write_bytes(b"ab")
    with pytest.raises(SnapshotError, match="is 2 bytes, its manifest says 4: truncated"):
        snapshot.check_files(m, str(tmp_path))
    (tmp_path / "memory").write_bytes(b"abcd")
    snapshot.check_files(m, str(tmp_path))


def test_directories_others_can_write_are_refused(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.raises(SnapshotError, match="writable only by it"):
        snapshot.private_dir(str(d))
    assert oct(os.stat(snapshot.private_dir(str(tmp_path / "new" / "deep"))).st_mode & 0o777) == "0o700"


def publish_one(td, tag):
    d = td.new_snapshot_dir()
    with open(os.path.join(d, "manifest"), "w") as f:
        f.write(sample(generation=tag).to_text())
    return td.publish(d)


def test_publish_replaces_current_and_prune_spares_a_snapshot_in_use(tmp_path):
    td = snapshot.TemplateDir("qemu-0000000000000001", str(tmp_path))
    snapshot.private_dir(td.root)
    snapshot.private_dir(td.path)
    assert td.current() is None
    first = publish_one(td, 1)
    assert td.current() == first and os.path.islink(os.path.join(td.path, "current"))
    hold = threading.Event()
    release = threading.Event()

    def restorer():
        with snapshot.using(first):  # what a restore holds while its VMM reads the files
            hold.set()
            release.wait(10)

    t = threading.Thread(target=restorer)
    t.start()
    hold.wait(10)
    second = publish_one(td, 2)  # publish prunes: the first is in use, so it stays
    assert td.current() == second and os.path.isdir(first)
    release.set()
    t.join()
    third = publish_one(td, 3)
    assert sorted(os.listdir(td.path)) == sorted(["current", os.path.basename(third)])
    assert snapshot.read_manifest(td.current()).generation == 3


def test_a_current_link_that_points_elsewhere_is_refused(tmp_path):
    td = snapshot.TemplateDir("qemu-0000000000000002", str(tmp_path))
    snapshot.private_dir(td.root)
    snapshot.private_dir(td.path)
    os.symlink("/etc", os.path.join(td.path, "current"))
    with pytest.raises(SnapshotError, match="not a snapshot of this directory"):
        td.current()


def test_remove_unused_waits_for_no_restore(tmp_path):
    d = tmp_path / "t-1"
    d.mkdir()
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    assert snapshot.remove_unused(str(d)) is False and d.exists()
    os.close(fd)
    assert snapshot.remove_unused(str(d)) is True and not d.exists()


def test_cellvm_snapshot_is_the_clis_to_read(monkeypatch):
    """create(snapshot=None) leaves $CELLVM_SNAPSHOT to `cellvm create`: a
    bad value is E2B's InvalidArgumentException, nothing started."""
    from cellvm import Sandbox
    from cellvm.exceptions import InvalidArgumentException
    for bad in ("maybe", "2"):
        monkeypatch.setenv(SNAPSHOT_ENV, bad)
        with pytest.raises(InvalidArgumentException, match=r"\$CELLVM_SNAPSHOT=.*expected 0/off or 1/on"):
            Sandbox.create(IMAGE)


def test_paused_records_are_found_by_id_and_damaged_ones_reported(tmp_path, caplog):
    store = snapshot.PausedStore(str(tmp_path))
    d = tmp_path / "qemu-12345678"
    d.mkdir()
    (d / "manifest").write_text(sample(kind="paused", sandbox_id="unix:/tmp/x/agent.sock",
                                       registry_key="qemu-12345678").to_text())
    bad = tmp_path / "qemu-bad"
    bad.mkdir()
    (bad / "manifest").write_text("nonsense\n")
    assert store.find("unix:/tmp/x/agent.sock")[0] == str(d)
    assert store.find("qemu-12345678")[0] == str(d)
    assert store.find("nope") is None
    assert "qemu-bad" in caplog.text and "unreadable" in caplog.text
    with pytest.raises(ValueError):
        store.dir_of("../escape")
