#!/usr/bin/python3
"""Boot benchmark: QEMU micro-VM start -> agent ready -> first cell done.

    bench/boot.py [--image build/image] [--runs 3] [--accel auto|kvm|tcg|both] [--json]

For each run: boot the image cold with `cellvm create --json --no-snapshot`
(the C CLI's launch: QEMU, its channel, HELLO, the sandbox's clock and
deadline), then time the first EXECUTE
(the zygote's numpy/pandas/matplotlib preloads done, a context forked). The
guest's own per-stage report (CLOCK_BOOTTIME stamps of cellvm-init and the
agent, docs/INIT.md) is printed next to the host-side times; `executor_ready`
is read from a second HELLO once the first cell ran. `--accel both` measures
TCG and, where /dev/kvm works, KVM.
"""

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import _wire, host  # noqa: E402

# Guest stages, as differences of the HELLO's boot stamps (seconds).
STAGES = [
    ("kernel", None, "kernel_to_init"),
    ("init mounts", "init_start", "mounts_done"),
    ("modules", "mounts_done", "modules_loaded"),
    ("root mount", "modules_loaded", "root_mounted"),
    ("system setup", "root_mounted", "system_ready"),
    ("agent start", "system_ready", "agent_ready"),
    ("executor ready (preloads)", "agent_ready", "executor_ready"),
]


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_boot(image, memory_mb=1024, accel="auto", **vm_args):
    """Boots the image cold, runs a first cell, stops it. Host-side times (s)
    from the CLI's start: vmm_spawn (QEMU running, the registry entry's
    start), agent_ready (the CLI's create done: HELLO answered, clock and
    deadline set), first_cell; vmm_cpu, the VMM's CPU time up to the first
    cell's end; boot, the guest's stamps; accel, what the CLI chose
    ($CELLVM_ACCEL: kvm or tcg forces it)."""
    if accel == "auto":
        os.environ.pop("CELLVM_ACCEL", None)  # the CLI inherits it
    else:
        os.environ["CELLVM_ACCEL"] = accel
    opts = host.vm_args(image, memory_mb=memory_mb, snapshot=False, boot_timeout=300, **vm_args)
    wall0, t0 = time.time(), time.monotonic()
    info, conn = host.create(opts, timeout=3600)
    try:
        t_hello = time.monotonic() - t0
        for t, body in conn.request(_wire.EXECUTE, {"code": "1 + 1"}).messages(timeout=600):
            if t == _wire.ERROR:
                raise RuntimeError(f"first cell failed: {body}")
            if t == _wire.OK:
                break
        t_first = time.monotonic() - t0
        cpu = cpu_seconds(info["pid"])
        boot = dict(conn.hello.get("boot", {}))
        conn.close()
        # executor_ready is only known once the zygote is up: ask again.
        again = _wire.Connection.connect(info["address"], timeout=60)
        boot.update(again.hello.get("boot", {}))
        again.close()
    finally:
        host.kill(info["sandbox_id"])
    return {"vmm_spawn": info["started_ms"] / 1000 - wall0, "agent_ready": t_hello,
            "first_cell": t_first, "vmm_cpu": cpu, "boot": boot, "accel": info["accel"]}


def one_boot(image, accel, memory_mb):
    r = timed_boot(image, memory_mb=memory_mb, accel=accel)
    boot = r.pop("boot")
    guest = {}
    for name, a, b in STAGES:
        if b in boot and (a is None or a in boot):
            guest[name] = (boot[b] - (boot[a] if a else 0)) / 1e9
    r["guest"] = guest
    return r


def summarize(runs):
    med = statistics.median
    out = {k: med(r[k] for r in runs) for k in ("vmm_spawn", "agent_ready", "first_cell")}
    names = [n for n, _, _ in STAGES if all(n in r["guest"] for r in runs)]
    out["guest"] = {n: med(r["guest"][n] for r in runs) for n in names}
    return out


def print_table(accel, s, nruns):
    print(f"\n== {accel.upper()} (median of {nruns})")
    print(f"  host: QEMU spawned            {s['vmm_spawn'] * 1000:9.1f} ms")
    print(f"  host: agent ready (create)    {s['agent_ready'] * 1000:9.1f} ms")
    print(f"  host: first cell done         {s['first_cell'] * 1000:9.1f} ms")
    for name, secs in s["guest"].items():
        print(f"  guest: {name:<24} {secs * 1000:9.1f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--accel", default="both", choices=("auto", "kvm", "tcg", "both"))
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    results, accels = {}, []
    todo = ["auto"] if args.accel in ("both", "auto") else [args.accel]
    while todo:
        want = todo.pop(0)
        runs = []
        for i in range(args.runs):
            r = one_boot(args.image, want, args.memory_mb)
            runs.append(r)
            if not args.json:
                print(f"{r['accel']} run {i + 1}: agent ready {r['agent_ready']:.2f} s, "
                      f"first cell {r['first_cell']:.2f} s", flush=True)
        accel = runs[0]["accel"]
        accels.append(accel)
        results[accel] = {"runs": runs, "median": summarize(runs)}
        if args.accel == "both" and accel == "kvm":
            todo.append("tcg")  # KVM works here: TCG as well
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for accel in accels:
        print_table(accel, results[accel]["median"], args.runs)
    if "kvm" not in accels:
        print("\n(no usable KVM here: TCG only)")


if __name__ == "__main__":
    main()
