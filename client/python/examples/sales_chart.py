#!/usr/bin/env python3
"""The sales-CSV chart example: in a micro-VM (--vm) or in dev mode.

Uploads a sales CSV into the sandbox (sandbox.files.write), runs pandas +
matplotlib there, and writes the chart the sandbox returns as a PNG file on
the host. The code sent is what an AI agent would generate; the host only
sees results.

  --vm [--image DIR]  boot the image (`make image`) in a QEMU micro-VM with
                      Sandbox.create(), and kill it at the end
  (default)           dev mode: start a cellvm-agent on a private Unix socket,
                      or use a running one with --connect ADDR
"""

import argparse
import base64
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import Sandbox  # noqa: E402

ANALYSIS = r"""
import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv("vendas.csv", parse_dates=["data"])
df["mes"] = df["data"].dt.to_period("M")
monthly = df.pivot_table(index="mes", columns="produto", values="valor", aggfunc="sum").fillna(0)
print(f"{len(df)} sales, {df['produto'].nunique()} products, "
      f"{df['data'].min():%Y-%m-%d} to {df['data'].max():%Y-%m-%d}")
print("Revenue by product (R$):")
print(df.groupby("produto")["valor"].sum().sort_values(ascending=False).round(2).to_string())

fig, ax = plt.subplots(figsize=(10, 5.5))
(monthly / 1000).plot(ax=ax, marker="o")
ax.set_title("Monthly revenue by product, 2026")
ax.set_xlabel("month")
ax.set_ylabel("revenue (thousand R$)")
ax.grid(True, alpha=0.3)
ax.legend(title="product", ncols=2, fontsize="small")
plt.show()
monthly.sum(axis=1).round(2)
"""


def start_agent(build_dir, tmpdir):
    agent = os.path.join(build_dir, "cellvm-agent")
    if not os.access(agent, os.X_OK):
        sys.exit(f"{agent} not found: run `make` first")
    sock = os.path.join(tmpdir, "agent.sock")
    work = os.path.join(tmpdir, "work")
    os.mkdir(work)
    # A root agent works on files as the sandbox user (uid 1000), who must be
    # able to reach the workdir below this private directory.
    os.chmod(tmpdir, 0o711)
    log = open(os.path.join(tmpdir, "agent.log"), "wb")
    proc = subprocess.Popen([agent, "--listen", "unix:" + sock, "--workdir", work],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.close()
            with open(log.name) as f:
                sys.exit("cellvm-agent did not start:\n" + f.read())
        time.sleep(0.01)
    return proc, "unix:" + sock


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=os.path.join(os.path.dirname(ROOT), "shared", "fixtures", "vendas.csv"),
                    help="sales CSV to upload (default: ../shared/fixtures/vendas.csv)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "demo", "sales_chart.png"),
                    help="where to write the chart PNG (default: build/demo/sales_chart.png)")
    ap.add_argument("--connect", metavar="ADDR", help="use a running agent (unix:PATH or tcp:127.0.0.1:PORT)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory with cellvm-agent")
    ap.add_argument("--vm", action="store_true", help="run in a micro-VM booted from --image (Sandbox.create)")
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"),
                    help="the guest image for --vm (default: build/image)")
    ap.add_argument("--memory-mb", type=int, default=1024, help="guest RAM for --vm (default 1024)")
    args = ap.parse_args()
    if args.vm and args.connect:
        ap.error("--vm and --connect are exclusive")

    with open(args.csv, "rb") as f:
        csv_bytes = f.read()

    tmpdir = tempfile.mkdtemp(prefix="cellvm-demo-")
    proc = None
    try:
        t0 = time.monotonic()
        if args.vm:
            sbx = Sandbox.create(args.image, memory_mb=args.memory_mb)
            print(f"micro-VM ready in {time.monotonic() - t0:.2f} s (QEMU pid {sbx.vmm_pid}, "
                  f"{sbx.vm.accel.upper()}); guest boot stages:")
            print("  " + str(sbx.boot_report).replace("\n", "\n  "))
        else:
            addr = args.connect
            if addr is None:
                proc, addr = start_agent(args.build, tmpdir)
            sbx = Sandbox.connect(addr)
        with sbx:  # leaving it kills the VM (--vm) or closes the connection
            t_upload = time.monotonic()
            info = sbx.files.write("vendas.csv", csv_bytes)
            print(f"uploaded {args.csv} ({len(csv_bytes)} bytes) to {info.path} "
                  f"in {(time.monotonic() - t_upload) * 1000:.0f} ms")
            execution = sbx.run_code(ANALYSIS, on_stdout=lambda m: print(getattr(m, "line", m), end=""))
            if execution.error:
                print("\n".join([execution.error.name + ": " + execution.error.value]), file=sys.stderr)
                sys.exit(1)
            pngs = [r for r in execution.results if r.png]
            if not pngs:
                sys.exit("the sandbox returned no chart")
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "wb") as f:
                f.write(base64.b64decode(pngs[0].png))
            print(f"monthly totals (R$):\n{execution.text}")
        print(f"chart written to {args.out} ({os.path.getsize(args.out)} bytes) in {time.monotonic() - t0:.2f} s"
              + (" in total (boot included, VM stopped)" if args.vm else ""))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    main()
