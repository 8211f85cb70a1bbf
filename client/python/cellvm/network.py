"""E2B's network options of Sandbox.create() (`network={...}`, `secure`,
`allow_internet_access`) mapped onto what a cellvm sandbox enforces.

A QEMU micro-VM with `network="none"` (the default) has no interface but
loopback; when E2B's options ask for egress (`allow_out`/`deny_out` entries,
or `allow_internet_access=True`), the host enforces them as E2B does: user
code reaches the outside only through the guest's HTTP proxy, whose streams
the sandbox's egress keeper decides by the rules, by name and by every
address the name resolves to (`cellvm create --egress`, docs/NETWORK.md);
`Sandbox.update_network()` replaces them live. Other sandboxes' egress is
all or nothing: QEMU's NAT (`network="user"`, all), Firecracker and Cloud
Hypervisor (none), a dev-mode agent (`--network none`/`loopback`: none;
`allow`: all). There, E2B's options are accepted with E2B's meaning where
that is what the sandbox does, and refused with an InvalidArgumentException
that names the option otherwise:

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
- `egress_proxy` (E2B: tunnel the sandbox's egress through the user's own
  proxy): ignored; the guest's proxy is the host's.
"""

import ipaddress
from dataclasses import dataclass, field
from typing import Callable, List, Mapping, TypedDict, Union

from .exceptions import InvalidArgumentException

ALL_TRAFFIC = "0.0.0.0/0"
"""E2B's ALL_TRAFFIC: every IPv4 address."""


@dataclass(frozen=True)
class SandboxNetworkSelectorContext:
    """E2B's argument of an allow_out/deny_out callable."""

    all_traffic: str = ALL_TRAFFIC
    rules: Mapping[str, list] = field(default_factory=dict)  # E2B's proxy rules: cellvm has none
    # names earlier E2B SDKs passed, for selectors written against them
    firewall_hosts: List[str] = field(default_factory=list)
    all_hosts: List[str] = field(default_factory=lambda: [ALL_TRAFFIC])


SandboxNetworkSelector = Union[List[str], Callable[[SandboxNetworkSelectorContext], List[str]]]
"""E2B's allow_out/deny_out: addresses, or a callable giving them."""


class SandboxNetworkOpts(TypedDict, total=False):
    """E2B's `network=` options of Sandbox.create() (a plain dict does too)."""

    allow_out: Union[List[str], Callable]
    deny_out: Union[List[str], Callable]
    allow_public_traffic: bool
    mask_request_host: str

class SandboxNetworkUpdate(TypedDict, total=False):
    """E2B's argument of update_network(): the egress rules that replace the
    sandbox's (`rules` and `egress_proxy`, E2B's proxy features, are refused)."""

    allow_out: Union[List[str], Callable]
    deny_out: Union[List[str], Callable]
    allow_internet_access: bool


EGRESS_NONE, EGRESS_ALL = "none", "all"
_KNOWN = ("allow_out", "deny_out", "allow_public_traffic", "mask_request_host", "rules",
          "egress_proxy")


def egress_of(network_policy):
    """The egress of a micro-VM's `network` ("none", "user") or of a dev-mode
    agent's user-code policy (HELLO's `network`: "none", "loopback", "allow")."""
    return EGRESS_ALL if network_policy in ("user", "allow") else EGRESS_NONE


def _selector(name, value):
    """E2B's allow_out/deny_out: a list of strings, or a callable giving one."""
    if value is None:
        return []
    if callable(value):
        value = value(SandboxNetworkSelectorContext())
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
          place="this sandbox", enforce=True):
    """Raises InvalidArgumentException unless E2B's options hold in a sandbox
    whose egress is `egress` (EGRESS_NONE or EGRESS_ALL); `place` names that
    sandbox in the message ("a micro-VM with network='user'"). `enforce`
    False: only their shape is checked (the host enforces them). Returns
    (allow_out, deny_out) as lists, each selector resolved (a callable called)
    once here."""
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
            "network['rules'] (per-host request transforms of E2B's egress proxy) is not "
            "supported: cellvm's proxy does not rewrite requests (docs/NETWORK.md)")
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
    if enforce:
        _enforce(network, allow, deny, egress=egress, place=place,
                 allow_internet_access=allow_internet_access)
    return allow, deny


def _enforce(network, allow, deny, *, egress, place, allow_internet_access):
    """check()'s verdict on the resolved allow/deny in a sandbox whose egress is `egress`."""
    if allow_internet_access is False:
        deny = deny + [ALL_TRAFFIC]
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


def egress_rules(network=None, allow_internet_access=None, secure=True):
    """For a sandbox whose host enforces egress (a QEMU micro-VM with
    network='none'): the rules body of rules_body() when E2B's options ask for
    egress (allow_out entries, deny_out entries (everything else stays
    reachable, as in E2B) unless allow_internet_access=False denies the rest
    anyway, or allow_internet_access=True), else None: there, the options hold
    in a sandbox with no egress as they are. Each selector is resolved once.
    InvalidArgumentException for a malformed option or request transforms."""
    allow, deny = check(network, egress=EGRESS_NONE, allow_internet_access=allow_internet_access,
                        secure=secure, place="(only the shape is checked here)", enforce=False)
    if not (allow or (deny and allow_internet_access is not False) or
            allow_internet_access is True):
        return None
    return _body(allow, deny, allow_internet_access)


def rules_body(network=None, allow_internet_access=None, secure=True):
    """E2B's options as the rules `cellvm create --egress` and `cellvm egress`
    take (E2B's update body: allowOut, denyOut, allow_internet_access); the
    host checks each entry. InvalidArgumentException for what the host cannot
    do (request transforms) or a malformed option."""
    allow, deny = check(network, egress=EGRESS_ALL, allow_internet_access=None, secure=secure,
                        place="(only the shape is checked here)", enforce=False)
    return _body(allow, deny, allow_internet_access)


def _body(allow, deny, allow_internet_access):
    body = {"allowOut": allow, "denyOut": deny}
    if allow_internet_access is not None:
        if not isinstance(allow_internet_access, bool):
            raise InvalidArgumentException(
                f"allow_internet_access must be True or False, not {allow_internet_access!r}")
        body["allow_internet_access"] = allow_internet_access
    return body
