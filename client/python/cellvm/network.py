"""E2B's network options of Sandbox.create() (`network={...}`, `secure`,
`allow_internet_access`) mapped onto what a cellvm sandbox enforces.

A cellvm sandbox's egress is all or nothing: none (the default: no interface
but loopback in the micro-VM, `network="none"`; a dev-mode agent with
`--network none` or `loopback`) or all (QEMU's NAT, `network="user"`; a
dev-mode agent with `--network allow`). E2B's options are accepted with E2B's
meaning where that is what the sandbox does, and refused with an
InvalidArgumentException that names the option otherwise:

- `allow_out` / `deny_out` (lists of IPs, CIDR blocks or host names, or a
  callable returning one): E2B allows an address that `allow_out` names or
  that `deny_out` does not. With no egress, every `deny_out` holds and an
  `allow_out` entry cannot be honoured; with all egress, it is the other way
  round.
- `allow_internet_access=False` is E2B's `deny_out=["0.0.0.0/0"]`; an
  explicit `allow_internet_access=True` asks for egress (E2B's default, when
  it is not given, is taken as no request).
- `allow_public_traffic` (whether E2B's public sandbox URLs need a token) and
  `mask_request_host` (the Host header E2B's proxy sends) concern E2B's
  ingress proxy: cellvm has none and publishes no port, so a sandbox is never
  publicly reachable; either value is accepted.
- `secure` (E2B: the sandbox's API needs an access token): cellvm's channel
  is reachable only from the host that runs it (a Unix socket of that user,
  vsock from the host, the VMM's serial socket); either value is accepted.
- `rules` (per-host request transforms of E2B's egress proxy): refused.
"""

import ipaddress
import types
from typing import Callable, List, TypedDict, Union

from .exceptions import InvalidArgumentException

ALL_TRAFFIC = "0.0.0.0/0"
"""E2B's ALL_TRAFFIC: every IPv4 address."""


class SandboxNetworkOpts(TypedDict, total=False):
    """E2B's `network=` options of Sandbox.create() (a plain dict does too)."""

    allow_out: Union[List[str], Callable]
    deny_out: Union[List[str], Callable]
    allow_public_traffic: bool
    mask_request_host: str

EGRESS_NONE, EGRESS_ALL = "none", "all"
_KNOWN = ("allow_out", "deny_out", "allow_public_traffic", "mask_request_host", "rules")


def egress_of(network_policy):
    """The egress of a micro-VM's `network` ("none", "user") or of a dev-mode
    agent's user-code policy (HELLO's `network`: "none", "loopback", "allow")."""
    return EGRESS_ALL if network_policy in ("user", "allow") else EGRESS_NONE


def _selector(name, value):
    """E2B's allow_out/deny_out: a list of strings, or a callable giving one."""
    if value is None:
        return []
    if callable(value):
        ctx = types.SimpleNamespace(all_traffic=ALL_TRAFFIC, rules={}, firewall_hosts=[],
                                    all_hosts=[ALL_TRAFFIC])
        value = value(ctx)
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InvalidArgumentException(
            f"network[{name!r}] must be a list of IP addresses, CIDR blocks or host names, "
            f"not {type(value).__name__}")
    out = []
    for entry in value:
        if not isinstance(entry, str) or not entry.strip():
            raise InvalidArgumentException(f"network[{name!r}]: {entry!r} is no address")
        out.append(entry.strip())
    return out


def _net(entry):
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None  # a host name


def _covered(entry, allow):
    """Every address of deny_out's `entry` is one allow_out names (allow wins)."""
    net = _net(entry)
    for a in allow:
        anet = _net(a)
        if a == entry or (net is not None and anet is not None and
                          anet.version == net.version and anet.supernet_of(net)):
            return True
    return False


def _where(egress, place):
    if egress == EGRESS_NONE:
        return f"{place} has no egress at all, to any address"
    return (f"{place} lets user code reach every address, with no per-address firewall; "
            f"a sandbox without egress (network='none') holds this rule")


def check(network=None, *, egress, allow_internet_access=None, secure=True,
          place="this sandbox"):
    """Raises InvalidArgumentException unless E2B's options hold in a sandbox
    whose egress is `egress` (EGRESS_NONE or EGRESS_ALL); `place` names that
    sandbox in the message ("a micro-VM with network='user'"). Returns None."""
    if not isinstance(secure, bool):
        raise InvalidArgumentException(f"secure must be True or False, not {secure!r}")
    if allow_internet_access is not None and not isinstance(allow_internet_access, bool):
        raise InvalidArgumentException(
            f"allow_internet_access must be True or False, not {allow_internet_access!r}")
    if network is None:
        network = {}
    if not isinstance(network, dict):
        raise InvalidArgumentException(
            "network must be E2B's options ({'allow_out': [...], 'deny_out': [...], "
            "'allow_public_traffic': bool, 'mask_request_host': str}) or, for a booted "
            "micro-VM, 'none' (loopback only) or 'user' (QEMU's NAT)")
    unknown = sorted(str(k) for k in network if k not in _KNOWN)
    if unknown:
        raise InvalidArgumentException(
            f"network: unknown option(s) {', '.join(unknown)} (E2B's are {', '.join(_KNOWN)})")
    if network.get("rules"):
        raise InvalidArgumentException(
            "network['rules'] (per-host request transforms) needs E2B's egress proxy: "
            "cellvm has none")
    public = network.get("allow_public_traffic", True)
    if not isinstance(public, bool):
        raise InvalidArgumentException(
            f"network['allow_public_traffic'] must be True or False, not {public!r}")
    mask = network.get("mask_request_host")
    if mask is not None and not isinstance(mask, str):
        raise InvalidArgumentException(
            f"network['mask_request_host'] must be a string, not {mask!r}")
    allow = _selector("allow_out", network.get("allow_out"))
    deny = _selector("deny_out", network.get("deny_out"))
    if allow_internet_access is False:
        deny.append(ALL_TRAFFIC)
    if allow_internet_access is True and egress == EGRESS_NONE:
        raise InvalidArgumentException(
            f"allow_internet_access=True cannot be honoured: {_where(egress, place)}")
    if egress == EGRESS_NONE and allow:
        raise InvalidArgumentException(
            f"egress rule allow_out {allow} cannot be enforced: {_where(egress, place)}")
    if egress == EGRESS_ALL:
        # An address allow_out names stays reachable (E2B: allow wins).
        held = [d for d in deny if not _covered(d, allow)]
        if held:
            what = ("allow_internet_access=False" if held == [ALL_TRAFFIC] and
                    not network.get("deny_out") else f"egress rule deny_out {held}")
            raise InvalidArgumentException(
                f"{what} cannot be enforced: {_where(egress, place)}")
