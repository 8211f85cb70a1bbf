"""The agent drops the capabilities serving does not need once it is set up
(issue 5: "the agent itself drops what it doesn't need after setup")."""

import os

import pytest

from cellvm import _wire as w

CAP_KILL, CAP_SETUID, CAP_NET_ADMIN, CAP_SYS_MODULE, CAP_SYS_RAWIO = 5, 7, 12, 16, 17
CAP_SYS_PTRACE, CAP_SYS_BOOT, CAP_MKNOD, CAP_BPF = 19, 22, 27, 39


def caps(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.mark.skipif(os.geteuid() != 0, reason="a non-root agent has no capabilities to drop")
def test_agent_keeps_only_what_serving_needs(fresh_agent):
    conn = w.Connection.connect(fresh_agent.addr)
    try:
        pid = conn.hello["pid"]
        for field in ("CapEff", "CapPrm", "CapBnd"):
            mask = caps(pid, field)
            for cap in (CAP_NET_ADMIN, CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_MKNOD,
                        CAP_BPF):
                assert not mask & (1 << cap), (field, cap, hex(mask))
        eff = caps(pid, "CapEff")
        assert eff & (1 << CAP_KILL) and eff & (1 << CAP_SETUID)
        # and it still serves
        body = conn.call(w.CONTEXT_CREATE, {})
        conn.call(w.CONTEXT_REMOVE, {"context": body["id"]})
    finally:
        conn.close()
