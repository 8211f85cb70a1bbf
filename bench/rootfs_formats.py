#!/usr/bin/python3
"""Root filesystem formats: size and boot cost of rootfs.ext4 and of
rootfs.erofs uncompressed / lz4 / lz4hc, under the VM's accelerator.

    bench/rootfs_formats.py [--runs 3] [--formats ext4,none,lz4,lz4hc]

Builds one image per erofs compression with image-build/build_image.py
(--erofs-compression, into a temp dir; the cached base layer is reused),
then boots each format in turn (round-robin, so load changes on the shared
machine hit every format alike) and reports, median of the runs: the image
size, the guest's root mount stage, the agent's HELLO, the zygote's
numpy+pandas+matplotlib preloads (boot stamps agent_ready -> executor_ready:
the first imports, read from a cold page cache through the root filesystem),
and the CPU time QEMU used up to the first cell's end: on a shared machine
the wall times move with the load, the CPU time far less.

The disk is the CLI's --rootfs (its type read from the superblock, as the
manifest's rootfs format line says); the boot is bench/boot.py's timed_boot().
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from boot import timed_boot  # noqa: E402

BUILD = os.path.join(ROOT, "build")


def build(compression, out):
    t0 = time.monotonic()
    subprocess.run([sys.executable, os.path.join(ROOT, "image-build", "build_image.py"),
                    "--build", BUILD, "--cache", os.path.join(BUILD, "image-cache"),
                    "--out", out, "--erofs-compression", compression],
                   check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def one_boot(image, disk):
    r = timed_boot(image, memory_mb=1024, rootfs=disk)
    boot = r["boot"]
    return {"hello": r["agent_ready"], "cpu": r["vmm_cpu"],
            "root_mount": (boot["root_mounted"] - boot["modules_loaded"]) / 1e9,
            "preloads": (boot["executor_ready"] - boot["agent_ready"]) / 1e9}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="ext4,none,lz4,lz4hc",
                    help="ext4 and/or erofs compressions, comma-separated")
    args = ap.parse_args()
    formats = args.formats.split(",")
    tmp = tempfile.mkdtemp(prefix="cellvm-rootfs-formats-", dir="/var/tmp")
    try:
        variants = {}  # name -> (image dir, disk)
        for f in formats:
            comp = "lz4hc" if f == "ext4" else f
            out = os.path.join(tmp, comp)
            if not os.path.exists(out):
                secs = build(comp, out)
                print(f"built {comp}: {secs:.1f} s", flush=True)
            with open(os.path.join(out, "manifest.json")) as mf:
                fmt = json.load(mf)["rootfs"]["formats"]["ext4" if f == "ext4" else "erofs"]
            name = f if f == "ext4" else f"erofs {f}"
            variants[name] = (out, os.path.join(out, fmt["file"]))
        runs = {name: [] for name in variants}
        for i in range(args.runs):
            for name, (out, disk) in variants.items():
                r = one_boot(out, disk)
                runs[name].append(r)
                print(f"run {i + 1} {name:<12} hello {r['hello']:.2f} s, root mount "
                      f"{r['root_mount'] * 1000:.0f} ms, preloads {r['preloads']:.2f} s, "
                      f"QEMU CPU {r['cpu']:.2f} s", flush=True)
        med = statistics.median
        print(f"\nmedian of {args.runs}     size (MB)  root mount   HELLO  preloads  QEMU CPU")
        for name, (out, disk) in variants.items():
            rs = runs[name]
            print(f"{name:<16} {os.path.getsize(disk) / 1e6:9.1f} "
                  f"{med(r['root_mount'] for r in rs) * 1000:9.0f} ms "
                  f"{med(r['hello'] for r in rs):6.2f} s {med(r['preloads'] for r in rs):7.2f} s "
                  f"{med(r['cpu'] for r in rs):7.2f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
