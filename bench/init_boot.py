#!/usr/bin/python3
"""Benchmark: cellvm-init's first instruction to the agent's listening socket.

Runs build/cellvm-init as PID 1 in fresh PID/mount/UTS/net namespaces with a
minimal static agent (compiled here with musl-gcc) that listens on a Unix
socket, stamps CLOCK_BOOTTIME right after listen(), and reports init's stamps
from its environment. Python and module loading are not part of this path.
Target: under 5 ms (median). Usage: bench/init_boot.py [runs]   (root)

`--qemu [runs]` boots the image of `make image` in QEMU (`cellvm create
--no-snapshot`; KVM when usable, else TCG) with the real agent and no Python
preloads, and reports the same path from the HELLO's boot stamps: init's own
work is init_start -> agent_exec minus module loading (modules_loaded -
mounts_done), then the agent's exec -> listening. `--real-agent [runs]` is the
namespace boot with the real cellvm-agent (no preloads) instead of the minimal
one. Figures in docs/BENCHMARKS.md.
"""

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INIT = os.path.join(ROOT, "build", "cellvm-init")
TARGET_MS = 5.0

MINI_AGENT = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        struct timespec ts;
        const char *path = argv[argc - 1] + strlen("unix:");
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
        unlink(path);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8))
                return 1;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        char out[512];
        snprintf(out, sizeof(out), "%s.stamps", path);
        FILE *f = fopen(out, "w");
        if (f == NULL)
                return 1;
        fprintf(f, "init_start %s\nagent_exec %s\nmounts_done %s\nsystem_ready %s\n"
                "agent_ready %lld\n", getenv("CELLVM_STAMP_INIT_START"),
                getenv("CELLVM_STAMP_AGENT_EXEC"), getenv("CELLVM_STAMP_MOUNTS_DONE"),
                getenv("CELLVM_STAMP_SYSTEM_READY"), ts.tv_sec * 1000000000LL + ts.tv_nsec);
        fclose(f);
        pause();
        return 0;
}
"""


def run_once(d, agent):
    sock = os.path.join(d, "a.sock")
    stamps = sock + ".stamps"
    if os.path.exists(stamps):
        os.unlink(stamps)
    cmdline = (f"cellvm.test=1 cellvm.vsock_port=0 cellvm.serial=none cellvm.workdir= "
               f'cellvm.agent={agent} cellvm.agent_args="--listen unix:{sock}"')
    p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--uts", "--net", INIT],
                         env={"CELLVM_CMDLINE": cmdline}, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(stamps):
        if time.monotonic() > deadline:
            p.kill()
            raise RuntimeError("agent did not start")
        time.sleep(0.002)
    time.sleep(0.01)
    with open(stamps) as f:
        s = {k: int(v) for k, v in (line.split() for line in f)}
    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
        os.kill(int(f.read().split()[0]), signal.SIGTERM)
    p.wait(timeout=10)
    return s


def qemu_main(runs):
    sys.path.insert(0, os.path.join(ROOT, "client", "python"))
    from cellvm import host

    results, accel = [], None
    opts = host.vm_args(os.path.join(ROOT, "build", "image"), memory_mb=512, snapshot=False,
                        boot_timeout=180, extra_cmdline="cellvm.agent_args=\"--preload ''\"")
    for _ in range(runs):
        info, conn = host.create(opts, timeout=600)
        try:
            results.append(conn.hello["boot"])
            accel = info["accel"]
        finally:
            conn.close()
            host.kill(info["sandbox_id"])

    def ms(f):
        return statistics.median(f(r) / 1e6 for r in results)

    modules = ms(lambda r: r["modules_loaded"] - r["mounts_done"])
    init_own = ms(lambda r: r["agent_exec"] - r["init_start"] - (r["modules_loaded"] - r["mounts_done"]))
    total = ms(lambda r: r["agent_ready"] - r["init_start"] - (r["modules_loaded"] - r["mounts_done"]))
    print(f"qemu ({accel}), runs: {runs} (median ms)")
    print(f"  kernel -> init_start          {ms(lambda r: r['init_start']):8.3f}")
    print(f"  init_start -> mounts_done     {ms(lambda r: r['mounts_done'] - r['init_start']):8.3f}")
    print(f"  module loading (excluded)     {modules:8.3f}")
    print(f"  modules_loaded -> root_mounted{ms(lambda r: r['root_mounted'] - r['modules_loaded']):8.3f}")
    print(f"  root_mounted -> system_ready  {ms(lambda r: r['system_ready'] - r['root_mounted']):8.3f}")
    print(f"  system_ready -> agent_exec    {ms(lambda r: r['agent_exec'] - r['system_ready']):8.3f}")
    print(f"  agent_exec -> agent_listening {ms(lambda r: r['agent_listening'] - r['agent_exec']):8.3f}")
    print(f"  agent_listening -> agent_ready{ms(lambda r: r['agent_ready'] - r['agent_listening']):8.3f}")
    print(f"  init's own work (to exec)     {init_own:8.3f}")
    print(f"  init_start -> agent_ready - modules {total:8.3f}  (target < {TARGET_MS} ms: "
          f"{'ok' if total < TARGET_MS else 'MISSED'}{', TCG is an emulator' if accel == 'tcg' else ''})")
    return 0 if total < TARGET_MS else 1


def real_agent_main(runs):
    """The same namespace boot with the real cellvm-agent (no preloads): its
    HELLO's boot stamps give init_start -> agent_ready natively."""
    import shutil
    sys.path.insert(0, os.path.join(ROOT, "client", "python"))
    from cellvm._wire import Connection

    results = []
    # init mounts tmpfs over /tmp and /run: binaries and socket live in /var/tmp.
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        for name in ("cellvm-agent", "cellvm-executor"):
            shutil.copy2(os.path.join(ROOT, "build", name), d)
        sock = os.path.join(d, "a.sock")
        cmdline = (f"cellvm.test=1 cellvm.vsock_port=0 cellvm.serial=none cellvm.workdir= "
                   f"cellvm.agent={d}/cellvm-agent "
                   f"cellvm.agent_args=\"--listen unix:{sock} --workdir {d} --preload ''\"")
        for _ in range(runs):
            p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--uts", "--net", INIT],
                                 env={"CELLVM_CMDLINE": cmdline}, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 30
                while not os.path.exists(sock):
                    if p.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("the agent did not listen")
                    time.sleep(0.002)
                conn = Connection.connect("unix:" + sock)
                results.append(conn.hello["boot"])
                conn.close()
            finally:
                with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                    os.kill(int(f.read().split()[0]), signal.SIGTERM)
                p.wait(timeout=30)
                if os.path.exists(sock):
                    os.unlink(sock)

    def ms(a, b):
        return statistics.median((r[b] - r[a]) / 1e6 for r in results)

    total = ms("init_start", "agent_listening")
    print(f"namespace, real agent, runs: {runs} (median ms)")
    print(f"  init_start -> agent_exec      {ms('init_start', 'agent_exec'):8.3f}")
    print(f"  agent_exec -> agent_start     {ms('agent_exec', 'agent_start'):8.3f}")
    print(f"  agent_start -> agent_listening{ms('agent_start', 'agent_listening'):8.3f}")
    print(f"  agent_listening -> agent_ready{ms('agent_listening', 'agent_ready'):8.3f}  "
          "(zygote start, default context, capabilities, seccomp)")
    print(f"  init_start -> agent_listening {total:8.3f}  (target < {TARGET_MS} ms: "
          f"{'ok' if total < TARGET_MS else 'MISSED'})")
    print(f"  init_start -> agent_ready     {ms('init_start', 'agent_ready'):8.3f}")
    return 0 if total < TARGET_MS else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--qemu":
        return qemu_main(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    if len(sys.argv) > 1 and sys.argv[1] == "--real-agent":
        return real_agent_main(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        src, agent = os.path.join(d, "agent.c"), os.path.join(d, "agent")
        with open(src, "w") as f:
            f.write(MINI_AGENT)
        subprocess.run(["musl-gcc", "-static", "-O2", "-o", agent, src], check=True)
        results = [run_once(d, agent) for _ in range(runs)]

    def ms(a, b):
        return statistics.median((r[b] - r[a]) / 1e6 for r in results)

    total = ms("init_start", "agent_ready")
    print(f"runs: {runs} (median ms)")
    print(f"  init_start -> mounts_done   {ms('init_start', 'mounts_done'):7.3f}")
    print(f"  mounts_done -> system_ready {ms('mounts_done', 'system_ready'):7.3f}")
    print(f"  system_ready -> agent_exec  {ms('system_ready', 'agent_exec'):7.3f}")
    print(f"  agent_exec -> agent_ready   {ms('agent_exec', 'agent_ready'):7.3f}")
    print(f"  init_start -> agent_ready   {total:7.3f}  (target < {TARGET_MS} ms: "
          f"{'ok' if total < TARGET_MS else 'MISSED'})")
    return 0 if total < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
