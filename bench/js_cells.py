#!/usr/bin/python3
"""JavaScript in cellvm vs plain `node` started per cell, side by side, one run.

Starts its own cellvm-agent (build/cellvm-agent, no Python preloads) on a
temporary Unix socket, then times, as medians over --runs:
  - a `1 + 1` cell in a JavaScript context that exists (cellvm), against
    `node -e 'console.log(1 + 1)'` (a Node.js started for the cell, as a tool
    that runs each snippet with a fresh node does);
  - a new JavaScript context and its first `1 + 1` cell (cellvm, served by the
    zygote's warm Node.js spare), against the same `node -e`;
  - the same new context when no spare is ready (the spare used up a moment
    before: the executor starts Node.js for it), for what the spare saves.
Nothing is asserted: this is a measurement, not a test.

    /usr/bin/python3 bench/js_cells.py [--runs N] [--build DIR] [--node PATH]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import Sandbox  # noqa: E402

# Time the zygote needs to have its next Node.js spare ready (it starts one
# after each JavaScript context); generous for a loaded machine.
SPARE_SETTLE_S = 1.5


def start_agent(build):
    binary = os.path.join(build, "cellvm-agent")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} not found: run `make` first")
    os.environ["CELLVM_BUILD"] = build
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from conftest import AgentProcess
    return AgentProcess(preload="")


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def median_ms(samples):
    return statistics.median(samples) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--node", default=os.environ.get("CELLVM_NODE", "/usr/bin/node"))
    args = ap.parse_args()

    node_cell = [timed(lambda: subprocess.run([args.node, "-e", "console.log(1 + 1)"], check=True,
                                              stdout=subprocess.DEVNULL))
                 for _ in range(args.runs)]

    agent = start_agent(args.build)
    try:
        with Sandbox.connect(agent.addr) as sbx:
            # The first JavaScript context starts the default one (and the spare after it).
            assert sbx.run_code("1 + 1", language="js").text == "2"
            cell = []
            for _ in range(args.runs):
                t = timed(lambda: sbx.run_code("1 + 1", language="js"))
                cell.append(t)

            def new_context():
                c = sbx.create_code_context(language="js")
                ex = sbx.run_code("1 + 1", context=c)
                assert ex.text == "2", ex
                return c

            warm, cold = [], []
            for _ in range(args.runs):
                time.sleep(SPARE_SETTLE_S)
                t0 = time.perf_counter()
                c = new_context()
                warm.append(time.perf_counter() - t0)
                # Right away again: the spare is used up and still starting.
                t0 = time.perf_counter()
                c2 = new_context()
                cold.append(time.perf_counter() - t0)
                sbx.remove_code_context(c)
                sbx.remove_code_context(c2)
    finally:
        agent.stop()

    node_ms = median_ms(node_cell)
    rows = [
        ("`1 + 1` in an existing context", median_ms(cell), node_ms),
        ("new context + first `1 + 1` (warm spare)", median_ms(warm), node_ms),
        ("new context + first `1 + 1` (spare still starting)", median_ms(cold), node_ms),
    ]
    version = subprocess.run([args.node, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"node {version} ({args.node}), {args.runs} runs each, medians")
    print(f"{'case':<52} {'cellvm ms':>10} {'node -e ms':>11} {'ratio':>7}")
    for name, ours, theirs in rows:
        print(f"{name:<52} {ours:>10.1f} {theirs:>11.1f} {ours / theirs:>7.2f}")


if __name__ == "__main__":
    main()
