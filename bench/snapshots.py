#!/usr/bin/python3
"""Template snapshots (issue 11): cold create() + first cell against a
restore from a template + first cell, in one run; taking a template; and
density (host memory of clones against a cold-booted VM).

    bench/snapshots.py [--image build/image] [--runs 5] [--clones 10] [--json FILE]

1. A template of the image is built into a private template root
   (`cellvm snapshot create`: boot, preloads, SNAPSHOT_PREPARE, save): its
   time, the device-state size, the memory file's size and what of it is
   allocated.
2. `--runs` pairs, interleaved (cold, restore, cold, ...) so that both see the
   same load: Sandbox.create(snapshot=False) vs Sandbox.create() from the
   template, each followed by the same first cell
   (`import numpy, pandas, matplotlib; 1 + 1`). Medians; the restore's stages
   (sbx.restore_report: spawn, state loaded, running, HELLO, NEW_GENERATION,
   SET_DEADLINE); what QEMU did for each first cell (new TCG translation
   blocks from `info jit`, host minor faults, CPU seconds), and two cells
   more in the same clone (the same cell again, `1 + 1` as a new context's
   first cell) that show what the first cell pays.
3. `--clones` clones alive at once, each after its first cell and 5 s idle:
   the PSS of each QEMU (/proc/PID/smaps_rollup: shared pages divided among
   the processes mapping them, so the clones' shared template pages count a
   tenth each) against the PSS of one cold-booted VM after the same cell.

Nothing is left: every VM is killed, the template root removed.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

FIRST_CELL = "import numpy, pandas, matplotlib; 1 + 1"


def rollup(pid):
    """{field: kB} of /proc/PID/smaps_rollup (Pss, Rss, Private_Dirty, ...)."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def qmp_hmp(path, command):
    """The output of HMP `command` over QMP socket `path` (the VM's qmp.sock)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(path)
        f = s.makefile("rwb")
        json.loads(f.readline())  # the greeting
        for cmd in ({"execute": "qmp_capabilities"},
                    {"execute": "human-monitor-command", "arguments": {"command-line": command}}):
            f.write(json.dumps(cmd).encode() + b"\n")
            f.flush()
            while True:
                reply = json.loads(f.readline())
                if "return" in reply or "error" in reply:
                    break  # events in between are skipped
        if "error" in reply:
            raise RuntimeError(f"qmp {command}: {reply['error']}")
        return reply["return"]


def qemu_counters(vm):
    """(TCG translation blocks so far, minor faults, CPU seconds) of a QEMU
    VM: `info jit` over its QMP socket, /proc/PID/stat."""
    import re
    out = qmp_hmp(os.path.join(vm.dir, "qmp.sock"), "info jit")
    m = re.search(r"TB count\s+(\d+)", out)
    with open(f"/proc/{vm.pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(m.group(1)) if m else -1, int(st[7]),
            (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK"))


def first_cell(sbx, counters=None):
    """The first cell's duration; with `counters` (a dict), what QEMU did for
    it: new TCG blocks, host minor faults, CPU seconds."""
    before = qemu_counters(sbx.vm) if counters is not None else None
    t = time.monotonic()
    ex = sbx.run_code(FIRST_CELL, timeout=600)
    took = time.monotonic() - t
    if ex.text != "2":
        raise RuntimeError(f"first cell: {ex}")
    if counters is not None:
        after = qemu_counters(sbx.vm)
        counters.update(new_tbs=after[0] - before[0], minor_faults=after[1] - before[1],
                        qemu_cpu_s=after[2] - before[2])
    return took


def cold_run(Sandbox, image, memory_mb):
    t0 = time.monotonic()
    sbx = Sandbox.create(image, memory_mb=memory_mb, snapshot=False, boot_timeout=600)
    created = time.monotonic() - t0
    counters = {}
    cell = first_cell(sbx, counters)
    return sbx, {"create_s": created, "first_cell_s": cell, "total_s": created + cell,
                 "first_cell_qemu": counters, "boot": sbx.boot_report.as_dict()}


def restore_run(Sandbox, image, memory_mb, extra=False):
    t0 = time.monotonic()
    sbx = Sandbox.create(image, memory_mb=memory_mb, snapshot=True)
    created = time.monotonic() - t0
    counters = {}
    cell = first_cell(sbx, counters)
    r = {"create_s": created, "first_cell_s": cell, "total_s": created + cell,
         "first_cell_qemu": counters, "stages": sbx.restore_report.as_dict(),
         "spawn_to_first_cell_s": sbx.restore_report.total + cell}
    if extra:
        t = time.monotonic()
        sbx.run_code(FIRST_CELL)
        r["second_cell_s"] = time.monotonic() - t  # the same cell again
        ctx = sbx.create_code_context()
        t = time.monotonic()
        sbx.run_code("1 + 1", context=ctx)
        r["new_context_first_cell_s"] = time.monotonic() - t
    return sbx, r


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--clones", type=int, default=10)
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--json", help="write the results there too")
    args = ap.parse_args()

    root = tempfile.mkdtemp(prefix="cellvm-bench-tpl-", dir="/tmp")
    rt = tempfile.mkdtemp(prefix="cellvm-bench-rt-", dir="/tmp")
    paused = tempfile.mkdtemp(prefix="cellvm-bench-paused-", dir="/tmp")
    os.environ["CELLVM_TEMPLATE_DIR"] = root
    os.environ["CELLVM_RUNTIME_DIR"] = rt
    os.environ["CELLVM_PAUSED_DIR"] = paused
    os.environ.setdefault("CELLVM_MAX_SANDBOXES", str(args.clones + 5))
    from cellvm import Sandbox
    import logging
    logging.getLogger("cellvm").setLevel(logging.ERROR)  # the build's own warnings
    live = []
    res = {"image": args.image, "runs": args.runs, "clones": args.clones,
           "load_before": os.getloadavg()}
    try:
        # 1. The template.
        cli = os.path.join(os.path.dirname(os.path.abspath(args.image)), "cellvm")
        t = time.monotonic()
        r = subprocess.run([cli, "snapshot", "create", "--image", args.image,
                            "--memory", str(args.memory_mb)], capture_output=True, text=True)
        done = time.monotonic()
        if r.returncode != 0:
            raise RuntimeError(f"cellvm snapshot create: {r.stderr}")
        snapdir = r.stdout.split(":")[0]  # "<dir>: built in ..."
        state_bytes = os.stat(os.path.join(snapdir, "state")).st_size
        memory_bytes = os.stat(os.path.join(snapdir, "memory")).st_size
        res["template"] = {
            "build_s": done - t, "cli_said": (r.stdout + r.stderr).strip(),
            "state_bytes": state_bytes,
            "memory_bytes": memory_bytes,
            "memory_allocated_bytes": os.stat(os.path.join(snapdir, "memory")).st_blocks * 512}
        print(f"template: {res['template']['build_s']:.1f} s, state "
              f"{state_bytes / 1024:.0f} KiB, memory {res['template']['memory_allocated_bytes'] >> 20}"
              f" MiB allocated of {memory_bytes >> 20} MiB", flush=True)

        # 2. Cold vs restore, interleaved.
        cold, warm = [], []
        for i in range(args.runs):
            sbx, r = cold_run(Sandbox, args.image, args.memory_mb)
            if i < args.runs - 1:
                sbx.kill()
            else:
                live.append(sbx)  # kept for the density comparison
                cold_vm = sbx
            cold.append(r)
            print(f"cold {i}: create {r['create_s']:.2f} s + first cell {r['first_cell_s']:.2f} s",
                  flush=True)
            sbx, r = restore_run(Sandbox, args.image, args.memory_mb, extra=True)
            sbx.kill()
            warm.append(r)
            print(f"restore {i}: create {r['create_s']:.3f} s + first cell {r['first_cell_s']:.3f} s "
                  f"(spawn to first cell {r['spawn_to_first_cell_s']:.3f} s)", flush=True)
        res["cold"], res["restore"] = cold, warm
        stages = {k: statistics.median(r["stages"][k] for r in warm) for k in warm[0]["stages"]}
        res["summary"] = {
            "cold_total_s": med(cold, "total_s"), "cold_create_s": med(cold, "create_s"),
            "cold_first_cell_s": med(cold, "first_cell_s"),
            "restore_total_s": med(warm, "total_s"), "restore_create_s": med(warm, "create_s"),
            "restore_first_cell_s": med(warm, "first_cell_s"),
            "restore_spawn_to_first_cell_s": med(warm, "spawn_to_first_cell_s"),
            "restore_second_cell_s": med(warm, "second_cell_s"),
            "restore_new_context_first_cell_s": med(warm, "new_context_first_cell_s"),
            "restore_stages_s": stages,
            "cold_first_cell_new_tbs": med([r["first_cell_qemu"] for r in cold], "new_tbs"),
            "restore_first_cell_new_tbs": med([r["first_cell_qemu"] for r in warm], "new_tbs"),
            "cold_first_cell_qemu_cpu_s": med([r["first_cell_qemu"] for r in cold], "qemu_cpu_s"),
            "restore_first_cell_qemu_cpu_s": med([r["first_cell_qemu"] for r in warm], "qemu_cpu_s"),
            "restore_first_cell_minor_faults": med([r["first_cell_qemu"] for r in warm],
                                                   "minor_faults")}
        res["summary"]["speedup"] = res["summary"]["cold_total_s"] / res["summary"]["restore_total_s"]

        # 3. Density.
        clones = []
        for i in range(args.clones):
            sbx = Sandbox.create(args.image, memory_mb=args.memory_mb, snapshot=True)
            live.append(sbx)
            clones.append(sbx)
            first_cell(sbx)
        time.sleep(5)
        pss = [rollup(s.vmm_pid) for s in clones]
        cold_pss = rollup(cold_vm.vmm_pid)
        res["density"] = {"clones": pss, "cold": cold_pss}
        res["summary"]["clone_pss_kib_median"] = statistics.median(p["Pss"] for p in pss)
        res["summary"]["clone_rss_kib_median"] = statistics.median(p["Rss"] for p in pss)
        res["summary"]["cold_pss_kib"] = cold_pss["Pss"]
        res["summary"]["cold_rss_kib"] = cold_pss["Rss"]
        res["summary"]["pss_ratio"] = res["summary"]["clone_pss_kib_median"] / cold_pss["Pss"]
        # Pausing one clone: its whole RAM through the stream (and fsynced).
        t = time.monotonic()
        clones[0].pause()
        pause_t = time.monotonic() - t
        pm = clones[0]._paused[1]
        t = time.monotonic()
        clones[0].connect()
        res["summary"]["pause_s"] = pause_t
        res["summary"]["paused_state_bytes"] = pm.state_size
        res["summary"]["resume_s"] = time.monotonic() - t
        res["load_after"] = os.getloadavg()
    finally:
        for s in live:
            try:
                s.kill()
            except Exception:  # noqa: BLE001 - best effort
                pass
        for d in (root, rt, paused):
            shutil.rmtree(d, ignore_errors=True)

    s = res["summary"]
    print(json.dumps(s, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
