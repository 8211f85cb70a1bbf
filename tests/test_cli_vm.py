"""`cellvm run` and `cellvm shell`: the C CLI boots the image under QEMU itself
(client/c/vmm.c), runs code over the virtio-serial channel, and leaves no
QEMU process or temp directory behind. One boot per test (~20 s under TCG)."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import build_image_or_skip, processes_mentioning  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.join(BUILD, "cellvm")
IMAGE = os.path.join(ROOT, "build", "image")


@pytest.fixture
def tmpdir_env(tmp_path):
    """A private TMPDIR, so 'no temp directory left' is checked exactly."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("CELLVM_ADDR", None)
    return tmp_path, env


def test_run_boots_runs_and_cleans_up(tmpdir_env):
    build_image_or_skip()
    tmp, env = tmpdir_env
    outdir = tmp / "out"
    outdir.mkdir()
    code = ("import os, matplotlib.pyplot as plt\n"
            "print(os.getuid(), os.environ['GREETING'])\n"
            "plt.plot([1, 2, 3]); plt.show()\n"
            "6 * 7")
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--memory", "1024", "-e", "GREETING=olá",
                        "-o", str(outdir), "--", code],
                       env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "1000 olá\n<Figure size 640x480 with 1 Axes>\n42\n"
    pngs = list(outdir.glob("cellvm-*.png"))
    assert len(pngs) == 1 and pngs[0].read_bytes().startswith(b"\x89PNG")
    assert glob.glob(str(tmp / "cellvm-qemu-*")) == []  # temp dir removed
    assert processes_mentioning(str(tmp)) == []  # and QEMU gone

    # An unknown VMM is a usage error, before anything starts (Firecracker and
    # Cloud Hypervisor: tests/test_c_hybrid_vmm.py).
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vmm", "bochs", "--", "1"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--vmm takes qemu, firecracker or cloud-hypervisor" in r.stderr


def test_shell_reads_cells_from_stdin(tmpdir_env):
    build_image_or_skip()
    tmp, env = tmpdir_env
    cells = ("x = 5\nprint('hi')\n\n"          # a blank line ends a cell
             "y = x * 2\ny\n;;\n"               # so does ';;'
             "1 / 0\n\n"                        # an error does not end the shell
             "def f():\n    return 3\n\nf()\n")  # EOF runs the last cell
    r = subprocess.run([CLI, "shell", "--image", IMAGE], input=cells, env=env,
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hi\n10\n3\n"
    assert "ZeroDivisionError: division by zero" in r.stderr
    assert glob.glob(str(tmp / "cellvm-qemu-*")) == []
    assert processes_mentioning(str(tmp)) == []
