"""`make snapshot` (docs/SNAPSHOTS.md, "Templates"): build/image's template
built ahead by `cellvm snapshot create` with real QEMU (~13-25 s under TCG)
in a private template root, then checked, listed, restored by
Sandbox.create() and removed with `cellvm snapshot`. The rest of `cellvm
snapshot` has its own tests (test_cli_snapshot*.py)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import registry_view  # noqa: E402
from cellvm import Sandbox, launch  # noqa: E402
import snapshot_format as snapshot  # noqa: E402
from conftest import IMAGE, build_image_or_skip  # noqa: E402

CLI = os.path.join(os.path.dirname(IMAGE), "cellvm")


def test_make_snapshot_builds_the_template_the_cli_checks_lists_and_removes(tmp_path, monkeypatch):
    build_image_or_skip()
    root = str(tmp_path / "templates")
    monkeypatch.setenv(snapshot.TEMPLATE_DIR_ENV, root)
    monkeypatch.setenv(registry_view.RUNTIME_ENV, str(tmp_path / "rt"))
    monkeypatch.setenv(launch.SNAPSHOT_ENV, "1")

    def cli(*args):
        r = subprocess.run([CLI, "snapshot", *args], capture_output=True, text=True, timeout=600)
        return r.returncode, r.stdout + r.stderr

    rc, out = cli("check", "--image", IMAGE)
    assert rc == 1 and "no template built yet" in out, out

    r = subprocess.run(["make", "-s", "-C", ROOT, "SAN=0", f"PYTHON={sys.executable}", "snapshot"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "built in" in r.stdout and root in r.stdout, r.stdout

    rc, out = cli("list")
    (line,) = [ln for ln in out.splitlines() if ln.startswith("qemu-")]
    assert f"qemu 1024 MiB 1 vCPU  {IMAGE}" in line and "damaged" not in line, out
    rc, out = cli("check", "--image", IMAGE)
    assert rc == 0 and "fits this launch" in out, out
    rc, out = cli("create", "--image", IMAGE)
    assert rc == 0 and "up to date" in out, out  # not built again
    rc, out = cli("check", "--image", IMAGE, "--memory-mb", "768")
    assert rc == 1 and "no template built yet" in out, out  # another launch, another template

    with Sandbox.create(IMAGE, memory_mb=1024) as sbx:  # restores what make built
        assert sbx.restore_report is not None
        assert sbx.run_code("6 * 7").text == "42"

    rc, out = cli("remove")
    assert rc == 2, out
    rc, out = cli("remove", "--all")
    assert rc == 0 and out.strip().endswith(": removed"), out
    rc, out = cli("list")
    assert rc == 0 and out.strip() == f"no templates in {root}", out
