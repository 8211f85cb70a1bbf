"""image-build/guest/fs-snapshot, the guest side of a filesystem-only pause
(docs/SNAPSHOTS.md), run on the host by Debian's Python against directories
standing in for the guest's: an overlayfs upper layer (whiteouts are the
character devices 0/0 overlayfs makes, an opaque directory has its
trusted.overlay.opaque xattr), /tmp, and the root of a fresh clone it is
applied to. Needs root (mknod, trusted.* xattrs, chown), as the tool has in
the guest. In a real guest: tests/test_serve_pause.py, tests/test_cli_pause.py.
"""

import io
import json
import os
import stat
import subprocess
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "image-build", "guest", "fs-snapshot")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mknod, trusted.* xattrs)")


def tool(*args, rc=0):
    r = subprocess.run(["/usr/bin/python3", "-I", TOOL, *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == rc, (args, r.returncode, r.stdout, r.stderr)
    return r


def write(path, data, mode=0o644, uid=0, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data)
    os.chown(path, uid, uid)
    os.chmod(path, mode)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def read(path):
    with open(path) as f:
        return f.read()


def test_pack_then_unpack_onto_a_fresh_root(tmp_path):
    # The fresh clone's root: the image's files, some of which the sandbox changed.
    root = str(tmp_path / "root")
    write(f"{root}/home/user/.bashrc", "image's bashrc")
    write(f"{root}/home/user/.cache/fontlist.json", "image's cache")
    write(f"{root}/etc/keep", "untouched")
    write(f"{root}/old/a", "image's a")
    write(f"{root}/home/user/was-file", "a file the sandbox made a directory")
    os.makedirs(f"{root}/tmp")

    # What the sandbox did, as overlayfs keeps it in the upper layer.
    upper = str(tmp_path / "upper")
    write(f"{upper}/home/user/kept.txt", "kept", mode=0o640, uid=1000, mtime=1_700_000_000)
    os.mknod(f"{upper}/home/user/.bashrc", stat.S_IFCHR | 0o000, os.makedev(0, 0))  # deleted
    write(f"{upper}/home/user/.cache", "a file where the image has a directory")
    os.symlink("kept.txt", f"{upper}/home/user/link")
    os.link(f"{upper}/home/user/kept.txt", f"{upper}/home/user/hard")
    os.mkfifo(f"{upper}/home/user/fifo")
    write(f"{upper}/home/user/was-file/inside", "now a directory")
    os.makedirs(f"{upper}/old")
    os.setxattr(f"{upper}/old", "trusted.overlay.opaque", b"y")  # rm -rf old; mkdir old
    write(f"{upper}/old/c", "new c")
    tmp = str(tmp_path / "tmp")
    write(f"{tmp}/t.txt", "in /tmp", uid=1000)

    archive = str(tmp_path / "fs.tar")
    tool("pack", archive, upper, tmp)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        meta = json.load(tar.extractfile(".cellvm-fs.json"))
    assert meta == {"deleted": ["home/user/.bashrc"], "opaque": ["old"]}, meta
    assert "home/user/.bashrc" not in names and "tmp/t.txt" in names, names

    tool("unpack", archive, root)
    assert not os.path.exists(archive)  # applied, then removed
    assert not os.path.lexists(f"{root}/home/user/.bashrc")
    assert read(f"{root}/home/user/.cache") == "a file where the image has a directory"
    st = os.stat(f"{root}/home/user/kept.txt")
    assert (read(f"{root}/home/user/kept.txt"), st.st_uid, stat.S_IMODE(st.st_mode),
            int(st.st_mtime)) == ("kept", 1000, 0o640, 1_700_000_000)
    assert os.readlink(f"{root}/home/user/link") == "kept.txt"
    assert os.stat(f"{root}/home/user/hard").st_ino == st.st_ino
    assert stat.S_ISFIFO(os.lstat(f"{root}/home/user/fifo").st_mode)
    assert read(f"{root}/home/user/was-file/inside") == "now a directory"
    assert sorted(os.listdir(f"{root}/old")) == ["c"]  # the image's `a` stays hidden
    assert read(f"{root}/etc/keep") == "untouched"
    assert read(f"{root}/tmp/t.txt") == "in /tmp" and os.stat(f"{root}/tmp/t.txt").st_uid == 1000
    assert not [n for n in os.listdir(f"{root}/home/user") if n.endswith(".cellvm-fs")]


def test_unpack_writes_nothing_outside_its_root(tmp_path):
    """The archive comes back from the host unchanged, but its names are the
    guest's: none may lead out of the root, through `..`, an absolute path,
    a hard link's target or a symlinked parent."""
    root = tmp_path / "root"
    os.makedirs(root / "home")
    os.symlink(str(tmp_path), root / "home" / "out")  # a link out, in the fresh root
    os.makedirs(tmp_path / "sub")
    archive = str(tmp_path / "evil.tar")
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in ("../escaped", "/abs-escaped", "home/out/via-link", "home/out/sub/deeper",
                     "home/ok"):
            data = b"x"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        hard = tarfile.TarInfo("home/hard")
        hard.type, hard.linkname = tarfile.LNKTYPE, "../../etc/passwd"
        tar.addfile(hard)
        meta = json.dumps({"deleted": ["..", "../victim", "/"], "opaque": [".."]}).encode()
        info = tarfile.TarInfo(".cellvm-fs.json")
        info.size = len(meta)
        tar.addfile(info, io.BytesIO(meta))
    (tmp_path / "victim").write_text("stays")
    tool("unpack", archive, str(root))
    assert (root / "home" / "ok").read_text() == "x"
    assert not (tmp_path / "escaped").exists() and not os.path.exists("/abs-escaped")
    assert not (tmp_path / "via-link").exists() and not (root / "home" / "hard").exists()
    assert os.listdir(tmp_path / "sub") == []
    assert (tmp_path / "victim").read_text() == "stays"


def test_usage_and_an_old_image(tmp_path):
    assert "usage" in tool("frobnicate", rc=1).stderr
    assert "usage" in tool("pack", rc=1).stderr
    err = tool("pack", str(tmp_path / "x.tar"), str(tmp_path / "no-upper"), str(tmp_path),
               rc=1).stderr
    assert "is missing (an image older than this pause)" in err
    assert not os.path.exists(tmp_path / "x.tar")
