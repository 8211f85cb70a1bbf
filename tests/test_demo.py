"""README's first command: the sales-CSV chart example, end to end in dev mode."""

import os
import subprocess

from PIL import Image

from conftest import FIXTURES, ROOT

EXAMPLE = os.path.join(ROOT, "client", "python", "examples", "sales_chart.py")


def test_sales_example_writes_the_chart(tmp_path):
    out = tmp_path / "chart.png"
    r = subprocess.run(["/usr/bin/python3", EXAMPLE, "--csv", os.path.join(FIXTURES, "vendas.csv"),
                        "--out", str(out)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "612 sales, 6 products, 2026-01-01 to 2026-10-31" in r.stdout
    assert "Notebook    2624027.0" in r.stdout
    with Image.open(out) as im:
        assert im.format == "PNG"
        # figsize (10, 5.5) at 100 dpi, cropped to the tight bbox like ipykernel's inline backend
        assert 800 < im.width <= 1000 and 400 < im.height <= 550
        assert len(set(im.convert("RGB").getdata())) > 50  # lines, text, legend: not a blank canvas


def test_sales_example_reports_a_missing_agent_binary(tmp_path):
    r = subprocess.run(["/usr/bin/python3", EXAMPLE, "--build", str(tmp_path), "--out", str(tmp_path / "x.png")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "cellvm-agent not found" in r.stderr


def test_sales_example_in_a_micro_vm(tmp_path):
    """`make demo`'s run: Sandbox.create() boots build/image under QEMU, the CSV
    goes up with files.write, the chart comes back; no VM is left behind."""
    from conftest import IMAGE, build_image_or_skip, qemu_pids
    build_image_or_skip()
    out = tmp_path / "chart.png"
    before = qemu_pids()  # VMs of other tests (a session fixture's) are not ours
    r = subprocess.run(["/usr/bin/python3", EXAMPLE, "--vm", "--image", IMAGE, "--csv",
                        os.path.join(FIXTURES, "vendas.csv"), "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "612 sales, 6 products, 2026-01-01 to 2026-10-31" in r.stdout
    with Image.open(out) as im:
        assert im.format == "PNG" and 800 < im.width <= 1000
    assert qemu_pids() - before == set()
