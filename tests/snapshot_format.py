"""The tests' own reader and writer of the snapshot store's documented
format (docs/SNAPSHOTS.md), independent of the C side that owns the store
(client/c/manifest.c, template.c, paused.c): tests check what the CLI writes
with it, and make stale or damaged templates and records with it.

Snapshots on disk: templates (a booted sandbox saved once, restored by
every create()) and paused sandboxes (E2B's pause()).

Layout (every file is the user's, directories 0700):

    $CELLVM_TEMPLATE_DIR, else $XDG_CACHE_HOME/cellvm/templates, else ~/.cache/cellvm/templates
      <name>/                 one configuration: <vmm>-<16 hex> (FNV-1a 64 of its launch)
        lock                  builders hold flock(LOCK_EX) on it while they build
        current -> t-<id>     symlink to the complete snapshot in use (replaced by rename)
        t-<id>/               one complete snapshot, never modified once renamed into place
          manifest            text, below; written last
          state, memory       the VMM's files (QEMU: migration stream, guest RAM)
    $CELLVM_PAUSED_DIR, else $XDG_STATE_HOME/cellvm/paused, else ~/.local/state/cellvm/paused
      lock                    flock(LOCK_EX) while a record is written, resumed or removed
      <key>/manifest, state   one paused sandbox

A restorer resolves `current` once, opens that t-<id> directory and holds
flock(LOCK_SH) on it until the VMM has read the state and mapped the memory;
a builder removes an old t-<id> only under flock(LOCK_EX|LOCK_NB), so a
restore in progress is never pulled from under its VMM (a running clone
keeps its mapping of a removed file: the inode lives while mapped).

The manifest is UTF-8 text, at most 256 KiB: the first line `cellvm-snapshot 1`,
then `name=value` lines (the first `=` splits; no value holds a line break;
unknown names are ignored; `arg` and `file` repeat, in order). Simple to
parse without a JSON library (the C client). Fields: Manifest below.
"""

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import stat
import time
from typing import Dict, List, Optional

import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "client", "python"))
from cellvm.exceptions import SandboxException  # noqa: E402

logger = logging.getLogger("cellvm.snapshot")

FORMAT = "cellvm-snapshot 1"
TEMPLATE_DIR_ENV = "CELLVM_TEMPLATE_DIR"
PAUSED_DIR_ENV = "CELLVM_PAUSED_DIR"
MANIFEST = "manifest"
CURRENT = "current"
MAX_MANIFEST = 256 * 1024
DIR_PLACEHOLDER = "@DIR@"
"""Stands for the VMM's own temporary directory (sockets, console) in `arg` lines."""
SNAPSHOT_PLACEHOLDER = "@SNAPSHOT@"
"""Stands for the snapshot's directory (t-<id>/, or the paused record's) in `arg` lines."""


class SnapshotError(SandboxException):
    """A snapshot that cannot be used: missing, truncated, foreign, or made
    for another image/VMM/configuration. The message names the file and
    what is wrong. (A SandboxException: what a resume raises to the user.)"""

    def __init__(self, message, path=None, stale=False):
        super().__init__(message, code="bad_snapshot")
        self.path = path
        self.stale = stale  # valid once, made for something that changed since


def _xdg(env, default_rel):
    base = os.environ.get(env)
    if base and os.path.isabs(base):
        return base
    return os.path.join(os.path.expanduser("~"), default_rel)


def template_root() -> str:
    return os.environ.get(TEMPLATE_DIR_ENV) or os.path.join(
        _xdg("XDG_CACHE_HOME", ".cache"), "cellvm", "templates")


def paused_root() -> str:
    return os.environ.get(PAUSED_DIR_ENV) or os.path.join(
        _xdg("XDG_STATE_HOME", os.path.join(".local", "state")), "cellvm", "paused")


def private_dir(path: str) -> str:
    """Creates `path` (0700, parents too) and refuses one that is not a
    directory of this user writable only by it: a snapshot there is run."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise SnapshotError(f"{path} is not a directory of this user writable only by it "
                            f"(uid {st.st_uid}, mode {oct(st.st_mode & 0o777)})", path)
    return path


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64 bits: the template name's hash (a few lines in C too)."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


TSC_WORD = re.compile(r"(?<![^ \t])tsc_early_khz=(\d{1,19})(?![^ \t])")
TSC_TOLERANCE_PPM = 100
"""How far a template's tsc_early_khz (the host's TSC frequency measured when
it was built) may be from this host's measured now and still fit. The
measurement varies by a few kHz of ~2.3 GHz (about 1 ppm) from one run or
host boot to the next; a clone's kernel keeps the template's calibration
whatever its command line says, so within this its clock stays within
0.01% of the host's. Farther: another host or CPU, rebuilt."""


def tsc_neutral(text: str) -> str:
    """`text` with each tsc_early_khz=N word as tsc_early_khz=host: what a
    template's name and its fit compare (the value: tsc_mismatch)."""
    return TSC_WORD.sub("tsc_early_khz=host", text)


def tsc_mismatch(have: str, want: str) -> Optional[str]:
    """Why the tsc_early_khz words of two command lines equal but for their
    values (tsc_neutral) do not fit (the first of each; None when they do,
    or have none)."""
    a, b = TSC_WORD.search(have), TSC_WORD.search(want)
    if a is None or b is None:
        return None
    x, y = int(a.group(1)), int(b.group(1))
    if abs(x - y) * 1_000_000 > TSC_TOLERANCE_PPM * max(y, 1):
        return (f"tsc_early_khz: snapshot has {x}, this host's TSC is now {y} kHz "
                f"(more than {TSC_TOLERANCE_PPM} ppm apart)")
    return None


def template_name(vmm: str, args: List[str]) -> str:
    """`<vmm>-<16 hex>`: FNV-1a 64 of the launch (its `arg` values, TSC
    frequency neutral, joined by NUL)."""
    return f"{vmm}-{fnv1a64(chr(0).join(map(tsc_neutral, args)).encode()):016x}"


_versions = {}


def vmm_version(binary: str) -> str:
    """The first line of `<binary> --version`, run once per binary file
    (path, size, mtime): a manifest's `vmm_version`."""
    import subprocess
    try:
        st = os.stat(binary)
    except OSError as e:
        raise SnapshotError(f"{binary}: {e.strerror}", binary) from None
    key = (binary, st.st_size, st.st_mtime_ns)
    if key not in _versions:
        out = subprocess.run([binary, "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=30)
        _versions[key] = (out.stdout.strip().splitlines() or [""])[0]
    return _versions[key]


def file_identity(path: str) -> str:
    """`<size> <mtime_ns> <path>` of a boot file: equal while the file is
    (`make image` replaces a file only when it rebuilds it)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise SnapshotError(f"{path}: {e.strerror}", path) from None
    return f"{st.st_size} {st.st_mtime_ns} {path}"


class Manifest:
    """The fields of a manifest (docs/SNAPSHOTS.md, "Manifest"):

    kind         template | paused
    vmm          qemu | firecracker | cloud-hypervisor
    vmm_version  first line of `<binary> --version`
    vmm_binary   the binary's path
    accel        kvm | tcg
    memory_mb, vcpus
    image        the image directory
    cmdline      the guest kernel command line
    file         `<role> <size> <mtime_ns> <path>`: each boot file (kernel, initramfs, rootfs)
    arg          the VMM's argv, one per line, DIR_PLACEHOLDER/SNAPSHOT_PLACEHOLDER for paths
    state, state_size    the device-state file (relative to the snapshot dir) and its size
    memory, memory_size  the memory file and its size ("" and 0: RAM is in the state stream)
    instance_dir the VMM's temp dir when the snapshot was taken (Cloud Hypervisor's
                 config.json names it; a paused sandbox is resumed in it again)
    generation   what SNAPSHOT_PREPARE answered (templates)
    created_ms, build_ms   when it was saved (Unix ms), how long that took
    started_ms   when the paused sandbox's lifetime started
    request      `<METHOD> <path> <json>`: API calls a restore makes (Firecracker, CH)
    sandbox_id, registry_key, template, timeout_s, metadata, envs  (paused sandboxes;
                 the id is the registry key, which the sandbox resumes under)
    filesystem   a filesystem-only pause's archive of the changed files (its file's
                 name; no state then: it resumes as a fresh clone of its template)
    """

    _INTS = ("memory_mb", "vcpus", "state_size", "memory_size", "generation", "created_ms",
             "build_ms", "started_ms")
    _LISTS = ("arg", "file", "request")
    _JSON = ("metadata", "envs")
    _REQUIRED = ("kind", "vmm", "state")

    def __init__(self, **fields):
        self.kind = ""
        self.vmm = ""
        self.vmm_version = ""
        self.vmm_binary = ""
        self.accel = ""
        self.memory_mb = 0
        self.vcpus = 0
        self.image = ""
        self.cmdline = ""
        self.file: List[str] = []
        self.arg: List[str] = []
        self.request: List[str] = []
        self.state = "state"
        self.state_size = 0
        self.memory = ""
        self.memory_size = 0
        self.instance_dir = ""
        self.generation = 0
        self.created_ms = 0
        self.build_ms = 0
        self.started_ms = 0
        self.sandbox_id = ""
        self.registry_key = ""
        self.template = ""
        self.timeout_s = ""
        self.metadata: Dict[str, str] = {}
        self.envs: Dict[str, str] = {}
        self.filesystem = ""
        self.fork_of = ""
        self.on_timeout = ""
        for k, v in fields.items():
            if not hasattr(self, k):
                raise TypeError(f"no manifest field {k!r}")
            setattr(self, k, v)

    _ORDER = ("kind", "vmm", "vmm_version", "vmm_binary", "accel", "memory_mb", "vcpus", "image",
              "cmdline", "file", "state", "state_size", "memory", "memory_size", "instance_dir",
              "generation", "created_ms", "build_ms", "started_ms", "sandbox_id", "registry_key", "template",
              "timeout_s", "metadata", "envs", "filesystem", "fork_of", "on_timeout", "request", "arg")

    def to_text(self) -> str:
        lines = [FORMAT]
        for name in self._ORDER:
            value = getattr(self, name)
            values = value if name in self._LISTS else [
                json.dumps(value, ensure_ascii=True, sort_keys=True) if name in self._JSON else value]
            for v in values:
                v = str(v)
                if "\n" in v or "\r" in v or "\0" in v:
                    raise ValueError(f"manifest {name} must not contain a line break or NUL: {v!r:.80}")
                lines.append(f"{name}={v}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str, path: str) -> "Manifest":
        lines = text.split("\n")
        if lines[0] != FORMAT:
            raise SnapshotError(f"{path}: not a cellvm snapshot manifest (first line "
                                f"{lines[0][:60]!r}, expected {FORMAT!r})", path)
        m = cls()
        seen = set()
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise SnapshotError(f"{path}: line without '=': {line[:80]!r}", path)
            if not hasattr(m, name) or name.startswith("_"):
                continue  # a newer writer's field
            seen.add(name)
            if name in cls._LISTS:
                getattr(m, name).append(value)
            elif name in cls._INTS:
                try:
                    setattr(m, name, int(value))
                except ValueError:
                    raise SnapshotError(f"{path}: {name} is not a number: {value[:40]!r}", path) from None
            elif name in cls._JSON:
                try:
                    d = json.loads(value)
                except ValueError:
                    raise SnapshotError(f"{path}: {name} is not JSON", path) from None
                if not isinstance(d, dict):
                    raise SnapshotError(f"{path}: {name} is not an object", path)
                setattr(m, name, {str(k): str(v) for k, v in d.items()})
            else:
                setattr(m, name, value)
        missing = [n for n in cls._REQUIRED if n not in seen]
        if missing:
            raise SnapshotError(f"{path}: incomplete manifest: no {', '.join(missing)}", path)
        return m

    def files(self) -> Dict[str, str]:
        """{role: "<size> <mtime_ns> <path>"} of the `file` lines."""
        out = {}
        for line in self.file:
            role, _, ident = line.partition(" ")
            out[role] = ident
        return out


def read_manifest(dirpath: str) -> Manifest:
    path = os.path.join(dirpath, MANIFEST)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_MANIFEST + 1)
    except FileNotFoundError:
        raise SnapshotError(f"{path} not found: not a complete snapshot", path) from None
    except OSError as e:
        raise SnapshotError(f"{path}: {e.strerror}", path) from None
    if len(data) > MAX_MANIFEST:
        raise SnapshotError(f"{path}: larger than {MAX_MANIFEST} bytes: not a cellvm manifest", path)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise SnapshotError(f"{path}: not UTF-8 text: not a cellvm manifest", path) from None
    return Manifest.from_text(text, path)


def write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}-{secrets.token_hex(3)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_files(m: Manifest, snapdir: str) -> None:
    """The snapshot's own files are there, whole: SnapshotError naming the one
    that is missing or truncated."""
    _check_file(os.path.join(snapdir, m.state), m.state_size, "device state")
    if m.memory:
        _check_file(os.path.join(snapdir, m.memory), m.memory_size, "memory file")


def _check_file(path: str, want: int, what: str) -> None:
    """check_files()'s test of one file: there, and `want` bytes long."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise SnapshotError(f"{path}: {e.strerror}: the snapshot's {what} is missing",
                            path) from None
    if size != want:
        raise SnapshotError(f"{path} is {size} bytes, its manifest says {want}: "
                            "truncated or replaced", path)


def differences(have: Manifest, want: Manifest) -> List[str]:
    """What differs between a stored manifest and the one a launch would
    write now, in words (empty: the snapshot fits)."""
    out = []
    for name in ("vmm", "vmm_version", "accel", "memory_mb", "vcpus"):
        a, b = getattr(have, name), getattr(want, name)
        if a != b:
            out.append(f"{name}: snapshot has {a!r}, now {b!r}")
    if tsc_neutral(have.cmdline) != tsc_neutral(want.cmdline):
        out.append(f"cmdline: snapshot has {have.cmdline!r}, now {want.cmdline!r}")
    else:
        why = tsc_mismatch(have.cmdline, want.cmdline)
        if why:
            out.append(why)
    hf, wf = have.files(), want.files()
    for role in sorted(set(hf) | set(wf)):
        if hf.get(role) != wf.get(role):
            out.append(f"{role} file: snapshot was taken with {hf.get(role) or 'none'!r} "
                       f"(size mtime_ns path), now {wf.get(role) or 'none'!r}")
    if not out and list(map(tsc_neutral, have.arg)) != list(map(tsc_neutral, want.arg)):
        diff = [f"{a!r} -> {b!r}" for a, b in zip(have.arg, want.arg)
                if tsc_neutral(a) != tsc_neutral(b)]
        if len(have.arg) != len(want.arg):
            diff.append(f"{len(have.arg)} arguments -> {len(want.arg)}")
        out.append("the VMM's command line: " + "; ".join(diff[:4]))
    return out


# --- templates ---------------------------------------------------------------


class TemplateDir:
    """One configuration's directory: <root>/<name>/ with its lock and `current`."""

    def __init__(self, name: str, root: Optional[str] = None):
        self.root = root or template_root()
        self.name = name
        self.path = os.path.join(self.root, name)

    def current(self) -> Optional[str]:
        """The complete snapshot directory `current` points to, or None."""
        try:
            target = os.readlink(os.path.join(self.path, CURRENT))
        except FileNotFoundError:
            return None
        except OSError as e:
            raise SnapshotError(f"{os.path.join(self.path, CURRENT)}: {e.strerror}",
                                self.path) from None
        if os.sep in target or not target.startswith("t-"):
            raise SnapshotError(f"{os.path.join(self.path, CURRENT)} points to {target!r}, "
                                "not a snapshot of this directory", self.path)
        return os.path.join(self.path, target)

    @contextlib.contextmanager
    def build_lock(self):
        """Held while one process builds this template; others wait (saying so)."""
        private_dir(self.root)
        private_dir(self.path)
        fd = os.open(os.path.join(self.path, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                logger.warning("cellvm: template %s is being built by another process: waiting "
                               "for it", self.path)
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def new_snapshot_dir(self) -> str:
        """A fresh t-<id>.tmp directory to build into."""
        path = os.path.join(self.path, f"t-{secrets.token_hex(6)}.tmp")
        os.mkdir(path, 0o700)
        return path

    def publish(self, tmpdir: str) -> str:
        """Renames a complete t-<id>.tmp into place and points `current` at
        it (rename over the old link: a reader sees the old or the new)."""
        final = tmpdir[:-len(".tmp")]
        os.rename(tmpdir, final)
        link = os.path.join(self.path, f"{CURRENT}.tmp-{os.getpid()}-{secrets.token_hex(3)}")
        os.symlink(os.path.basename(final), link)
        os.rename(link, os.path.join(self.path, CURRENT))
        self.prune(keep=final)
        return final

    def prune(self, keep: Optional[str] = None) -> List[str]:
        """Removes this configuration's snapshot dirs other than `keep` (and
        `current`) that no restore holds, and leftovers of dead builders."""
        cur = self.current()
        removed = []
        for name in os.listdir(self.path):
            p = os.path.join(self.path, name)
            if not name.startswith("t-") or p in (keep, cur):
                continue
            if name.endswith(".tmp") and time.time() - os.path.getmtime(p) < 3600:
                continue  # maybe another builder's (it holds the build lock, we do too: old)
            if remove_unused(p):
                removed.append(p)
        return removed


@contextlib.contextmanager
def using(snapdir: str):
    """flock(LOCK_SH) on a snapshot directory while a VMM is being given its
    files: a builder or `remove` does not delete it meanwhile."""
    try:
        fd = os.open(snapdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise SnapshotError(f"{snapdir}: {e.strerror}", snapdir) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def remove_unused(snapdir: str) -> bool:
    """Removes a snapshot directory unless a restore holds it (LOCK_SH)."""
    try:
        fd = os.open(snapdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    try:
        shutil.rmtree(snapdir, ignore_errors=True)
    finally:
        os.close(fd)
    return True


def list_templates(root: Optional[str] = None) -> List[tuple]:
    """[(TemplateDir, snapshot dir or None, Manifest or SnapshotError)] of every configuration."""
    root = root or template_root()
    out = []
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return out
    for name in names:
        td = TemplateDir(name, root)
        if not os.path.isdir(td.path):
            continue
        try:
            cur = td.current()
            out.append((td, cur, read_manifest(cur) if cur else None))
        except SnapshotError as e:
            out.append((td, None, e))
    return out


# --- paused sandboxes --------------------------------------------------------


class PausedStore:
    """The user's paused sandboxes: <root>/<key>/{manifest,state}."""

    def __init__(self, root: Optional[str] = None):
        self.root = root or paused_root()

    @contextlib.contextmanager
    def lock(self):
        private_dir(self.root)
        fd = os.open(os.path.join(self.root, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def dir_of(self, key: str) -> str:
        if not key or os.sep in key or key.startswith("."):
            raise ValueError(f"not a sandbox key: {key!r}")
        return os.path.join(self.root, key)

    def records(self) -> List[tuple]:
        """[(dir, Manifest)] of every complete paused sandbox; damaged ones are
        reported (a warning) and skipped, never deleted here."""
        out = []
        try:
            names = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return out
        for name in names:
            d = os.path.join(self.root, name)
            if name.endswith(".tmp") or not os.path.isdir(d) or os.path.islink(d):
                continue
            try:
                m = read_manifest(d)
            except SnapshotError as e:
                logger.warning("cellvm: paused sandbox %s is unreadable: %s (`Sandbox.kill` of "
                               "its id, or removing the directory, drops it)", d, e)
                continue
            if m.kind == "paused":
                out.append((d, m))
        return out

    def find(self, ident: str) -> Optional[tuple]:
        for d, m in self.records():
            if ident in (m.sandbox_id, m.registry_key, os.path.basename(d)):
                return d, m
        return None

    def remove(self, d: str) -> None:
        shutil.rmtree(d, ignore_errors=True)


def is_missing(e: OSError) -> bool:
    return e.errno in (errno.ENOENT, errno.ENOTDIR)
