#!/usr/bin/python3
"""JavaScript/TypeScript contexts in the booted micro-VM (QEMU, TCG here): what
a first cell, a new context with and without a warm Node.js spare, and a
TypeScript context cost, against `node -e` run as a command in the same guest.
One boot, one sample each (the VM is slow and the machine shared: read the
figures as orders of magnitude). Nothing is asserted.

    /usr/bin/python3 bench/js_vm.py [--image build/image]
"""

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import Sandbox  # noqa: E402

# Time for the zygote's next Node.js spare to be ready under TCG.
SPARE_SETTLE_S = 10


def timed(fn):
    t0 = time.monotonic()
    r = fn()
    return time.monotonic() - t0, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"))
    args = ap.parse_args()
    d, s = timed(lambda: Sandbox.create(args.image, timeout=300, request_timeout=120))
    rows = [("Sandbox.create()", d)]
    try:
        d, _ = timed(lambda: s.run_code("1 + 1", language="js", timeout=120))
        rows.append(("first JavaScript cell (Node.js started for it)", d))
        cells = [timed(lambda: s.run_code("1 + 1", language="js"))[0] for _ in range(10)]
        rows.append(("`1 + 1` in that context (median of 10)", statistics.median(cells)))
        time.sleep(SPARE_SETTLE_S)
        d, _ = timed(lambda: s.run_code("1 + 1", context=s.create_code_context(language="js")))
        rows.append(("new JavaScript context + `1 + 1` (warm spare)", d))
        d, _ = timed(lambda: s.run_code("1 + 1", context=s.create_code_context(language="js")))
        rows.append(("the same at once again (spare still starting)", d))
        time.sleep(SPARE_SETTLE_S)
        d, _ = timed(lambda: s.run_code("const a: number = 1; a", language="ts", timeout=120))
        rows.append(("first TypeScript cell (loads TypeScript's compiler)", d))
        time.sleep(SPARE_SETTLE_S)
        c = s.create_code_context(language="ts")
        d, _ = timed(lambda: s.run_code("const b: number = 2; b", context=c, timeout=120))
        rows.append(("new TypeScript context + cell (spare with TypeScript)", d))
        d, _ = timed(lambda: s.commands.run("node -e 'console.log(1 + 1)'", timeout=300))
        rows.append(("`node -e 'console.log(1 + 1)'` as a command", d))
    finally:
        s.kill()
    for name, sec in rows:
        print(f"{name:<56} {sec * 1000:>9.0f} ms")


if __name__ == "__main__":
    main()
