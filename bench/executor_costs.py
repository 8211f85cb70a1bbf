#!/usr/bin/python3
"""Three small costs of the executor, each beside a reference taken in the
same run (these were timed assertions in tests once; they are targets, so
they live here):

- interrupt: SIGINT to a busy cell until its KeyboardInterrupt ends it, in
  cellvm's executor (driven as the agent drives it) and in ipykernel
  (jupyter_client's interrupt_kernel, until execute_reply). Target: at most
  100 ms, and not slower than ipykernel.
- chart: E2B's chart data (cellvm_charts.figure_chart) of a 1000-point line
  plot, beside rendering the same figure to PNG (what every plot pays).
  Target: at most 2 ms.
- pretty: importing python-embed/cellvm_pretty.py from bytecode in a fresh
  interpreter, beside importing the stdlib's json there. Target: at most 2 ms.

Nothing is asserted: this is a measurement, not a test.

    /usr/bin/python3 bench/executor_costs.py [--runs N] [--build DIR]
"""

import argparse
import importlib.util
import io
import os
import py_compile
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMBED = os.path.join(ROOT, "python-embed")
CELLS = {"sleep": "import time\ntime.sleep(100)", "busy loop": "while True:\n    pass"}


def interrupt_after(delay, send):
    """Calls send() `delay` s from now on a thread; returns (thread, when)."""
    when = {}

    def fire():
        time.sleep(delay)
        when["t"] = time.monotonic()
        send()

    t = threading.Thread(target=fire)
    t.start()
    return t, when


def cellvm_interrupts(build, runs):
    os.environ["CELLVM_BUILD"] = build
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_executor_harness import Zygote

    z = Zygote()
    try:
        ex = z.spawn()
        out = {}
        for name, code in CELLS.items():
            samples = []
            for _ in range(runs):
                rid = ex.start("print('started', flush=True)\n" + code)
                t, when = interrupt_after(0.2, lambda: os.kill(ex.pid, signal.SIGINT))
                r = ex.collect(rid, timeout=30)
                samples.append(time.monotonic() - when["t"])
                t.join()
                if (r.error or {}).get("name") != "KeyboardInterrupt":
                    raise RuntimeError(f"cellvm: {name}: no KeyboardInterrupt: {r.error}")
            out[name] = statistics.median(samples)
        return out
    finally:
        z.close()


def ipykernel_interrupts(runs):
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3",
                              env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))
    try:
        kc.execute_interactive("1+1", timeout=60, output_hook=lambda m: None)
        out = {}
        for name, code in CELLS.items():
            samples = []
            for _ in range(runs):
                t, when = interrupt_after(0.2, km.interrupt_kernel)
                reply = kc.execute_interactive(code, timeout=30, output_hook=lambda m: None)
                samples.append(time.monotonic() - when["t"])
                t.join()
                if reply["content"].get("ename") != "KeyboardInterrupt":
                    raise RuntimeError(f"ipykernel: {name}: {reply['content']}")
            out[name] = statistics.median(samples)
        return out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def best(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def chart_costs(runs):
    sys.path.insert(0, EMBED)
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import cellvm_charts

    fig, ax = plt.subplots()
    ax.plot(np.linspace(0, 1, 1000), np.random.default_rng(1).random(1000))
    fig.canvas.draw()
    try:
        points = len(cellvm_charts.figure_chart(fig)["elements"][0]["points"])
        if points != 1000:
            raise RuntimeError(f"the chart has {points} points, not 1000")
        extract = best(lambda: cellvm_charts.figure_chart(fig), runs * 3)
        png = best(lambda: fig.savefig(io.BytesIO(), format="png"), runs)
    finally:
        plt.close(fig)
    return extract, png


IMPORT = ("import sys, time; sys.modules['IPython'] = None; sys.path.insert(0, %r)\n"
          "t = time.perf_counter(); import %s; print(time.perf_counter() - t)")


def import_costs(runs):
    with tempfile.TemporaryDirectory() as tmp:
        module = os.path.join(tmp, "cellvm_pretty.py")
        shutil.copy(os.path.join(EMBED, "cellvm_pretty.py"), module)
        py_compile.compile(module, cfile=importlib.util.cache_from_source(module), doraise=True)

        def timed(name):
            return min(float(subprocess.run([sys.executable, "-c", IMPORT % (tmp, name)],
                                            capture_output=True, text=True, check=True,
                                            timeout=60).stdout)
                       for _ in range(runs))

        return timed("cellvm_pretty"), timed("json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="runs per case")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="directory with cellvm-executor")
    args = ap.parse_args()
    runs = max(1, args.runs)

    ours, theirs = cellvm_interrupts(args.build, runs), ipykernel_interrupts(runs)
    extract, png = chart_costs(runs)
    pretty, json_ = import_costs(runs)

    print(f"executor costs ({runs} runs; interrupts: medians; chart and imports: best)")
    print(f"{'case':<36} {'cellvm':>10} {'reference':>22} {'target':>9}  met")
    for name in CELLS:
        a, b = ours[name], theirs[name]
        print(f"{'interrupt, ' + name:<36} {a * 1000:8.1f}ms {b * 1000:8.1f}ms ipykernel"
              f"    ≤100ms  {'yes' if a <= 0.1 and a <= b else 'NO'}")
    print(f"{'chart data, 1000-point line':<36} {extract * 1000:8.2f}ms {png * 1000:8.1f}ms PNG render"
          f"   ≤2ms  {'yes' if extract <= 0.002 else 'NO'}")
    print(f"{'import cellvm_pretty (bytecode)':<36} {pretty * 1000:8.2f}ms {json_ * 1000:8.2f}ms import json"
          f"   ≤2ms  {'yes' if pretty <= 0.002 else 'NO'}")


if __name__ == "__main__":
    main()
