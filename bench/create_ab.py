#!/usr/bin/env python3
"""A/B of the Python SDK's Sandbox.create() from a template between two
checkouts (issue 22: the SDK gets its sandboxes from `cellvm create --json`).

    /usr/bin/python3 bench/create_ab.py A=/work/main B=/work/wt-onelife [--rounds 5] [--per-round 3]

Each side uses its own checkout's client/python, build/image and build/cellvm.
The template of each side is built once first (not measured). Then rounds
alternate the sides; every round starts one child per side that times
`per_round` creates (create() returned, then a first cell `1 + 1`), each
killed before the next. Prints the median and range per side and stage.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1] + "/client/python")
from cellvm import Sandbox
out = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    sbx = Sandbox.create()
    t1 = time.perf_counter()
    sbx.run_code("1 + 1")
    t2 = time.perf_counter()
    sbx.kill()
    out.append({"create": t1 - t0, "first_cell": t2 - t1})
print(json.dumps(out))
"""


def child(checkout, n):
    env = dict(os.environ, CELLVM_IMAGE=os.path.join(checkout, "build/image"),
               CELLVM_BIN=os.path.join(checkout, "build/cellvm"))
    r = subprocess.run([sys.executable, "-c", CHILD, checkout, str(n)], env=env,
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{checkout}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sides", nargs=2, help="NAME=CHECKOUT")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=3)
    a = ap.parse_args()
    sides = [s.split("=", 1) for s in a.sides]
    for name, path in sides:  # builds each side's template (not measured)
        child(path, 1)
    times = {name: [] for name, _ in sides}
    for r in range(a.rounds):
        for name, path in (sides if r % 2 == 0 else sides[::-1]):
            times[name].extend(child(path, a.per_round))
    for stage in ("create", "first_cell"):
        for name, _ in sides:
            v = [t[stage] * 1000 for t in times[name]]
            print(f"{stage:10s} {name}: median {statistics.median(v):7.1f} ms  "
                  f"(min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")


if __name__ == "__main__":
    main()
