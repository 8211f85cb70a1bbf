"""The guest image's artefacts (build/image), checked without booting it:
manifest, size budget, initramfs contents, the extracted vmlinux, and that a
changed agent rebuilds the rootfs without re-running mmdebstrap.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "image-build"))

import extract_vmlinux  # noqa: E402
from test_vm_qemu import IMAGE, build_image_or_skip  # noqa: E402

BUILD = os.path.join(ROOT, "build")
ROOTFS_BUDGET = 400 * 1000 * 1000  # "under 400 MB uncompressed" (issue 6)


@pytest.fixture(scope="module")
def image():
    build_image_or_skip()
    with open(os.path.join(IMAGE, "manifest.json")) as f:
        return json.load(f)


def read_cpio(path):
    """{name: (mode, data)} of a gzip'd newc archive."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    entries, pos = {}, 0
    while True:
        assert data[pos:pos + 6] == b"070701", f"bad cpio magic at {pos}"
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos = (pos + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, data[pos:pos + size])
        pos = (pos + size + 3) & ~3


def test_manifest(image):
    assert image["kernel"]["package"].startswith("linux-image-") and image["kernel"]["package"].endswith(
        "-cloud-amd64")
    assert image["kernel"]["release"] in image["kernel"]["package"]
    for name in ("vmlinuz", "vmlinux", "initramfs.cpio.gz", "rootfs.ext4"):
        assert image["files"][name]["size"] == os.path.getsize(os.path.join(IMAGE, name))
    for pkg in ("python3", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pil",
                "libpython3.11", "libcbor0.8", "libpng16-16"):
        assert image["packages"]["requested"][pkg], pkg
    cmd = image["cmdline"]
    assert "root=/dev/vda" in cmd["base"] and "console=ttyS0" in cmd["base"]
    assert cmd["tcg"] == "tsc_early_khz=2000000"
    assert set(cmd["vmm"]) == {"qemu", "firecracker", "cloud-hypervisor"}
    assert "virtio_mmio" in image["modules"]["load"]


def test_rootfs_is_under_budget_and_keeps_compilers_out(image):
    assert os.path.getsize(os.path.join(IMAGE, "rootfs.ext4")) < ROOTFS_BUDGET
    everything = image["packages"]["all"]
    for unwanted in ("gcc", "g++", "cpp", "libboost1.74-dev", "python3-scipy", "python3-pythran",
                     "python3-dev", "perl", "python3-tk", "libopenblas-dev"):
        assert unwanted not in everything, unwanted


def test_initramfs_has_init_modules_and_moddep(image):
    entries = read_cpio(os.path.join(IMAGE, "initramfs.cpio.gz"))
    with open(os.path.join(BUILD, "cellvm-init.stripped"), "rb") as f:
        assert entries["init"][1] == f.read()
    assert entries["init"][0] & 0o111
    assert entries["dev/console"][0] & 0o170000 == 0o020000  # a character device
    rel = image["kernel"]["release"]
    moddep = entries[f"lib/modules/{rel}/modules.dep"][1].decode()
    shipped = {os.path.basename(n).split(".ko")[0] for n in entries if n.endswith(".ko")}
    assert shipped == set(image["modules"]["files"])
    for m in image["modules"]["load"]:
        assert m in shipped or m.replace("_", "-") in shipped, m
    # modules.dep names exactly the shipped modules, with their dependencies
    dep_names = {os.path.basename(line.split(":")[0]).split(".ko")[0] for line in moddep.splitlines()}
    assert dep_names == shipped
    assert entries["etc/cellvm/modules"][1].decode().split() == image["modules"]["load"]


def test_vmlinux_is_the_bzimage_payload(image):
    with open(os.path.join(IMAGE, "vmlinuz"), "rb") as f:
        bz = f.read()
    with open(os.path.join(IMAGE, "vmlinux"), "rb") as f:
        elf = f.read()
    assert elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[18] == 62  # ELF64, x86-64
    assert extract_vmlinux.extract(bz) == elf
    assert image["kernel"]["release"].encode() in bz[:0x10000] or image["kernel"]["release"].encode() in elf


def test_extractor_rejects_what_is_not_a_bzimage():
    with pytest.raises(extract_vmlinux.ExtractError, match="not a bzImage"):
        extract_vmlinux.extract(b"\0" * 4096)


def test_lz4_block_decoder_handles_overlapping_matches():
    # literals "ab", then a match of 10 at distance 2 (overlapping), then "c".
    block = bytes([0x26]) + b"ab" + bytes([2, 0]) + bytes([0x10]) + b"c"
    out = bytearray()
    extract_vmlinux.lz4_block(block, out)
    assert bytes(out) == b"ab" + b"ab" * 5 + b"c"


def test_a_changed_agent_rebuilds_only_the_rootfs(image, tmp_path):
    """Incremental: from the cached base layer, a new agent costs a mkfs.ext4."""
    build = tmp_path / "build"
    build.mkdir()
    bins = ("cellvm-agent", "cellvm-executor", "cellvm-init.stripped")
    absent = [b for b in bins if not os.path.exists(os.path.join(BUILD, b))]
    if absent:  # only with CELLVM_SKIP_IMAGE_BUILD=1: `make image` builds them
        pytest.skip(f"build/{absent[0]} is missing")
    for b in bins:
        shutil.copy2(os.path.join(BUILD, b), build / b)
    cmd = [sys.executable, os.path.join(ROOT, "image-build", "build_image.py"), "--build", str(build),
           "--cache", os.path.join(BUILD, "image-cache"), "--out", str(tmp_path / "out")]
    first = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert first.returncode == 0, first.stdout
    assert "base: cached" in first.stdout and "mmdebstrap" not in first.stdout
    os.utime(build / "cellvm-agent")  # "a changed agent"
    second = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert second.returncode == 0, second.stdout
    assert "initramfs: up to date" in second.stdout
    assert "rootfs: mkfs.ext4" in second.stdout
    assert "mmdebstrap" not in second.stdout
    with open(tmp_path / "out" / "manifest.json") as f:
        assert json.load(f)["packages"] == image["packages"]
