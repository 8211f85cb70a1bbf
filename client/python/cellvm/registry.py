"""The per-user registry of live sandboxes (docs/VMM.md, "Live sandboxes").

Every VMM that cellvm starts is recorded in a runtime directory
($CELLVM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/cellvm, else /tmp/cellvm-<uid>;
mode 0700, owned by the user) as one file `<key>.sandbox` of `name=value`
lines, so that any cellvm process of the same user (this SDK, the `cellvm`
CLI in C) can list, connect to, time out and kill it. The key is the
sandbox's id (`sandbox_id`, the `id` field, as `cellvm serve` has it too):
`<vmm>-<8 hex>`, a DNS label as E2B's ids are. The VMM is named by
its pid *and* its start time (field 22 of /proc/PID/stat): a pid the kernel
gave to another process since is never signalled.

Writers hold an flock on `<dir>/lock` (creators count the live sandboxes
under it); files are replaced by rename, so readers need no lock. An entry
that does not parse is reported (a warning) and removed; its pid is never
trusted. One whose VMM has exited is stale: removed with the VMM's temp
directory. One past its deadline plus the grace period
($CELLVM_DEADLINE_GRACE, 10 s) is enforced: the VMM is SIGKILLed (through a
pidfd, after the start time matched) and the entry removed. `sweep()` does
this; every creator, list, connect and the CLI call it.

The keeper of an entry is the C CLI's (`cellvm keep KEY`, client/c/keeper.c).
"""

import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import signal
import stat
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

logger = logging.getLogger("cellvm.registry")

FORMAT = "cellvm-sandbox 1"
SUFFIX = ".sandbox"
RUNTIME_ENV = "CELLVM_RUNTIME_DIR"
GRACE_ENV = "CELLVM_DEADLINE_GRACE"
DEFAULT_GRACE_S = 10.0
MAX_SANDBOXES_ENV = "CELLVM_MAX_SANDBOXES"
DEFAULT_MAX_SANDBOXES = 20
"""E2B's concurrency limit of its base tier."""
MAX_TIMEOUT_ENV = "CELLVM_MAX_TIMEOUT"
DEFAULT_MAX_TIMEOUT_S = 24 * 3600
"""E2B's maximum sandbox timeout (Pro tier): 24 hours."""
_KEY_RE = re.compile(r"^[a-z0-9-]{1,64}$")  # as the C CLI's valid_key; new_key's are 25 at most
_MAX_ENTRY_BYTES = 64 * 1024


class DamagedEntry(Exception):
    """A registry file that is not a well-formed entry."""


class LimitExceeded(Exception):
    """Too many live sandboxes, or a timeout over the maximum."""

    def __init__(self, message, kind):
        super().__init__(message)
        self.kind = kind  # "sandboxes" or "timeout"


def _env_number(name, default, cast=float):
    try:
        value = cast(os.environ[name])
        return value if value >= 0 else default
    except (KeyError, ValueError):
        return default


def grace_s() -> float:
    return _env_number(GRACE_ENV, DEFAULT_GRACE_S)


def max_sandboxes() -> int:
    return _env_number(MAX_SANDBOXES_ENV, DEFAULT_MAX_SANDBOXES, int)


def max_timeout_s() -> float:
    return _env_number(MAX_TIMEOUT_ENV, DEFAULT_MAX_TIMEOUT_S)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def proc_start_time(pid: int) -> Optional[int]:
    """Field 22 of /proc/PID/stat (clock ticks after boot); None when the
    process does not exist or is a zombie (it has exited)."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    # comm may hold spaces and parentheses: the fields start after the last ')'.
    fields = data.rsplit(b")", 1)[-1].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def proc_rss_kib(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{int(pid)}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


@dataclass
class Entry:
    key: str
    id: str
    vmm: str
    pid: int
    pid_start: int
    started_ms: int
    deadline_ms: int
    address: str = ""
    dir: str = ""
    memory_mb: int = 0
    vcpus: int = 0
    accel: str = ""
    image: str = ""
    template: str = ""
    creator_pid: int = 0
    creator_start: int = 0
    holder_pid: int = 0
    holder_start: int = 0
    keeper_pid: int = 0
    metadata: Dict[str, str] = field(default_factory=dict)

    _INTS = ("pid", "pid_start", "started_ms", "deadline_ms", "memory_mb", "vcpus",
             "creator_pid", "creator_start", "holder_pid", "holder_start", "keeper_pid")
    _REQUIRED = ("key", "id", "vmm", "pid", "pid_start", "started_ms", "deadline_ms")

    def to_text(self) -> str:
        lines = [FORMAT]
        for name in ("key", "id", "vmm") + self._INTS + ("accel", "address", "dir", "image", "template"):
            value = str(getattr(self, name))
            if "\n" in value or "\r" in value:
                raise ValueError(f"{name} must not contain a line break: {value!r}")
            lines.append(f"{name}={value}")
        lines.append("metadata=" + json.dumps(self.metadata, ensure_ascii=True))
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str, key: str) -> "Entry":
        lines = text.split("\n")
        if not lines or lines[0] != FORMAT:
            raise DamagedEntry(f"first line is not {FORMAT!r}")
        values = {}
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise DamagedEntry(f"line without '=': {line[:80]!r}")
            values[name] = value  # unknown names: a newer writer's, ignored
        missing = [n for n in cls._REQUIRED if not values.get(n)]
        if missing:
            raise DamagedEntry(f"missing {', '.join(missing)}")
        kw = {}
        for name in cls.__dataclass_fields__:
            if name not in values:
                continue
            if name in cls._INTS:
                try:
                    kw[name] = int(values[name])
                except ValueError:
                    raise DamagedEntry(f"{name} is not a number: {values[name][:40]!r}") from None
            elif name == "metadata":
                try:
                    meta = json.loads(values[name])
                except ValueError:
                    raise DamagedEntry("metadata is not JSON") from None
                if not isinstance(meta, dict):
                    raise DamagedEntry("metadata is not an object")
                kw[name] = {str(k): str(v) for k, v in meta.items()}
            else:
                kw[name] = values[name]
        if kw["key"] != key:
            raise DamagedEntry(f"key {kw['key']!r} does not match the file name")
        if kw["pid"] <= 1 or kw["pid_start"] <= 0:
            raise DamagedEntry(f"implausible pid {kw['pid']} / start {kw['pid_start']}")
        return cls(**kw)

    # --- the VMM ---------------------------------------------------------

    def vmm_alive(self) -> bool:
        """The recorded VMM runs: that pid exists with that start time."""
        return proc_start_time(self.pid) == self.pid_start

    def creator_alive(self) -> bool:
        return self.creator_pid > 0 and proc_start_time(self.creator_pid) == self.creator_start

    def held_by_other(self) -> bool:
        """Another live process holds the sandbox's channel (it relays set_timeout)."""
        return (self.holder_pid > 0 and self.holder_pid != os.getpid()
                and proc_start_time(self.holder_pid) == self.holder_start)

    def time_left_s(self, at_ms: Optional[int] = None) -> float:
        return (self.deadline_ms - (now_ms() if at_ms is None else at_ms)) / 1000.0


def is_key(text) -> bool:
    """`text` has a registry key's form ([a-z0-9-], 1 to 64 characters)."""
    return isinstance(text, str) and bool(_KEY_RE.match(text))


def runtime_dir(create: bool = True) -> str:
    """The user's registry directory (created 0700). Refuses one that another
    user owns or others can write: entries name processes to kill."""
    path = os.environ.get(RUNTIME_ENV)
    if not path:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        # /tmp, not $TMPDIR: the C CLI must find the same directory.
        path = os.path.join(xdg, "cellvm") if xdg else f"/tmp/cellvm-{os.getuid()}"
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as e:
            raise OSError(e.errno, f"cellvm runtime directory {path}: {e.strerror}") from None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"cellvm runtime directory {path} is not a directory of this user "
                              f"writable only by it (uid {st.st_uid}, mode {oct(st.st_mode & 0o777)}); "
                              f"set ${RUNTIME_ENV} to another")
    return path


class Registry:
    def __init__(self, path: Optional[str] = None):
        self.path = path or runtime_dir()
        os.makedirs(self.path, mode=0o700, exist_ok=True)

    # --- locking and files ---------------------------------------------------

    @contextlib.contextmanager
    def lock(self):
        """The writers' lock (flock on <dir>/lock), held for the block."""
        fd = os.open(os.path.join(self.path, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _file(self, key: str) -> str:
        if not _KEY_RE.match(key):
            raise ValueError(f"not a registry key: {key!r}")
        return os.path.join(self.path, key + SUFFIX)

    def new_key(self, vmm: str, taken=None) -> str:
        """A new key `<vmm>-<8 hex>` (the VMM's name in [a-z0-9], at most 16
        characters): no entry has it, nor does `taken(key)` say it is in use
        (a paused sandbox's, which takes its key back when it resumes). It is
        the sandbox's id too: short, lower case, a DNS label (E2B's sandbox
        ids name hosts, `{port}-{id}.{domain}`)."""
        prefix = re.sub(r"[^a-z0-9]", "", vmm.lower())[:16] or "vm"
        while True:
            key = f"{prefix}-{secrets.token_hex(4)}"
            if not os.path.exists(self._file(key)) and not (taken and taken(key)):
                return key

    def write(self, entry: Entry) -> None:
        """Writes (or replaces) the entry atomically: rename over the old file."""
        final = self._file(entry.key)
        tmp = f"{final}.tmp-{os.getpid()}"
        with open(tmp, "w", opener=lambda p, fl: os.open(p, fl | os.O_CLOEXEC, 0o600)) as f:
            f.write(entry.to_text())
        os.rename(tmp, final)

    def read(self, key: str) -> Optional[Entry]:
        """The entry `key`; None if there is none. DamagedEntry if it does not parse."""
        try:
            with open(self._file(key), "rb") as f:
                data = f.read(_MAX_ENTRY_BYTES + 1)
        except FileNotFoundError:
            return None
        if len(data) > _MAX_ENTRY_BYTES:
            raise DamagedEntry(f"larger than {_MAX_ENTRY_BYTES} bytes")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise DamagedEntry("not UTF-8") from None
        return Entry.from_text(text, key)

    def keys(self) -> List[str]:
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            return []
        return sorted(n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX))

    def _unlink(self, key: str) -> None:
        try:
            os.unlink(self._file(key))
        except FileNotFoundError:
            pass

    def remove(self, entry: Entry) -> None:
        """Removes the entry and the VMM's temp directory (if it is one of ours)."""
        self._unlink(entry.key)
        remove_vmm_dir(entry.dir)

    # --- reading everything, enforcing ---------------------------------------

    def entries(self, enforce: bool = True) -> List[Entry]:
        """The live entries, oldest first. With `enforce` (the default) this
        is sweep(): stale and damaged entries are removed (and reported),
        VMMs past deadline + grace are killed."""
        if enforce:
            return self.sweep()
        found = []
        for key in self.keys():
            try:
                e = self.read(key)
            except (DamagedEntry, ValueError):
                continue
            if e is not None:
                found.append(e)
        return sorted(found, key=lambda e: e.started_ms)

    def sweep(self) -> List[Entry]:
        with self.lock():
            return self._sweep_locked()

    def _sweep_locked(self) -> List[Entry]:
        live = []
        grace_ms = int(grace_s() * 1000)
        for key in self.keys():
            try:
                e = self.read(key)
            except (DamagedEntry, ValueError) as err:
                logger.warning("cellvm registry: removed damaged entry %s: %s (its process "
                               "was not touched)", self._file(key), err)
                self._unlink(key)
                continue
            if e is None:
                continue
            if not e.vmm_alive():
                logger.warning("cellvm registry: removed stale entry %s (%s): its VMM pid %d "
                               "has exited", e.key, e.id, e.pid)
                self.remove(e)
                continue
            if now_ms() > e.deadline_ms + grace_ms:
                logger.warning("cellvm registry: sandbox %s (%s) is %.1f s past its deadline "
                               "(grace %.0f s): killing its VMM pid %d", e.key, e.id,
                               -e.time_left_s(), grace_ms / 1000, e.pid)
                kill_vmm(e)
                self.remove(e)
                continue
            live.append(e)
        return sorted(live, key=lambda e: e.started_ms)

    def find(self, ident: str, enforce: bool = True) -> Optional[Entry]:
        """The live entry whose id, key or address is `ident`."""
        for e in self.entries(enforce):
            if ident in (e.id, e.key, e.address):
                return e
        return None

    # --- creators and lifetime calls -------------------------------------------

    def check_limits(self, timeout_s: float) -> List[Entry]:
        """Raises LimitExceeded for a timeout over the maximum or when the
        live sandboxes are already at the maximum. Call with the lock held."""
        check_timeout(timeout_s)
        live = self._sweep_locked()
        limit = max_sandboxes()
        if len(live) >= limit:
            raise LimitExceeded(
                f"Rate limit exceeded, please try again later: you have reached the maximum number "
                f"of concurrent sandboxes ({limit}); kill one (`cellvm kill ID`, Sandbox.kill) or "
                f"raise ${MAX_SANDBOXES_ENV}", "sandboxes")
        return live

    def set_deadline(self, ident: str, deadline_ms: int) -> Optional[Entry]:
        """Moves the deadline of the live sandbox `ident`; its entry, or None."""
        with self.lock():
            for e in self._sweep_locked():
                if ident in (e.id, e.key, e.address):
                    e.deadline_ms = int(deadline_ms)
                    self.write(e)
                    return e
        return None

    def kill(self, ident: str) -> Optional[Entry]:
        """Kills the live sandbox `ident` (SIGKILL to its verified VMM) and
        removes its entry and files; its entry, or None if there is none."""
        with self.lock():
            for e in self._sweep_locked():
                if ident in (e.id, e.key, e.address):
                    kill_vmm(e)
                    self.remove(e)
                    return e
        return None

    def set_holder(self, key: str, pid: int) -> None:
        """Records that `pid` (0: nobody) holds the channel of `key`; a release
        (pid 0) only undoes this process's own hold."""
        with self.lock():
            try:
                e = self.read(key)
            except (DamagedEntry, ValueError):
                return
            if e is None or (pid == 0 and e.holder_pid != os.getpid()):
                return
            e.holder_pid = pid
            e.holder_start = (proc_start_time(pid) or 0) if pid else 0
            self.write(e)

    def forget(self, key: str) -> None:
        """Removes the entry `key` (its VMM was stopped by its owner)."""
        with self.lock():
            self._unlink(key)


def check_timeout(timeout_s: float) -> None:
    limit = max_timeout_s()
    if timeout_s > limit:
        hours = limit / 3600
        said = f"{hours:g} hours" if hours >= 1 and hours == int(hours) else f"{limit:g} seconds"
        raise LimitExceeded(f"Timeout cannot be greater than {said} (the maximum sandbox timeout, "
                            f"${MAX_TIMEOUT_ENV})", "timeout")
    if timeout_s <= 0:
        raise LimitExceeded(f"Timeout must be positive, not {timeout_s:g}", "timeout")


def kill_vmm(entry: Entry) -> bool:
    """SIGKILLs the entry's VMM if that pid still has the recorded start
    time; the pidfd makes the check and the signal refer to one process.
    True if it was signalled."""
    try:
        pidfd = os.pidfd_open(entry.pid)
    except (ProcessLookupError, OSError):
        return False
    try:
        if proc_start_time(entry.pid) != entry.pid_start:
            return False  # exited, or the pid is another process's now
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False
    finally:
        os.close(pidfd)


def _ours(path: str) -> bool:
    """`path` is a cellvm VMM temp dir of this user: a real directory named
    cellvm-* (never follow what a damaged or forged entry says blindly)."""
    if not path or not os.path.isabs(path) or not os.path.basename(path).startswith("cellvm-"):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def remove_vmm_dir(path: str) -> None:
    if _ours(path):
        shutil.rmtree(path, ignore_errors=True)


def start_keeper(registry: Registry, key: str, python: str = "") -> int:
    """Starts the keeper of the entry `key` (`cellvm keep KEY`, client/c/keeper.c):
    a process of its own session, not our child, that outlives us; its pid.
    (`python`: ignored, the tests' old signature.)"""
    import subprocess
    from . import host
    out = subprocess.run([host.binary(), "keep", key], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/",
                         env=dict(os.environ, CELLVM_RUNTIME_DIR=registry.path),
                         close_fds=True, timeout=30, check=True)
    return int(out.stdout.split()[0])
