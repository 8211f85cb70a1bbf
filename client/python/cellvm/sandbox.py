"""Sandbox: the E2B code-interpreter API over the cellvm wire protocol.

Mirrors e2b_code_interpreter.Sandbox (sync): run_code with streaming
callbacks, code contexts, timeouts. One Sandbox holds one connection to the
agent; several threads may call it at once (requests are multiplexed).
"""

import datetime as _dt
import errno
import logging
import os
import threading
import time
from typing import Dict, List, Optional, Union

from . import _wire
from ._live import forget as _forget, live as _live, register as _register
from ._messages import _Messages
from . import network as _network
from .boot import BootReport
from .exceptions import (
    InvalidArgumentException,
    SandboxException,
    SandboxNotFoundException,
    TimeoutException,
    format_long_request_timeout_error,
    format_request_timeout_error,
    format_sandbox_killed_error,
    format_sandbox_not_running_error,
    from_agent_error,
)
from .models import (Context, Execution, ExecutionError, OutputHandler, OutputMessage, Result,
                     SandboxInfo, SandboxMetrics, SandboxQuery, SandboxState)

from ._variant import class_or_instance as _class_or_instance
from .cloud_only import CloudOnly, unsupported
from .snapshots import SnapshotInfo, SnapshotPaginator
from ._paginator import Pages

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0
"""Seconds an execution may run when run_code gets no timeout (E2B's default)."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds to wait for a reply to a non-execution request (E2B's default)."""
ADDR_ENV = "CELLVM_ADDR"
# How often a waiting run_code wakes up, so Ctrl-C and the client-side guard
# are noticed even when no message arrives.
# After a cancel, how long to wait for the request's terminal message.
_DRAIN_S = 5.0
# The code interpreter's requests (E2B's port 49999 server), whose errors for a
# sandbox that ended E2B's SDK words apart from envd's (files, commands).
_CODE_INTERPRETER = frozenset((_wire.EXECUTE, _wire.INTERRUPT, _wire.CONTEXT_CREATE,
                               _wire.CONTEXT_LIST, _wire.CONTEXT_RESTART, _wire.CONTEXT_REMOVE))
# When a VM's connection fails: how long to wait for its VMM to be seen gone
# (a kill from elsewhere) before taking the failure for one of a live sandbox.
_END_WAIT_S = 1.0
# get_host() and the file URLs: each listener made once, whichever thread asks first.
_LISTENERS_LOCK = threading.Lock()


def normalize_language(language: Optional[str]) -> Optional[str]:
    """E2B's names for a language as its server reads them (lower case, trimmed,
    "js" for "javascript"); the agent knows the rest ("python3" is "python") and
    refuses what it does not run. None or "" is the default context."""
    if not language:
        return None
    language = language.lower().strip()
    return "javascript" if language == "js" else language


def _context_id(context: Union[Context, str, None]) -> Optional[str]:
    if context is None:
        return None
    if isinstance(context, Context):
        return context.id
    if isinstance(context, str):
        return context
    raise InvalidArgumentException(f"context must be a Context or a context id, not {type(context).__name__}")


def _open_connection(addr: str, timeout: float) -> "_wire.Connection":
    """Connect and handshake, both bounded by `timeout` seconds."""
    try:
        _wire.parse_address(addr)
    except ValueError as e:
        raise InvalidArgumentException(str(e)) from None
    try:
        return _wire.Connection.connect(addr, timeout=timeout)
    except _wire.AgentError as e:
        raise from_agent_error(e) from None
    except TimeoutError:
        raise format_request_timeout_error() from None
    except (_wire.ConnectionClosed, _wire.ProtocolError) as e:
        raise SandboxException(f"handshake with the agent at {addr} failed: {e}") from None
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENODEV, errno.ENOTCONN):
            # Nothing listens there: E2B's answer for a sandbox that is gone.
            raise SandboxNotFoundException(
                f"Sandbox {addr} not found: cannot connect to the agent at {addr}: {e}") from None
        raise SandboxException(f"cannot connect to the agent at {addr}: {e}") from None


def _is_address(text) -> bool:
    """`text` is an agent address (unix:PATH, tcp:HOST:PORT, vsock:CID:PORT),
    not a sandbox id such as a registry key."""
    try:
        _wire.parse_address(text)
        return True
    except (ValueError, AttributeError):
        return False


def _lifecycle(lifecycle):
    """E2B's `lifecycle=` of create(), checked as E2B's build_lifecycle_config
    checks it: ("pause" or None, auto_resume). A pause at the timeout is its
    keeper's `cellvm pause` (docs/SDK.md); one without memory is refused."""
    raw = (lifecycle or {}).get("on_timeout")
    keep_memory_given, keep_memory = False, None
    if isinstance(raw, dict):
        action = raw.get("action", "kill")
        keep_memory_given, keep_memory = "keep_memory" in raw, raw.get("keep_memory")
    else:
        action = raw if raw is not None else "kill"
    if keep_memory_given and action != "pause":
        raise InvalidArgumentException(
            "keep_memory is only allowed when on_timeout action is 'pause'.")
    keep_memory = True if keep_memory is None else keep_memory
    auto_resume = (lifecycle or {}).get("auto_resume")
    if auto_resume and action != "pause":
        raise InvalidArgumentException(
            "auto_resume can only be True when on_timeout action is 'pause'.")
    if not keep_memory and auto_resume:
        raise InvalidArgumentException(
            "auto_resume: True is not a valid value when keep_memory: False - a filesystem-only "
            "snapshot cannot be auto-resumed by traffic and must be resumed explicitly using "
            "Sandbox.connect().")
    if action == "pause" and not keep_memory:
        raise unsupported("create(lifecycle=...)",
                          "a filesystem-only pause at the timeout (keep_memory False) is not "
                          "offered: the keeper that pauses the sandbox cannot reach its files "
                          "while this process holds its channel; pause(keep_memory=False) it "
                          "yourself")
    return ("pause" if action == "pause" else None), bool(auto_resume)


def _refuse_cloud_options(mcp=None, iam=None, volume_mounts=None):
    """E2B's create() options that only its cloud has: refused by name rather
    than ignored, so a program that relies on one learns it at once."""
    refused = [
        ("mcp", mcp, "E2B's MCP gateway is a service of E2B's cloud"),
        ("iam", iam, "E2B's IAM tokens are issued by E2B's cloud"),
        ("volume_mounts", volume_mounts, "E2B's volumes are E2B's cloud storage"),
    ]
    for name, value, why in refused:
        if value:
            raise unsupported(f"create({name}=...)", why)


def _e2b_template(name):
    """True if `name` (create()'s image/template) is no image directory but
    reads as an E2B template name or id ("base", "code-interpreter-v1"):
    E2B programs pass those, and cellvm then uses its default image."""
    if not name or os.sep in name or os.path.isabs(name):
        return False
    from .launch import resolve_image
    return not os.path.exists(os.path.join(resolve_image(name), "manifest.json"))


# Template names of the opt-in image profiles (docs/IMAGE.md, "The data
# profile"): create(template="data") boots `make image-data`'s directory.
PROFILE_TEMPLATES = {"data": "image-data", "cellvm-data": "image-data"}


def _profile_image(name):
    """The built image directory a profile's template name (`PROFILE_TEMPLATES`)
    stands for: the `image-data` beside the default image ($CELLVM_IMAGE,
    else build/image), else the checkout's build/image-data. None for other
    names, or when that image is not built."""
    sub = PROFILE_TEMPLATES.get(name)
    if sub is None:
        return None
    from .launch import DEFAULT_IMAGE, resolve_image
    for candidate in (os.path.join(os.path.dirname(resolve_image(None)), sub),
                      resolve_image(os.path.join(os.path.dirname(DEFAULT_IMAGE), sub))):
        if os.path.exists(os.path.join(candidate, "manifest.json")):
            return candidate
    return None


class ExecutionAborted(SandboxException):
    """_run_code()'s `abort` event was set: the execution was cancelled in the sandbox."""


class _SharedConnection:
    """The sandbox's own connection lent where a second one is wanted (a
    streamed download) on a single-stream channel: QEMU's serial socket serves
    one client at a time, so a second connection would wait until the first
    closed. A thread waiting for another request of the sandbox may read
    the download's chunks and hold them for it meanwhile."""

    def __init__(self, conn):
        self._conn = conn

    def request(self, mtype, body=None):
        return self._conn.request(mtype, body)

    def close(self):
        pass  # the sandbox owns the connection


def _host_cpus_and_memory(addr):
    """(cpus, MiB of memory) of this host, where a dev-mode agent at a unix
    address runs; (0, 0) where that is not known."""
    if not addr.startswith("unix:"):
        return 0, 0
    memory = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) // 1024
                    break
    except OSError:
        pass
    return os.cpu_count() or 0, memory


def _matches(info: SandboxInfo, query: Optional[SandboxQuery]) -> bool:
    if query is None:
        return True
    if query.metadata and any(info.metadata.get(k) != v for k, v in query.metadata.items()):
        return False
    if query.state and not any(str(getattr(st, "value", st)) == info.state.value for st in query.state):
        return False
    if query.started_after is not None and info.started_at is not None:
        after = query.started_after
        if after.tzinfo is None:
            after = after.astimezone()  # naive: local time, as E2B reads it
        if info.started_at < after:
            return False
    if query.template and query.template not in (info.template_id, info.name):
        return False
    return True


class SandboxPaginator(Pages):
    """E2B's SandboxPaginator: `has_next`, `next_token`, `next_items()`.

        paginator = Sandbox.list()
        while paginator.has_next:
            for info in paginator.next_items(): ...

    The list is taken at the first next_items(); `next_token` is the offset
    of the next page."""

    def __init__(self, query=None, limit=None, next_token=None, order=None, sandbox_cls=None):
        if order not in (None, "asc", "desc"):
            raise InvalidArgumentException(f"Invalid order {order!r}, expected 'asc' or 'desc'")
        if next_token is not None and not str(next_token).isdigit():
            raise InvalidArgumentException(f"Invalid next_token {next_token!r}")
        if limit is not None and int(limit) < 1:
            raise InvalidArgumentException("limit should be at least 1")
        self.query = query
        self.limit = limit
        self.order = order
        self._next_token = None if next_token is None else str(next_token)
        self._has_next = True
        self._items = None
        self._cls = sandbox_cls or Sandbox

    def next_items(self, **opts) -> List[SandboxInfo]:
        """The next page of SandboxInfo. Call it only while has_next."""
        if not self._has_next:
            raise Exception("No more items to fetch")  # E2B's wording and class
        if self._items is None:
            self._items = self._collect()
        start = int(self._next_token or 0)
        end = len(self._items) if not self.limit else min(len(self._items), start + int(self.limit))
        page = self._items[start:end]
        if end < len(self._items):
            self._next_token = str(end)
        else:
            self._next_token = None
            self._has_next = False
        return page

    def _collect(self) -> List[SandboxInfo]:
        # Several Sandbox objects may have one id (E2B programs that "create"
        # sandboxes in dev mode all reach $CELLVM_ADDR's agent): the id is
        # listed once, with the newest of them that matches the query.
        infos = []
        for sbx in reversed(_live()):
            try:
                infos.append(sbx.get_info())
            except SandboxException:
                continue
        from . import host, lifetime, pause
        mine = {i.sandbox_id for i in infos}
        listed = host.ps()  # one `cellvm ps --json`: the live, then the paused
        infos.extend(lifetime.info_from_entry(e) for e in lifetime.live_entries(listed)
                     if e.id not in mine)  # other processes' VMs
        infos.extend(pause.info(r) for r in pause.records(listed))  # E2B lists paused ones too
        addr = os.environ.get(ADDR_ENV)
        if addr and addr not in {i.sandbox_id for i in infos}:
            try:
                other = self._cls(addr=addr)
            except SandboxException:
                other = None
            if other is not None:
                try:
                    infos.append(other.get_info())
                finally:
                    other.close()
        seen, found = set(), []
        for info in infos:
            if info.sandbox_id not in seen and _matches(info, self.query):
                seen.add(info.sandbox_id)
                found.append(info)
        found.sort(key=lambda i: i.started_at or _dt.datetime.now(_dt.timezone.utc),
                   reverse=self.order != "asc")
        return found


class Sandbox(CloudOnly):
    """A connection to one cellvm agent (one micro-VM, or a local dev agent).

    `Sandbox.create(image="build/image")` boots a micro-VM and connects to it
    (cellvm.launch); kill() then stops the VM.
    `Sandbox.connect("unix:/path/agent.sock")` (or `tcp:127.0.0.1:PORT`)
    connects to an agent that is already running. `Sandbox()` connects to
    $CELLVM_ADDR when it is set and otherwise boots a micro-VM like
    `Sandbox.create()`, so E2B programs written as `with Sandbox() as sbx:`
    run unchanged. E2B's creation options
    (template, timeout, api_key, ...) have no meaning for an agent that is
    already running and are accepted and ignored; `metadata` is kept for
    get_info() and list(); `envs` is applied to every execution.
    """

    # E2B's class attributes (e2b_code_interpreter/code_interpreter_sync.py,
    # e2b/sandbox/main.py): the template name create() takes when given none
    # (cellvm: its default image), the lifetime create() gives by default.
    default_template = "code-interpreter-v1"
    default_sandbox_timeout = 300
    # E2B's lifecycle auto_resume (create()): a request resumes it once paused.
    _auto_resume = False

    def __init__(
        self,
        template: Optional[str] = None,
        timeout: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        *,
        addr: Optional[str] = None,
        request_timeout: Optional[float] = None,
        **e2b_options,
    ):
        # E2B 1.x attached to a running sandbox with Sandbox(sandbox_id=...):
        # an id (a VM's registry key) is connected to as Sandbox.connect(id) does.
        sandbox_id = e2b_options.get("sandbox_id")
        if not addr and sandbox_id and not _is_address(sandbox_id):
            self._become(type(self)._cls_connect(sandbox_id, request_timeout=request_timeout,
                                                 envs=envs))
            return
        addr = addr or sandbox_id or os.environ.get(ADDR_ENV)
        if not addr:
            # E2B's Sandbox() starts a new sandbox: boot a micro-VM from the
            # image ($CELLVM_IMAGE, else build/image), as Sandbox.create() does.
            self._become(type(self)._boot(template=template, metadata=metadata, envs=envs,
                                          request_timeout=request_timeout, timeout=timeout,
                                          detach=e2b_options.get("detach")))
            return
        self._addr = addr
        self._id = addr  # an agent reached by its address (dev mode): that is its id
        self._envs = {str(k): str(v) for k, v in (envs or {}).items()}
        self._request_timeout = request_timeout or DEFAULT_REQUEST_TIMEOUT
        self._conn = _open_connection(addr, self._request_timeout)
        self._closed = False
        self._killed = False
        self._owner = None
        self._vm = None
        self._started_at = _dt.datetime.now(_dt.timezone.utc)
        self._metadata = dict(metadata or {})
        self._template = template
        self._entry = None
        _register(self)

    def _become(self, other: "Sandbox") -> None:
        """This (new) Sandbox takes the place of `other`, which create() or
        connect() made (Sandbox() and Sandbox(sandbox_id=...) are constructors)."""
        from . import lifetime
        _forget(other)
        lifetime.unwatch(other)
        self.__dict__.update(other.__dict__)
        _register(self)
        if self._owner is None:  # a view's deadlines are relayed by its owner
            lifetime.watch(self)  # (nothing without a registry entry)

    @_class_or_instance("_cls_connect")
    def connect(self, timeout: Optional[int] = None, **opts) -> "Sandbox":
        """`sbx.connect()` (E2B: resume and reconnect): reopens this
        Sandbox's connection if close() closed it; returns the Sandbox.
        `Sandbox.connect(sandbox_id)` is the classmethod `_cls_connect`.
        `timeout` (E2B's, default 300 s): a running sandbox then lives at
        least that long from now (connect only extends its life, as E2B's);
        a paused one resumes with it. SandboxNotFoundException (E2B's) once
        the sandbox has ended."""
        if self._killed or (self._owner is not None and self._owner._killed):
            raise SandboxNotFoundException(f"Paused sandbox {self.sandbox_id} not found")
        owner = self._root
        self._check_timeout_pause()
        if getattr(owner, "_paused", None) is None and self._ended():
            raise SandboxNotFoundException(f"Paused sandbox {self.sandbox_id} not found")
        if getattr(owner, "_paused", None) is not None:  # E2B: connect() resumes it
            from . import pause
            rec = pause.find(owner._paused["key"])
            if rec is None:
                raise SandboxNotFoundException(f"Paused sandbox {self.sandbox_id} not found")
            pause.resume(type(owner), rec, timeout=timeout, into=owner,
                         request_timeout=owner._request_timeout, envs=owner._envs)
            if owner is not self:
                self._conn, self._vm, self._closed = owner._conn, owner._vm, False
                _register(self)
            return self
        if self._closed:
            if self._owner is not None:
                self._closed = False
            else:
                from . import lifetime
                lifetime.hold(self)  # refused if another process took the channel
                try:
                    self._conn = _open_connection(self._addr, self._request_timeout)
                except BaseException:
                    lifetime.release(self)
                    raise
                self._closed = False
            _register(self)
        self._extend_timeout(timeout)
        return self

    def _extend_timeout(self, timeout):
        """connect()'s `timeout` (E2B: given or 300 s, the sandbox's "TTL is
        only extended"): a sandbox in the registry is made to live at least
        `timeout` s from now, never shortened. An agent in dev mode has no
        lifetime (a warning when a timeout was given, as set_timeout())."""
        owner = self._root
        entry = getattr(owner, "_entry", None)
        if entry is None:
            if timeout is not None:
                self.set_timeout(timeout)
            return
        timeout = timeout or self.default_sandbox_timeout  # E2B's `timeout or default`
        from . import lifetime
        fresh = lifetime.find(entry.key)
        if fresh is None:
            raise SandboxNotFoundException(f"Paused sandbox {self.sandbox_id} not found")
        if time.time() * 1000 + float(timeout) * 1000 > fresh.deadline_ms:
            try:
                self.set_timeout(timeout)
            except SandboxException as e:
                if e.code != "unsupported":
                    raise
                # An agent not under cellvm-init (a dev agent behind a registry
                # entry) takes no deadline: the host's record holds it.
                logger.debug("connect(%s): %s", self.sandbox_id, e)

    @classmethod
    def _cls_connect(cls, sandbox_id: str, timeout: Optional[int] = None, logger=None, *,
                     request_timeout: Optional[float] = None,
                     envs: Optional[Dict[str, str]] = None, **e2b_options) -> "Sandbox":
        """Connect to the sandbox `sandbox_id`: a sandbox this process booted
        (its `sandbox_id`, the registry key; the new Sandbox shares its
        connection, and its kill() stops the VM as E2B's does), or one that
        another process booted (the registry, `cellvm ps`: its kill()
        stops that VM too), or a paused one (resumed, with the same id), or
        the agent at that address ('unix:PATH', 'tcp:HOST:PORT' or
        'vsock:CID:PORT': a dev-mode agent; a VM's address is taken too).
        A sandbox this process already holds the channel of (one it booted,
        or another process's it connected to) is shared, however often it
        is connected to: a VM's serial channel takes one client.
        `timeout` (E2B's, default 300 s): a running sandbox then lives at
        least that long from now (only extended, as E2B's); a paused one
        resumes with it. E2B's other options (api_key, ...) are accepted
        and ignored. SandboxNotFoundException if nothing answers, or the
        sandbox has ended (E2B's "Paused sandbox ... not found")."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.connect(timeout)
        owners = []
        for s in _live(sandbox_id):
            root = s._root
            if ((root._vm is not None or getattr(root, "_entry", None) is not None)
                    and not root._closed and root not in owners):
                owners.append(root)
        owners = [o for o in owners if not o._ended()]
        if owners:
            view = owners[0]._view(envs=envs, request_timeout=request_timeout)
        else:
            from . import lifetime
            entry = lifetime.find(sandbox_id)
            if entry is not None:  # another process's VM (`cellvm ps`)
                return lifetime.connect_entry(cls, entry, timeout, request_timeout, envs)
            from . import pause
            paused = pause.find(sandbox_id)
            if paused is not None:  # E2B: connecting resumes a paused sandbox
                return pause.resume(cls, paused, timeout=timeout,
                                    request_timeout=request_timeout, envs=envs)
            if not _is_address(sandbox_id):  # an id nobody has (E2B's 404)
                raise SandboxNotFoundException(f"Paused sandbox {sandbox_id} not found")
            view = cls(addr=sandbox_id, request_timeout=request_timeout, envs=envs)
        try:
            view._extend_timeout(timeout)
        except BaseException:
            view.close()
            raise
        return view

    @property
    def _root(self) -> "Sandbox":
        """The Sandbox that holds the connection and the VM: this one, or the
        one it is a view of (_view)."""
        return self._owner if self._owner is not None else self

    def _view(self, envs=None, request_timeout=None) -> "Sandbox":
        """Another Sandbox over this one's connection (a booted VM's channel
        may take one client only); kill() kills this one."""
        view = type(self).__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._owner = self
        view._closed = False
        view._killed = False
        if envs is not None:
            view._envs = {str(k): str(v) for k, v in envs.items()}
        if request_timeout:
            view._request_timeout = request_timeout
        _register(view)
        return view

    @classmethod
    def create(cls, template: Optional[str] = None, timeout: Optional[float] = None,
               metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None,
               secure: bool = True, allow_internet_access: Optional[bool] = None,
               mcp: Optional[Dict] = None, network: Union[str, Dict, None] = None,
               iam: Optional[Dict] = None, lifecycle: Optional[Dict] = None,
               volume_mounts: Optional[Dict] = None, logger: Optional[logging.Logger] = None, *,
               image: Optional[str] = None, vmm: str = "qemu", memory_mb: int = 1024, vcpus: int = 1,
               request_timeout: Optional[float] = None, wait_ready: bool = True,
               extra_cmdline: str = "", kernel: Optional[str] = None,
               initramfs: Union[str, bool, None] = True, rootfs: Optional[str] = None,
               boot_timeout: Optional[float] = None, detach: Optional[bool] = None,
               snapshot: Union[bool, str, None] = None, **e2b_options) -> "Sandbox":
        """Boot a micro-VM from `image` and return a Sandbox connected to it.

        The arguments before `*` are E2B's, in E2B's order
        (e2b/sandbox_sync/main.py create()); cellvm's own are keyword-only.
        E2B's `mcp`, `iam`, `volume_mounts` and a `lifecycle` other than
        kill-at-timeout are services of its cloud: SandboxException
        (code "unsupported"). `logger` is accepted (E2B logs its API calls to it).

        `image`: a `make image` directory (default: $CELLVM_IMAGE, else
        build/image; E2B's `template` is taken as the image when `image` is
        not given; template "data" or "cellvm-data" is build/image-data, from
        `make image-data`, when built). `vmm`: "qemu" (KVM when usable, else TCG),
        "firecracker" or "cloud-hypervisor" (their binary must be on PATH).
        `network`: "none" (loopback only) or "user" (QEMU's NAT); or E2B's
        options ({"allow_out": [...], "deny_out": [...], "allow_public_traffic":
        False, ...}) on a "none" sandbox, with E2B's `secure` and
        `allow_internet_access`: those that hold there are accepted, an egress
        rule cellvm cannot enforce raises InvalidArgumentException naming it
        (cellvm.network).
        `envs`: environment for every execution and command of this Sandbox.
        `timeout`: the sandbox's lifetime in seconds, as E2B's (default 300,
        $CELLVM_DEFAULT_TIMEOUT; at most 24 h, $CELLVM_MAX_TIMEOUT), counted
        from when create() returns; set_timeout() moves it. The guest ends
        itself then, and any cellvm process kills a VMM past it (cellvm.lifetime).
        `boot_timeout`: seconds to wait for the VM to be ready (default 300).
        `detach=True` ($CELLVM_DETACH=1): this process's exit does not kill
        the sandbox, it lives until its timeout (E2B's behaviour); a `with`
        block and kill() still end it. Too many live sandboxes
        ($CELLVM_MAX_SANDBOXES, 20) raise RateLimitException.
        With `wait_ready` (default) create() returns once the zygote has
        imported numpy, pandas and matplotlib, so the first cell runs at once.
        `snapshot` (default None: $CELLVM_SNAPSHOT, on unless "0"): restore
        the sandbox from the template of this launch (built on first use,
        ~25 s under TCG, then ~0.2-0.4 s per create; rebuilt when the image or
        VMM changed; a template that does not restore: a warning and a cold
        boot); False: boot cold; a directory: that template, any problem a
        SandboxException (`cellvm create`, docs/SNAPSHOTS.md).
        Raises SandboxException (TimeoutException when time ran out); nothing
        is left running then. `kernel`, `initramfs` (None/False: boot without
        one) and `rootfs` replace the image's files (`cellvm create --kernel`, e.g. the
        kernel of `make kernel`). See cellvm.launch. Without `image`/`template`
        and with $CELLVM_ADDR set, connects to that agent as Sandbox() does.
        """
        _refuse_cloud_options(mcp=mcp, iam=iam, volume_mounts=volume_mounts)
        on_timeout, auto_resume = _lifecycle(lifecycle)
        # E2B's network options (a dict), `secure` and `allow_internet_access`
        # are checked against the egress the sandbox has (cellvm.network).
        # allow_internet_access defaults to None, "not asked" (E2B: True): a
        # micro-VM has no egress unless asked, and only an explicit True is checked.
        e2b_network = None
        if not isinstance(network, str):
            e2b_network, network = network, "none"
        net_check = dict(allow_internet_access=allow_internet_access, secure=secure)
        name = image or template
        if os.environ.get(ADDR_ENV) and (name is None or _e2b_template(name)):
            # As Sandbox(): an E2B program's Sandbox.create() uses the agent
            # named by $CELLVM_ADDR (dev mode) instead of booting a VM.
            if timeout is not None:
                from . import lifetime
                lifetime.warn_dev_mode(os.environ[ADDR_ENV], "create(timeout=...)")
            if on_timeout:
                raise unsupported("create(lifecycle=...)", "a dev-mode agent ($CELLVM_ADDR) has "
                                  "no timeout to be paused at")
            sbx = cls(template=name, envs=envs, request_timeout=request_timeout, metadata=metadata)
            policy = (sbx._conn.hello or {}).get("network", "none")
            try:
                _network.check(e2b_network, egress=_network.egress_of(policy), **net_check,
                               place=f"the agent at {sbx.sandbox_id} (user code's network: "
                                     f"{policy})")
            except BaseException:
                sbx.close()
                raise
            return sbx
        egress = None
        if network == "none" and vmm == "qemu":
            # The host enforces them: the guest's proxy, the sandbox's egress keeper.
            egress = _network.egress_rules(e2b_network, **net_check)
        else:
            _network.check(e2b_network, egress=_network.egress_of(network), **net_check,
                           place=f"a micro-VM with network={network!r}")
        sbx = cls._boot(image=image, template=template, metadata=metadata,
                        egress=egress, on_timeout=on_timeout,
                         vmm=vmm, memory_mb=memory_mb, vcpus=vcpus, network=network, envs=envs,
                         timeout=timeout, request_timeout=request_timeout, wait_ready=wait_ready,
                         extra_cmdline=extra_cmdline, kernel=kernel, initramfs=initramfs,
                         rootfs=rootfs, boot_timeout=boot_timeout, detach=detach,
                         snapshot=snapshot)
        if auto_resume:
            sbx._auto_resume = True
        return sbx

    @classmethod
    def _boot(cls, image=None, template=None, metadata=None, **launch) -> "Sandbox":
        """Boots a micro-VM and returns a Sandbox connected to it (see create)."""
        from .launch import create_sandbox
        name = image or template
        if not _e2b_template(name):
            image = name
        elif (profile := _profile_image(name)) is not None:
            image = profile
        else:
            if name in PROFILE_TEMPLATES:
                logger.warning("template %r: %s is not built (make %s): booting the default "
                               "image", name, PROFILE_TEMPLATES[name], PROFILE_TEMPLATES[name])
            else:
                logger.info("%r is no cellvm image: booting the default image (E2B template "
                            "names are accepted, cellvm has its own images)", name)
            image = None
        self = create_sandbox(cls, image=image, metadata=metadata, template=name, **launch)
        self._metadata = dict(metadata or {})
        self._template = name
        return self

    @classmethod
    def _from_vm(cls, vm, conn, envs=None, request_timeout=None) -> "Sandbox":
        """A Sandbox over `conn` (HELLO done) that owns `vm` (kill() stops it)."""
        self = cls.__new__(cls)
        self._addr = vm.address or ""  # "" for hybrid vsock (CONNECT first: no plain address)
        # The sandbox id is the VM's registry key (`cellvm create` wrote it).
        self._id = (getattr(vm, "registry_key", None) or vm.address
                    or f"{getattr(vm, 'vmm', 'qemu')}-{vm.pid}")
        self._envs = {str(k): str(v) for k, v in (envs or {}).items()}
        self._request_timeout = request_timeout or DEFAULT_REQUEST_TIMEOUT
        self._conn = conn
        self._closed = False
        self._killed = False
        self._owner = None
        self._vm = vm
        self._started_at = _dt.datetime.now(_dt.timezone.utc)
        self._metadata = {}
        self._template = None
        self._entry = None
        self._restore_stages = None  # a sandbox restored from a template: its stages
        _register(self)
        return self

    # --- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the connection. In-flight requests are cancelled by the agent;
        contexts outlive the connection. (A Sandbox from connect() that shares
        a booted VM's connection leaves it open.)"""
        if not self._closed:
            self._closed = True
            if self._owner is None:
                self._close_listeners()
                self._conn.close()
                if getattr(self, "_entry", None) is not None and not self._killed:
                    from . import lifetime
                    lifetime.release(self)

    def _close_listeners(self) -> None:
        """The loopback listeners of get_host() and the file URLs closed. A
        pause keeps them (they reach the sandbox again once it resumes)."""
        for forward in self.__dict__.pop("_forwards", {}).values():
            forward.close()
        if "_file_urls" in self.__dict__:
            self.__dict__.pop("_file_urls").close()

    @_class_or_instance("_cls_kill")
    def kill(self, **opts) -> bool:
        """End the sandbox; True, or False if it had ended already (E2B: not
        found). A Sandbox from create() stops its VM (nothing is left: no
        process, no temp file), and so does one that connect() gave for it.
        One that connected to an agent only closes the connection: that
        agent's lifetime belongs to whoever started it.
        `Sandbox.kill(sandbox_id)` is the classmethod `_cls_kill`."""
        if self._owner is not None:
            self.close()
            return self._owner.kill()
        if self._killed:
            return False
        if getattr(self, "_paused", None) is not None:  # its record is all there is
            self._killed = True
            from . import pause
            self._close_listeners()
            return pause.kill(self._paused)
        # E2B: False for a sandbox that had ended (its timeout, a kill elsewhere).
        running = self._vm is None or not self._ended()
        self._killed = True
        self.close()
        if self._vm is not None:
            self._vm.kill()
            for view in _live(self._id):  # connect()'s views of this VM
                view._closed = True
        entry = getattr(self, "_entry", None)
        if entry is not None:
            from . import lifetime
            if self._vm is None:  # another process's VM: stopped host-side (`cellvm kill`)
                return lifetime.kill_entry(entry)
        return running

    @classmethod
    def _cls_kill(cls, sandbox_id: str, **opts) -> bool:
        """Kill the sandbox `sandbox_id`: every Sandbox of this process with
        that id as kill() does. Another process's micro-VM (its id, the
        registry key, or its address) is stopped host-side (`cellvm ps`);
        a paused one's record is deleted; an agent at an address is asked to
        power off (its init stops everything), which an agent in dev mode
        refuses (SandboxException). False if nothing answers."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.kill()
        known = _live(sandbox_id)
        if known:
            # Each is ended (its VM stopped, its resources freed); True if
            # one was running (E2B: False for a sandbox that had ended).
            return any([s.kill() for s in known])
        from . import lifetime
        entry = lifetime.find(sandbox_id)
        if entry is not None:  # another process's VM: stopped host-side (`cellvm ps`)
            return lifetime.kill_entry(entry)
        from . import pause
        paused = pause.find(sandbox_id)
        if paused is not None:
            return pause.kill(paused)
        try:
            other = cls(addr=sandbox_id, request_timeout=opts.get("request_timeout"))
        except (SandboxNotFoundException, InvalidArgumentException):
            return False
        try:
            other._call(_wire.SHUTDOWN, {"poweroff": True})
        except SandboxException as e:
            if e.code == "unsupported":
                raise SandboxException(
                    f"cannot kill sandbox {sandbox_id}: its agent runs in dev mode (not under "
                    "cellvm-init); stop the agent's process instead", code=e.code) from None
            raise
        finally:
            other.close()
        return True

    def shutdown(self, poweroff: bool = True, timeout: float = 60.0) -> None:
        """Ask the guest to shut down cleanly: its init stops every process
        (SIGTERM, a grace period, SIGKILL), syncs, unmounts, then powers off
        (default) or takes its configured action (reboot; with reboot=k a
        Firecracker VM exits). For a VM from create(), waits up to `timeout`
        s for the VMM to exit, then stops it and removes its files as kill()
        does. Raises SandboxException if the agent is not under cellvm-init
        (dev mode)."""
        self._call(_wire.SHUTDOWN, {"poweroff": bool(poweroff)})
        self.close()
        self._killed = self._vm is not None  # a VM is gone now; an agent may reboot
        if self._vm is None:
            return
        deadline = time.monotonic() + timeout
        while self._vm.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._vm.kill()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.kill()

    def is_running(self, request_timeout: Optional[float] = None) -> bool:
        """True while the agent answers a ping."""
        try:
            self.ping(request_timeout=request_timeout)
            return True
        except (SandboxException, _wire.ConnectionClosed):
            return False

    @_class_or_instance("_cls_set_timeout")
    def set_timeout(self, timeout: int, **opts) -> None:
        """E2B's set_timeout: the sandbox now ends `timeout` seconds from now
        (extends or shortens; at most $CELLVM_MAX_TIMEOUT, 24 h). Recorded in
        the registry and sent to the guest's init (SET_DEADLINE). An agent in
        dev mode has no lifetime (whoever started it ends it): a warning, no
        effect. `Sandbox.set_timeout(sandbox_id, timeout)` is `_cls_set_timeout`."""
        from . import lifetime
        owner = self._root
        self._check_timeout_pause()
        if getattr(owner, "_paused", None) is not None:
            raise SandboxException(f"sandbox {self.sandbox_id} is paused: it has no timeout "
                                   "until connect() resumes it (connect(timeout=...))")
        if self._ended():  # E2B's 404
            raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found")
        entry = getattr(owner, "_entry", None)
        if entry is None:
            lifetime.warn_dev_mode(self.sandbox_id, "set_timeout")
            return
        lifetime.set_timeout_of(self, entry, timeout)

    @classmethod
    def _cls_set_timeout(cls, sandbox_id: str, timeout: int, **opts) -> None:
        """As set_timeout(), for the sandbox `sandbox_id` (this process's or
        another's, through the registry): SandboxNotFoundException (E2B's) if
        there is none."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.set_timeout(timeout)
        known = _live(sandbox_id)
        if known:
            return known[0].set_timeout(timeout)
        from . import lifetime
        entry = lifetime.find(sandbox_id)
        if entry is not None:
            return lifetime.set_timeout_of(None, entry, timeout)
        cls._cls_get_info(sandbox_id, **opts)  # dev mode: found (no effect) or not found
        lifetime.warn_dev_mode(sandbox_id, "set_timeout")

    @_class_or_instance("_cls_update_network")
    def update_network(self, network: Dict, **opts) -> None:
        """E2B's update_network: `network` (allow_out, deny_out,
        allow_internet_access; what it omits is cleared) replaces the egress
        rules the host enforces for connections made from now on
        (docs/NETWORK.md); a sandbox created without rules gets its egress
        proxy now, and this object's commands and cells its variables.
        A QEMU micro-VM with network='none' only (InvalidArgumentException
        elsewhere). `Sandbox.update_network(sandbox_id, network)` is
        `_cls_update_network`."""
        owner = self._root
        if getattr(owner, "_paused", None) is not None:
            raise SandboxException(f"sandbox {self.sandbox_id} is paused: connect() resumes it")
        entry = getattr(owner, "_entry", None)
        if entry is None:
            raise InvalidArgumentException(
                f"the agent at {self.sandbox_id} is not a micro-VM of this host: its egress "
                "is its own (--network); update_network needs a QEMU sandbox")
        info = type(self)._cls_update_network(entry.key, network)
        owner._envs = {**info.get("envs", {}), **owner._envs}

    @classmethod
    def _cls_update_network(cls, sandbox_id: str, network: Dict, **opts) -> Dict:
        """As update_network(), for the sandbox `sandbox_id` (any process's,
        through the registry); SandboxNotFoundException if there is none.
        Returns `cellvm egress --json`'s answer (sandbox_id, rules, envs)."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.update_network(network)
        from . import host
        if not isinstance(network, dict):
            raise InvalidArgumentException(
                "network must be E2B's update ({'allow_out': [...], 'deny_out': [...], "
                "'allow_internet_access': bool})")
        net = {k: v for k, v in network.items() if k != "allow_internet_access"}
        body = _network.rules_body(net, network.get("allow_internet_access"))
        return host.egress(str(sandbox_id), body)

    @_class_or_instance("_cls_get_info")
    def get_info(self, request_timeout: Optional[float] = None, **opts) -> SandboxInfo:
        """E2B's SandboxInfo for this sandbox. `Sandbox.get_info(sandbox_id)`
        is the classmethod `_cls_get_info`."""
        owner = self._root
        self._check_timeout_pause()
        if getattr(owner, "_paused", None) is not None:
            from . import pause
            rec = pause.find(owner._paused["key"])
            if rec is None:
                raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found")
            return pause.info(rec)
        vm = self._vm
        if vm is not None:
            cpus, memory = getattr(vm, "vcpus", 0), getattr(vm, "memory_mb", 0)
        else:
            cpus, memory = _host_cpus_and_memory(self._addr)
        hello = self._conn.hello or {}
        owner = self._root
        if getattr(owner, "_entry", None) is not None:
            from . import lifetime
            return lifetime.info_of(owner, hello)
        return SandboxInfo(
            sandbox_id=self.sandbox_id, sandbox_domain=None,
            template_id=getattr(vm, "image", None) if vm is not None else None,
            name=self._template, metadata=dict(self._metadata), started_at=self._started_at,
            end_at=None, state=SandboxState.RUNNING, cpu_count=cpus, memory_mb=memory,
            envd_version=str(hello.get("agent_version", "")),
            allow_internet_access=(getattr(vm, "network", "none") == "user") if vm is not None else None)

    @classmethod
    def _cls_get_info(cls, sandbox_id: str, **opts) -> SandboxInfo:
        """SandboxInfo of the sandbox `sandbox_id` (one of this process's, one
        in the registry or the paused store, or the agent at that address);
        SandboxNotFoundException if there is none."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.get_info()
        known = _live(sandbox_id)
        if known:
            return known[0].get_info()
        from . import lifetime
        entry = lifetime.find(sandbox_id)
        if entry is not None:  # another process's VM: what the registry knows
            return lifetime.info_from_entry(entry)
        from . import pause
        paused = pause.find(sandbox_id)
        if paused is not None:
            return pause.info(paused)
        try:
            other = cls(addr=sandbox_id, request_timeout=opts.get("request_timeout"))
        except (SandboxNotFoundException, InvalidArgumentException):
            raise SandboxNotFoundException(f"Sandbox {sandbox_id} not found") from None
        try:
            return other.get_info()
        finally:
            other.close()

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
             next_token: Optional[str] = None, order: Optional[str] = None,
             **opts) -> "SandboxPaginator":
        """E2B's Sandbox.list(): a SandboxPaginator over the running
        sandboxes this process can reach, newest first (`order="asc"`:
        oldest first): the ones it created or connected to and has not
        closed, every live VM of this user in the registry (whichever
        process created it; the sweep first ends those past deadline +
        grace, `cellvm ps`), and the agent named by $CELLVM_ADDR if it
        answers.
        `query` (SandboxQuery) filters by metadata, state, started_after and
        template; `limit` is the page size."""
        return SandboxPaginator(query=query, limit=limit, next_token=next_token, order=order,
                                sandbox_cls=cls)

    def get_host(self, port: int) -> str:
        """E2B's get_host(port): "host:port" where a service the sandbox
        listens on is reached from here, over plain HTTP or TCP. For an agent
        in dev mode that is this host ("localhost:PORT", or the agent's host
        for tcp:HOST:P). For a micro-VM it is a listener on this host's
        loopback ("127.0.0.1:N", one per port, until the Sandbox is closed or
        killed; a pause keeps it for the resumed sandbox)
        tunnelled through the agent to the port on the guest's loopback
        (cellvm/ports.py): the guest needs no network."""
        port = int(port)
        if not 0 < port < 65536:
            raise InvalidArgumentException(f"get_host({port}): a port is 1 to 65535")
        owner = self._root
        if self._vm is None and getattr(owner, "_entry", None) is None:  # dev mode
            family, sockaddr = _wire.parse_address(self._addr)
            if self._addr.startswith("unix:"):
                return f"localhost:{port}"
            if self._addr.startswith("tcp:"):
                return f"{sockaddr[0]}:{port}"
        if self._closed or owner._closed:
            raise SandboxException(f"get_host({port}): the Sandbox was closed (connect() again)")
        if "ports" not in ((owner._conn.hello or {}).get("capabilities") or ()):
            raise SandboxException(
                f"get_host({port}): the agent of sandbox {self.sandbox_id} has no ports service "
                "(an image older than it); reach the service from inside the sandbox instead")
        from . import ports
        forwards = owner.__dict__.setdefault("_forwards", {})
        with _LISTENERS_LOCK:
            if port not in forwards:
                forwards[port] = ports.Forward(lambda: owner._conn, port)
            return forwards[port].host

    @property
    def sandbox_domain(self) -> Optional[str]:
        """E2B's sandbox domain: None (no cloud domain)."""
        return None

    @property
    def traffic_access_token(self) -> Optional[str]:
        """E2B's token for a sandbox's public URLs (network
        allow_public_traffic=False): None, as E2B's when there is none; a
        cellvm sandbox has no public URL (get_host())."""
        return None

    @_class_or_instance("_cls_get_metrics")
    def get_metrics(self, start: Optional[_dt.datetime] = None, end: Optional[_dt.datetime] = None,
                    **opts) -> List[SandboxMetrics]:
        """E2B's get_metrics(): here one sample taken now, from the agent's
        counters (SYS_STATS, docs/PROTOCOL.md section 11: CPU use over 0.2 s,
        memory from /proc/meminfo, the disk of / as `df /` counts it). E2B
        returns the samples it kept between `start` and `end`; cellvm keeps
        none (`cellvm serve` does), so a window that ends before now gives []."""
        if self._ended():  # E2B's 404
            raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found")
        now = _dt.datetime.now(_dt.timezone.utc)
        if end is not None and (end if end.tzinfo else end.astimezone()) < now:
            return []
        a = self._call(_wire.SYS_STATS, {})
        time.sleep(0.2)
        b = self._call(_wire.SYS_STATS, {})
        total = b["cpu_total_ticks"] - a["cpu_total_ticks"]
        busy = b["cpu_busy_ticks"] - a["cpu_busy_ticks"]
        return [SandboxMetrics(
            cpu_count=b["cpu_count"], cpu_used_pct=round(100.0 * busy / total, 2) if total > 0 else 0.0,
            disk_total=b["disk_total"], disk_used=b["disk_used"],
            mem_total=b["mem_total"], mem_used=b["mem_total"] - b["mem_available"],
            mem_cache=b["mem_cache"], timestamp=now)]

    @classmethod
    def _cls_get_metrics(cls, sandbox_id: str, start: Optional[_dt.datetime] = None,
                         end: Optional[_dt.datetime] = None, **opts) -> List[SandboxMetrics]:
        """get_metrics() of the sandbox `sandbox_id`; SandboxNotFoundException if there is none."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.get_metrics(start, end)
        known = _live(sandbox_id)
        if known:
            return known[0].get_metrics(start, end)
        from . import lifetime
        entry = lifetime.find(sandbox_id)
        try:
            if entry is not None:  # another process's VM: measured over its channel
                other = lifetime.connect_entry(cls, entry, None, opts.get("request_timeout"), None,
                                               extend=False)
            else:
                other = cls(addr=sandbox_id, request_timeout=opts.get("request_timeout"))
        except (SandboxNotFoundException, InvalidArgumentException):
            raise SandboxNotFoundException(f"Sandbox {sandbox_id} not found") from None
        try:
            return other.get_metrics(start, end)
        finally:
            other.close()

    def download_url(self, path: str, user: Optional[str] = None,
                     use_signature_expiration: Optional[int] = None) -> str:
        """E2B's signed URL to download `path` (as `user`) with a plain HTTP
        GET, valid for `use_signature_expiration` s (None: while the Sandbox
        is open). Served on this host's loopback over the sandbox's
        connection (cellvm/file_urls.py); a URL is signed for one file, one
        operation and one user."""
        return self._file_server().url(path, "read", user, use_signature_expiration)

    def upload_url(self, path: Optional[str] = None, user: Optional[str] = None,
                   use_signature_expiration: Optional[int] = None) -> str:
        """E2B's signed URL to upload to `path` (as `user`) with a plain HTTP
        POST: multipart/form-data (each file at `path`, else at its
        filename) or an octet-stream body; answers E2B's list of the written
        entries. Served as download_url() is."""
        return self._file_server().url(path, "write", user, use_signature_expiration)

    def _file_server(self):
        owner = self._root
        if self._closed or owner._closed:
            raise SandboxException("file URLs: the Sandbox was closed (connect() again)")
        from . import file_urls
        with _LISTENERS_LOCK:
            if "_file_urls" not in owner.__dict__:
                owner._file_urls = file_urls.FileServer(owner)
            return owner._file_urls

    @_class_or_instance("_cls_pause")
    def pause(self, keep_memory: bool = True, **opts) -> bool:
        """E2B's pause(): saves the sandbox whole (memory, files, running
        processes; docs/SNAPSHOTS.md) and stops its VMM; True, or False if it
        was paused already. `connect()` (or `Sandbox.connect(sandbox_id)`)
        resumes it; list() shows it with state "paused"; kill() deletes it.
        An execution in flight meanwhile ends with the connection.
        `keep_memory=False` (E2B's filesystem-only pause, QEMU micro-VMs):
        only the files it changed are kept, and connect() boots it anew with
        them (no variables or processes; docs/SNAPSHOTS.md).
        `Sandbox.pause(sandbox_id)` is the classmethod `_cls_pause`."""
        if not isinstance(keep_memory, bool):
            raise InvalidArgumentException(f"keep_memory must be True or False, not {keep_memory!r}")
        if self._ended():  # killed, or past its end (E2B's 404)
            raise SandboxNotFoundException(f"Sandbox {self.sandbox_id} not found")
        from . import pause
        return pause.pause(self, keep_memory)

    @classmethod
    def _cls_pause(cls, sandbox_id: str, keep_memory: bool = True, **opts) -> bool:
        """pause() of the sandbox `sandbox_id`: this process's, or another
        process's VM (the registry: saved over its QMP socket); False if it
        is paused already, SandboxNotFoundException if there is none."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.pause(keep_memory)
        known = [s for s in _live(sandbox_id) if s._vm is not None]
        if known:
            return known[0].pause(keep_memory)
        from . import lifetime, pause
        if pause.find(sandbox_id) is not None:
            return False
        entry = lifetime.find(sandbox_id)
        if entry is None:
            raise SandboxNotFoundException(f"Sandbox {sandbox_id} not found")
        return pause.pause_entry(entry, keep_memory)

    beta_pause = pause

    @_class_or_instance("_cls_fork")
    def fork(self, timeout: Optional[int] = None, count: Optional[int] = None,
             **opts) -> List[Union["Sandbox", Exception]]:
        """E2B's fork(): the sandbox is saved once, whole, and runs on (its id,
        deadline, variables and processes stay); `count` (default 1, at most
        100) new sandboxes are made from that save, each a copy with its own
        id, fresh entropy and reseeded random generators, the files,
        variables and processes of that moment, and a deadline `timeout`
        seconds from now (default 300). One Sandbox or exception per fork
        (each fails on its own, as E2B's: RateLimitException past the
        sandbox limit). QEMU micro-VMs restored from a template
        (docs/SNAPSHOTS.md, "Fork"). `Sandbox.fork(sandbox_id)` is the
        classmethod `_cls_fork`."""
        from . import fork
        return fork.fork(type(self), self, timeout, count)

    @classmethod
    def _cls_fork(cls, sandbox_id: str, timeout: Optional[int] = None,
                  count: Optional[int] = None, logger=None,
                  **opts) -> List[Union["Sandbox", Exception]]:
        """fork() of the sandbox `sandbox_id`: this process's, or another
        process's VM (the registry); SandboxNotFoundException if none runs."""
        if isinstance(sandbox_id, Sandbox):
            return sandbox_id.fork(timeout, count)
        from . import fork
        return fork.fork(cls, sandbox_id, timeout, count)

    # --- E2B's snapshots API (cellvm/snapshots.py) ------------------------------

    @_class_or_instance("_cls_create_snapshot")
    def create_snapshot(self, name: Optional[str] = None, **opts) -> "SnapshotInfo":
        """E2B's create_snapshot(): the sandbox's whole state kept (it runs on)
        for new sandboxes, made by `Sandbox.create(info.snapshot_id)` as often
        as asked, each a copy of its own; a `name` given again names the new
        snapshot (docs/SNAPSHOTS.md, "Kept snapshots").
        `Sandbox.create_snapshot(sandbox_id)` is the classmethod."""
        from . import snapshots
        return snapshots.create(self, name)

    @classmethod
    def _cls_create_snapshot(cls, sandbox_id: str, name: Optional[str] = None,
                             **opts) -> "SnapshotInfo":
        from . import snapshots
        return snapshots.create(sandbox_id, name)

    @_class_or_instance("_cls_list_snapshots")
    def list_snapshots(self, limit: Optional[int] = None, next_token: Optional[str] = None,
                       name: Optional[str] = None, **opts) -> SnapshotPaginator:
        """E2B's list_snapshots(): this sandbox's snapshots, newest first
        (`Sandbox.list_snapshots()`: all of them, or `sandbox_id`'s)."""
        return SnapshotPaginator(self.sandbox_id, limit, next_token, name)

    @classmethod
    def _cls_list_snapshots(cls, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                            next_token: Optional[str] = None, name: Optional[str] = None,
                            **opts) -> SnapshotPaginator:
        return SnapshotPaginator(sandbox_id, limit, next_token, name)

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, **opts) -> bool:
        """E2B's delete_snapshot(): True, or False when there is no such
        snapshot. Sandboxes made of it run on."""
        from . import snapshots
        return snapshots.delete(snapshot_id)

    # --- introspection -------------------------------------------------------

    def _sandbox_envs(self) -> Dict[str, str]:
        """The environment every command and code context of this sandbox
        gets: E2B's default variables (E2B_SANDBOX, E2B_SANDBOX_ID: this
        sandbox's id, E2B_TEMPLATE_ID: get_info()'s template_id, when it has
        one; no E2B_TEAM_ID, cellvm has no teams), then the sandbox's own
        envs over them. Computed at each use, so a sandbox restored from a
        template or resumed has its own id."""
        owner = self._root
        entry, vm = getattr(owner, "_entry", None), owner._vm
        template = (entry.image if entry is not None else getattr(vm, "image", None)) or None
        envs = {"E2B_SANDBOX": "true", "E2B_SANDBOX_ID": self.sandbox_id}
        if template:
            envs["E2B_TEMPLATE_ID"] = template
        return {**envs, **self._envs}

    @property
    def sandbox_id(self) -> str:
        """E2B's sandbox id. A micro-VM's is its registry key (`qemu-1a2b3c4d`:
        lower case, a DNS label; `cellvm ps` shows it, `cellvm kill` takes
        it), kept across pause and resume; an agent reached by its address
        (dev mode) has that address."""
        return self._id

    @property
    def vmm_pid(self) -> Optional[int]:
        """The VMM's pid for a Sandbox from create(), else None."""
        return self._vm.pid if self._vm is not None else None

    @property
    def vm(self):
        """The VM object of a Sandbox from create() (`launch.CliVM`), else None."""
        return self._vm

    @property
    def hello(self) -> dict:
        """The agent's HELLO reply: version, capabilities, pid, boot stamps, ..."""
        return self._conn.hello

    @property
    def boot_report(self) -> BootReport:
        """The handshake's boot stamps as per-stage durations. In a VM the
        stamps count from the kernel's start (CLOCK_BOOTTIME), so a
        `kernel_start` stamp of 0 makes the kernel's own time the first stage."""
        stamps = dict(self._conn.hello.get("boot") or {})
        if "kernel_to_init" in stamps:
            stamps.setdefault("kernel_start", 0)
        return BootReport(stamps)

    @property
    def restore_report(self) -> Optional[BootReport]:
        """For a sandbox restored from a template or resumed after pause():
        the host's stages in time order (`vmm_spawn`, `state_loaded`,
        `running`, `handshake`, `new_generation`, `deadline`; ns since the
        VMM was spawned), as a BootReport; None for a cold boot. (Its
        boot_report is the template's boot, saved with it.)"""
        stages = getattr(self, "_restore_stages", None)
        return stages.report() if stages is not None else None

    def ping(self, payload=None, request_timeout: Optional[float] = None) -> dict:
        """Round trip to the agent; returns {payload?, time_ns}."""
        body = {} if payload is None else {"payload": payload}
        return self._call(_wire.PING, body, request_timeout)

    def set_time(self, realtime_ns: Optional[int] = None, request_timeout: Optional[float] = None) -> None:
        """Sets the guest's clock (default: this host's time), e.g. after a snapshot restore."""
        ns = time.time_ns() if realtime_ns is None else int(realtime_ns)
        self._call(_wire.SET_TIME, {"realtime_ns": ns}, request_timeout)

    def add_entropy(self, seed: Optional[bytes] = None, request_timeout: Optional[float] = None) -> int:
        """Credits `seed` (default: 64 bytes of this host's os.urandom) to the guest's
        CRNG and reseeds it, so clones of one snapshot diverge. Returns the bits credited."""
        seed = os.urandom(64) if seed is None else bytes(seed)
        return self._call(_wire.ADD_ENTROPY, {"seed": seed}, request_timeout)["credited_bits"]

    @property
    def files(self):
        """E2B's sandbox.files: read, write, list, watch_dir, ... (cellvm.files.Filesystem)."""
        from .files import Filesystem
        return Filesystem(self)

    @property
    def commands(self):
        """E2B's sandbox.commands: run, list, kill, send_stdin (cellvm.commands.Commands)."""
        from .commands import Commands
        return Commands(self)

    @property
    def pty(self):
        """E2B's sandbox.pty: create, connect, send_stdin, resize, kill (cellvm.pty.Pty)."""
        from .pty import Pty
        return Pty(self)

    @property
    def git(self):
        """E2B's sandbox.git: clone, status, add, commit, push, pull, ... by
        running git in the sandbox (cellvm.git.Git)."""
        from .git import Git
        return Git(self.commands)

    # --- execution -----------------------------------------------------------

    def run_code(
        self,
        code: str,
        language: Optional[str] = None,
        context: Optional[Union[Context, str]] = None,
        on_stdout: Optional[OutputHandler[OutputMessage]] = None,
        on_stderr: Optional[OutputHandler[OutputMessage]] = None,
        on_result: Optional[OutputHandler[Result]] = None,
        on_error: Optional[OutputHandler[ExecutionError]] = None,
        envs: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
        request_timeout: Optional[float] = None,
    ) -> Execution:
        """Run `code` in `context` (default: the default context) and return
        everything it produced. Callbacks run in the calling thread as output
        arrives. `timeout` (seconds, default 300, 0 = none) interrupts the cell
        and raises TimeoutException. Ctrl-C (KeyboardInterrupt) cancels the
        execution in the sandbox and propagates."""
        return self._run_code(code, language, context, on_stdout, on_stderr, on_result, on_error,
                              envs, timeout, request_timeout)

    def _run_code(self, code, language, context, on_stdout, on_stderr, on_result, on_error,
                  envs, timeout, request_timeout, abort=None) -> Execution:
        """run_code(); once `abort` (a threading.Event) is set, from any
        thread, the execution is cancelled in the sandbox as on Ctrl-C and
        ExecutionAborted is raised (AsyncSandbox's task cancellation)."""
        if language and context:
            raise InvalidArgumentException("You can provide context or language, but not both at the same time.")
        language = normalize_language(language)
        timeout = None if timeout == 0 else (timeout or DEFAULT_TIMEOUT)
        request_timeout = request_timeout or self._request_timeout

        body = {"code": code}
        ctx = _context_id(context)
        if ctx is not None:
            body["context"] = ctx
        elif language:
            body["language"] = language  # its default context, created on first use
        body["sandbox_envs"] = self._sandbox_envs()  # set once in the context (E2B)
        if envs:
            body["envs"] = {str(k): str(v) for k, v in envs.items()}
        if timeout:
            body["timeout_ms"] = max(1, int(timeout * 1000))

        req = self._request(_wire.EXECUTE, body)
        execution = Execution()
        done = False
        try:
            done = self._collect(req, execution, on_stdout, on_stderr, on_result, on_error,
                                 timeout, request_timeout, abort)
        except SandboxException as e:
            # kill() from another thread or task closed the connection under
            # the execution, or the sandbox ended (its timeout, a kill from
            # elsewhere): E2B raises its TimeoutException saying so.
            if isinstance(e, (TimeoutException, ExecutionAborted)):
                raise
            if not (self._was_killed() or (getattr(e, "connection_failed", False)
                                           and self._ended(_END_WAIT_S))):
                raise
            raise format_sandbox_killed_error() from None
        finally:
            if not done:  # Ctrl-C, a callback raised, abort, or the guard fired
                self._cancel(req, request_timeout)
        return execution

    def _was_killed(self) -> bool:
        return self._killed or (self._owner is not None and self._owner._killed)

    def _collect(self, req, execution, on_stdout, on_stderr, on_result, on_error,
                 timeout, request_timeout, abort=None) -> bool:
        """Turn the request's messages into `execution`; True once terminal."""
        started = None  # monotonic time of the last message once the cell runs
        stream = _Messages(req)
        while True:
            # Seen within _messages.POLL_S even while no message arrives.
            if abort is not None and abort.is_set():
                raise ExecutionAborted("the execution was cancelled")
            try:
                mtype, msg = stream.next()
            except TimeoutError:
                # The agent enforces `timeout`; this only catches an agent that
                # stopped answering.
                if started is not None and timeout and time.monotonic() - started > timeout + request_timeout:
                    raise format_request_timeout_error() from None
                continue
            if started is not None or mtype == _wire.EXEC_INPUT:
                started = time.monotonic()

            if mtype == _wire.EXEC_INPUT:
                execution.execution_count = msg.get("execution_count")
            elif mtype == _wire.STREAM:
                text = msg.get("text", "")
                is_err = msg.get("name") == "stderr"
                (execution.logs.stderr if is_err else execution.logs.stdout).append(text)
                handler = on_stderr if is_err else on_stdout
                if handler:
                    handler(OutputMessage(text, time.time_ns(), is_err))
            elif mtype in (_wire.DISPLAY, _wire.RESULT):
                result = Result.from_bundle(msg.get("data") or {}, is_main_result=mtype == _wire.RESULT)
                execution.results.append(result)
                if on_result:
                    on_result(result)
            elif mtype == _wire.EXEC_ERROR:
                if execution.error is None and msg.get("name") == "ContextRestarted":
                    # The context's process died (os._exit, a crash, a kill
                    # after an interrupt) and was started anew: E2B's server
                    # ends the execution with this (code-interpreter-server
                    # messaging.py, the kernel's "restarting" status).
                    execution.error = ExecutionError("ContextRestarting", "Context was restarted",
                                                     "", traceback_lines=[])
                    if on_error:
                        on_error(execution.error)
                elif execution.error is None:
                    tb = msg.get("traceback") or []
                    lines = [str(x) for x in tb] if isinstance(tb, list) else [str(tb)]
                    # E2B's server joins ipykernel's entries with "".
                    execution.error = ExecutionError(msg.get("name", ""), msg.get("value", ""),
                                                     "".join(lines), traceback_lines=lines)
                    if on_error:
                        on_error(execution.error)
            elif mtype == _wire.OK:
                if execution.execution_count is None:
                    execution.execution_count = msg.get("execution_count")
                return True
            elif mtype == _wire.ERROR:
                exc = from_agent_error(_wire.AgentError(msg.get("code", "internal"), msg.get("message", "")))
                exc.execution = execution  # what the cell produced before it ended
                raise exc
            # Unknown message types are ignored (forward compatibility).

    def _cancel(self, req, request_timeout):
        """Cancel an execution we stopped waiting for and let it wind down."""
        try:
            self._conn.call(_wire.CANCEL, {"id": req.id}, timeout=request_timeout)
        except (_wire.AgentError, _wire.ConnectionClosed, _wire.ProtocolError, TimeoutError):
            return  # already finished, or the connection is gone
        deadline = time.monotonic() + _DRAIN_S
        stream = _Messages(req)
        while time.monotonic() < deadline:
            try:
                mtype, _ = stream.next()
            except TimeoutError:
                continue
            except SandboxException:  # connection gone: nothing to drain
                return
            if mtype in _wire.TERMINAL:
                return

    def interrupt(self, context: Optional[Union[Context, str]] = None,
                  request_timeout: Optional[float] = None) -> None:
        """Raise KeyboardInterrupt in the cell running in `context` (default
        context if None). The running run_code returns with that error."""
        ctx = _context_id(context)
        self._call(_wire.INTERRUPT, {} if ctx is None else {"context": ctx}, request_timeout)

    # --- contexts ------------------------------------------------------------

    def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                            request_timeout: Optional[float] = None) -> Context:
        """A new, empty namespace in its own process, working in `cwd`. As in
        E2B (whose server runs `%cd cwd` in the new kernel and ignores what it
        prints), a `cwd` that is not a directory leaves a Python context in the
        default working directory, described with the `cwd` asked for; for
        another language (E2B: a 500) this falls back to the default directory
        (logged as a warning)."""
        body = {}
        language = normalize_language(language)
        if language:
            body["language"] = language
        if cwd:
            body["cwd"] = cwd
        try:
            reply = self._call(_wire.CONTEXT_CREATE, body, request_timeout)
        except InvalidArgumentException as e:
            if not cwd or "is not a directory" not in str(e):
                raise
            logger.warning("create_code_context: %s; the context works in the default directory", e)
            del body["cwd"]
            reply = self._call(_wire.CONTEXT_CREATE, body, request_timeout)
        return Context.from_json(reply)

    def list_code_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        reply = self._call(_wire.CONTEXT_LIST, {}, request_timeout)
        return [Context.from_json(c) for c in reply.get("contexts", [])]

    def restart_code_context(self, context: Union[Context, str],
                             request_timeout: Optional[float] = None) -> None:
        """Fresh process and namespace under the same id."""
        self._call(_wire.CONTEXT_RESTART, {"context": _context_id(context)}, request_timeout)

    def remove_code_context(self, context: Union[Context, str],
                            request_timeout: Optional[float] = None) -> None:
        self._call(_wire.CONTEXT_REMOVE, {"context": _context_id(context)}, request_timeout)

    delete_code_context = remove_code_context

    # --- plumbing ------------------------------------------------------------

    def _check_timeout_pause(self):
        """E2B's lifecycle on_timeout "pause": past its deadline the sandbox is
        paused by its keeper (or about to be), and this Sandbox then stands for
        the paused one (pause.after_timeout)."""
        owner = self._root
        entry = getattr(owner, "_entry", None)
        if (getattr(owner, "_paused", None) is None and entry is not None
                and entry.on_timeout == "pause" and time.time() * 1000 >= entry.deadline_ms):
            from . import pause
            pause.after_timeout(owner)

    def _past_deadline(self) -> bool:
        """A VM in the registry (not paused at its timeout) whose deadline has
        passed: it has ended or is ending (its guest shuts down, its keeper
        kills the VMM), as E2B's sandbox is gone at its timeout. The
        registry is asked only once this process's view of the deadline has
        passed (another process may have moved it)."""
        owner = self._root
        entry = getattr(owner, "_entry", None)
        if (entry is None or entry.on_timeout == "pause"
                or getattr(owner, "_paused", None) is not None
                or time.time() * 1000 < entry.deadline_ms):
            return False
        from . import lifetime
        try:
            fresh = lifetime.find(entry.key)
        except SandboxException:
            return False
        if fresh is None:
            return True
        entry.deadline_ms = fresh.deadline_ms
        return time.time() * 1000 >= fresh.deadline_ms

    def _ended(self, wait: float = 0.0) -> bool:
        """The sandbox is no longer running: kill() ended it, its VMM is gone
        (killed elsewhere, or it ended at its timeout), or it is past its
        deadline. `wait`: seconds to keep looking while the VMM still runs
        (a failed connection may be seen before the VMM's exit). False for an
        agent in dev mode, whose lifetime is its starter's."""
        if self._was_killed():
            return True
        owner = self._root
        if getattr(owner, "_paused", None) is not None:
            return False
        vm, entry = owner._vm, getattr(owner, "_entry", None)
        if vm is None and entry is None:
            return False
        if self._past_deadline():
            return True
        if vm is None:  # another process's VM: the registry says whether it runs
            from . import lifetime
            try:
                return lifetime.find(entry.key) is None
            except SandboxException:
                return False
        alive = getattr(vm, "alive", None)
        if alive is None:  # a VM object that cannot tell
            return False
        until = time.monotonic() + wait
        while alive():
            if time.monotonic() >= until:
                return False
            time.sleep(0.05)
        return True

    def _connection_error(self, err, mtype=None) -> SandboxException:
        """The exception for a request whose connection failed: E2B's for a
        sandbox that is not running (it has ended), else a SandboxException
        saying what failed."""
        owner = self._root
        # (closed here: no VMM exit to wait for)
        if self._ended(0.0 if owner._closed else _END_WAIT_S):
            return format_sandbox_not_running_error(self.sandbox_id, mtype in _CODE_INTERPRETER)
        return SandboxException(f"connection to the agent failed: {err}")

    def _preflight(self, mtype=None):
        """The checks before a request: a sandbox paused at its timeout, or
        paused with auto_resume (resumed now), or resumed through another
        view; a paused or closed one raises SandboxException, one that has
        ended (killed, past its deadline) E2B's error for that."""
        owner = self._root
        self._check_timeout_pause()
        if getattr(owner, "_paused", None) is not None and owner._auto_resume:
            self.connect()  # E2B's auto_resume: a request resumes it
        elif (owner is not self and getattr(self, "_paused", None) is not None
              and owner._paused is None and not owner._closed):  # resumed through another view
            self._conn, self._vm, self._closed, self._paused = owner._conn, owner._vm, False, None
        if getattr(self, "_paused", None) is not None:
            raise SandboxException(f"sandbox {self.sandbox_id} is paused: connect() resumes it")
        if self._was_killed() or self._past_deadline():
            raise format_sandbox_not_running_error(self.sandbox_id, mtype in _CODE_INTERPRETER)
        if self._closed and self._owner is not None:  # a closed view of a shared connection
            raise SandboxException("connection to the agent failed: the Sandbox was closed")

    def _request(self, mtype, body):
        self._preflight(mtype)
        try:
            req = self._conn.request(mtype, body)
        except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
            raise self._connection_error(e, mtype) from None
        failed = getattr(self._conn, "_closed", None)
        if isinstance(failed, BaseException):  # the send failed: the request never went
            raise self._connection_error(failed, mtype) from None
        req.mtype = mtype
        return req

    def _open_extra_connection(self):
        """A second connection to the same agent (for a streamed download);
        the main one, shared, when the VM's channel takes one client only."""
        if self._vm is not None:
            return _SharedConnection(self._conn)
        return _open_connection(self._addr, self._request_timeout)

    def _call(self, mtype, body, request_timeout=None, not_found=None, rpc=False):
        """The OK body of request `mtype` (see _wait). `rpc`: one of envd's
        unary RPCs in E2B (files' list, stat, remove, rename, make_dir;
        commands' list, kill, stdin), which E2B's Python SDK ends at
        `request_timeout` with its DEADLINE_EXCEEDED error (e2b/envd/rpc.py)."""
        req = self._request(mtype, body)
        try:
            return self._wait(req, request_timeout, not_found)
        except TimeoutException as e:
            if not rpc or e.code != "request_timeout":
                raise
            raise format_long_request_timeout_error() from None

    def _wait(self, req, request_timeout=None, not_found=None):
        """The OK body of `req`, or its ERROR raised as a SandboxException
        (`not_found`: the class for code not_found, see from_agent_error)."""
        try:
            for t, b in req.messages(timeout=request_timeout or self._request_timeout):
                if t == _wire.OK:
                    return b
                if t == _wire.ERROR:
                    raise from_agent_error(_wire.AgentError(b.get("code", "internal"), b.get("message", "")),
                                           not_found)
        except TimeoutError:
            raise format_request_timeout_error() from None
        except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
            raise self._connection_error(e, getattr(req, "mtype", None)) from None
        raise SandboxException("request ended without a terminal message")
