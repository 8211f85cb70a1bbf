"""The host end of the vhost-vsock channel to a QEMU guest's agent.

Guest CIDs. A CID names one VM on the whole host, and QEMU refuses to start
when another VM holds it (`vhost-vsock: unable to set guest cid: Address
already in use`). allocate_cid() combines this process's pid with a
per-process counter, so two cellvm VMs never pick the same CID, whether they
are launched by one process or by several; a clash with some other program's
VM is left to the launcher, which retries with the next CID (CID_IN_USE).

Connecting. The guest answers only once its vsock driver is up and the agent
listens on port 1024: until then connect() fails with ETIMEDOUT (nothing
answers yet) or ECONNRESET (the guest answered: no listener). Both are
retried until the deadline. ENODEV and the like mean that no VM holds the CID:
normal for a moment while QEMU sets its devices up, so they are retried for
NO_ROUTE_GRACE_S, after which vsock is given up (VsockUnavailable) and the
caller falls back to the virtio-serial port.
"""

import errno
import itertools
import os
import socket
import time

AGENT_PORT = 1024
CID_IN_USE = "unable to set guest cid: Address already in use"
_CID_BASE = 1 << 30  # clear of the low CIDs other tools (libvirt) hand out from 3 up
_CID_COUNTER = itertools.count()
NO_ROUTE_GRACE_S = 5.0
# One attempt's wait (the kernel's own is 2 s): short, so that a QEMU that
# exits (a taken CID) is noticed between attempts, not after the deadline.
ATTEMPT_TIMEOUT_S = 0.5
RETRY_INTERVAL_S = 0.02
# The guest is there but not (yet) listening, or not (yet) answering.
_NOT_YET = {errno.ECONNRESET, errno.ECONNREFUSED, errno.ETIMEDOUT, errno.EINTR, errno.EAGAIN}
# No VM holds that CID (yet).
_NO_ROUTE = {errno.ENODEV, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL}


class VsockUnavailable(Exception):
    """AF_VSOCK cannot reach the guest from here: use the serial port."""


def allocate_cid():
    """A guest CID no other cellvm VM on this host uses: 2**30 + pid * 256 +
    a per-process count (mod 256). pid_max is at most 2**22, so the CID stays
    below 2**31 (CIDs are 32 bits; 0-2 and 2**32-1 are reserved)."""
    return _CID_BASE + ((os.getpid() & 0x3FFFFF) << 8) + (next(_CID_COUNTER) & 0xFF)


def classify(err):
    """What a failed connect's errno means: "retry" (the agent is not up yet),
    "no-route" (no VM holds the CID, yet) or "unavailable" (vsock cannot work)."""
    if err is None or err in _NOT_YET:
        return "retry"
    if err in _NO_ROUTE:
        return "no-route"
    return "unavailable"


def connect(cid, port, deadline, check=None, no_route_grace=NO_ROUTE_GRACE_S):
    """A blocking socket connected to (cid, port), retried until the agent
    listens or time.monotonic() reaches `deadline` (TimeoutError).

    `check()`, called before each attempt, may raise to give up (the VMM
    died). Raises VsockUnavailable when vsock cannot reach the guest.
    """
    no_route_since = None
    last = None
    while True:
        if check is not None:
            check()
        now = time.monotonic()
        if now >= deadline:
            raise TimeoutError(f"vsock:{cid}:{port} did not accept a connection in time (last: {last})")
        try:
            sock = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        except (OSError, AttributeError) as e:
            raise VsockUnavailable(f"no AF_VSOCK socket here: {e}") from None
        try:
            sock.settimeout(max(0.05, min(ATTEMPT_TIMEOUT_S, deadline - now)))
            sock.connect((cid, port))
            sock.settimeout(None)
            return sock
        except OSError as e:
            sock.close()
            last = e
            kind = classify(e.errno)
            if kind == "unavailable":
                raise VsockUnavailable(f"connect vsock:{cid}:{port}: {e}") from None
            if kind == "no-route":
                no_route_since = no_route_since or now
                if now - no_route_since >= no_route_grace:
                    raise VsockUnavailable(f"connect vsock:{cid}:{port}: {e} for "
                                           f"{no_route_grace} s") from None
            else:
                no_route_since = None
        time.sleep(RETRY_INTERVAL_S)
