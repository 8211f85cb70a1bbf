"""Result objects, shaped like e2b_code_interpreter.models so E2B code runs unchanged.

Field names, __repr__/__str__, to_json() and formats() follow E2B's SDK. The
conversion from a wire MIME bundle follows what E2B's in-sandbox server does
with ipykernel's bundle (template/server/api/models/result.py): text/plain
loses the quotes of a str repr, binary formats become base64 text, and MIME
types without a field of their own go to `extra`.
"""

import base64
import json
import logging
import weakref
from dataclasses import dataclass, field
from typing import (IO, Any, Awaitable, Callable, Dict, Iterable, List, Literal, NotRequired,
                    Optional, TypedDict, TypeVar, Union)

from .charts import Chart, _deserialize_chart

T = TypeVar("T")
OutputHandler = Union[Callable[[T], Any], Callable[[T], Awaitable[Any]]]
OutputHandlerWithAsync = OutputHandler
"""E2B's name for the async run_code's callbacks (e2b_code_interpreter.models):
cellvm's OutputHandler already allows coroutine functions."""

RunCodeLanguage = Union[Literal["python", "javascript", "typescript", "r", "java", "bash"], str]
"""E2B's type of run_code's `language`; the agent says which it runs ("python",
"bash", "javascript" and "typescript" today, E2B's aliases too: see
docs/PROTOCOL.md, CONTEXT_CREATE)."""

logger = logging.getLogger(__name__)

# MIME type -> Result attribute. Binary ones arrive as raw bytes on the wire.
_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
    "e2b/chart": "chart",
}


def _as_text(value):
    """Bytes become base64 text as Jupyter (and so E2B) carries them."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


@dataclass
class OutputMessage:
    """One chunk of stdout or stderr, as E2B passes it to on_stdout/on_stderr."""

    line: str
    timestamp: int
    """Unix epoch in nanoseconds (when the client received the chunk)."""
    error: bool = False
    """True for stderr."""

    def __str__(self):
        return self.line


@dataclass
class ExecutionError:
    """The exception a cell raised: name, value and the traceback text."""

    name: str
    value: str
    traceback: str

    def __init__(self, name: str, value: str, traceback: str, **kwargs):
        self.name = name
        self.value = value
        self.traceback = traceback
        # cellvm extension: the traceback as the list of entries ipykernel sends.
        self.traceback_lines = kwargs.get("traceback_lines", [traceback] if traceback else [])

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "value": self.value, "traceback": self.traceback})


class MIMEType(str):
    """A MIME type."""


# Result.raw by id(result), kept off the instance's __dict__ (a dataclass, as
# E2B's, is unhashable); an entry goes with its Result.
_RAW: Dict[int, Dict[str, Any]] = {}


@dataclass
class Result:
    """Data the cell displayed, or (is_main_result) the value of its last expression."""

    def __getitem__(self, item):
        return getattr(self, item)

    text: Optional[str] = None
    html: Optional[str] = None
    markdown: Optional[str] = None
    svg: Optional[str] = None
    png: Optional[str] = None
    jpeg: Optional[str] = None
    pdf: Optional[str] = None
    latex: Optional[str] = None
    json: Optional[dict] = None
    javascript: Optional[str] = None
    data: Optional[dict] = None
    chart: Optional[Chart] = None
    """The figure's data (cellvm.charts), when the result is a matplotlib figure."""
    is_main_result: bool = False
    extra: Optional[dict] = None

    def __init__(
        self,
        text: Optional[str] = None,
        html: Optional[str] = None,
        markdown: Optional[str] = None,
        svg: Optional[str] = None,
        png: Optional[str] = None,
        jpeg: Optional[str] = None,
        pdf: Optional[str] = None,
        latex: Optional[str] = None,
        json: Optional[dict] = None,
        javascript: Optional[str] = None,
        data: Optional[dict] = None,
        chart: Optional[dict] = None,
        is_main_result: bool = False,
        extra: Optional[dict] = None,
        **kwargs,
    ):
        self.text = text
        self.html = html
        self.markdown = markdown
        self.svg = svg
        self.png = png
        self.jpeg = jpeg
        self.pdf = pdf
        self.latex = latex
        self.json = json
        self.javascript = javascript
        self.data = data
        # As in E2B, an instance has `chart` only with a chart, and no field
        # beyond E2B's: vars(result) reads the same (JSON encoders use it).
        if isinstance(chart, Chart):
            self.chart = chart
        elif chart:
            # As E2B's SDK: a chart this version cannot read is logged, not raised.
            try:
                self.chart = _deserialize_chart(chart)
            except Exception as e:
                logger.error("cannot read the chart (an SDK older than the executor?): %s", e)
        self.is_main_result = is_main_result
        self.extra = extra
        raw = kwargs.get("raw")
        if raw:
            _RAW[id(self)] = raw
            weakref.finalize(self, _RAW.pop, id(self), None)

    @property
    def raw(self) -> Dict[str, Any]:
        """The MIME bundle as received (text/plain unstripped, binaries as bytes)."""
        return _RAW.get(id(self), {})

    @classmethod
    def from_bundle(cls, bundle: Dict[str, Any], is_main_result: bool) -> "Result":
        """Build a Result from a wire `data` map (MIME type -> value)."""
        fields = {}
        extra = {}
        for mime, value in bundle.items():
            name = _FIELDS.get(mime)
            if name is None:
                extra[mime] = _as_text(value)
            elif name in ("png", "jpeg", "pdf"):
                fields[name] = _as_text(value)
            else:
                fields[name] = value
        text = fields.get("text")
        # E2B's server strips the quotes of a str's repr ('abc' -> abc, "it's"
        # -> it's): any text that starts and ends with the same quote, a lone
        # quote included (-> "").
        if isinstance(text, str) and text and text[0] in "'\"" and text[-1] == text[0]:
            fields["text"] = text[1:-1]
        raw = dict(bundle)
        # A figure without a chart comes with an empty e2b/chart, as from E2B's
        # kernel (cellvm_charts.figure_chart); read as none at all.
        if raw.get("e2b/chart") == {}:
            del raw["e2b/chart"]
        return cls(is_main_result=is_main_result, extra=extra, raw=raw, **fields)

    @property
    def png_bytes(self) -> Optional[bytes]:
        """The PNG as raw bytes (png is base64 text, as in E2B)."""
        return self._binary("image/png", self.png)

    @property
    def jpeg_bytes(self) -> Optional[bytes]:
        return self._binary("image/jpeg", self.jpeg)

    @property
    def pdf_bytes(self) -> Optional[bytes]:
        return self._binary("application/pdf", self.pdf)

    def _binary(self, mime, b64):
        value = self.raw.get(mime)
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        return base64.b64decode(b64) if b64 else None

    def formats(self) -> Iterable[str]:
        """Names of the formats present, as in E2B (extra MIME types last)."""
        formats = []
        for key in ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex",
                    "json", "javascript", "data", "chart"):
            if getattr(self, key):
                formats.append(key)
        if self.extra:
            formats.extend(self.extra)
        return formats

    def __str__(self) -> str:
        return self.__repr__()

    def __repr__(self) -> str:
        if self.text:
            return f"Result({self.text})"
        return "Result(Formats: " + ", ".join(self.formats()) + ")"

    def _repr_html_(self):
        return self.html

    def _repr_markdown_(self):
        return self.markdown

    def _repr_svg_(self):
        return self.svg

    def _repr_png_(self):
        return self.png

    def _repr_jpeg_(self):
        return self.jpeg

    def _repr_pdf_(self):
        return self.pdf

    def _repr_latex_(self):
        return self.latex

    def _repr_json_(self):
        return self.json

    def _repr_javascript_(self):
        return self.javascript


@dataclass(repr=False)
class Logs:
    """What the cell wrote to stdout and stderr, chunk by chunk as it arrived."""

    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)

    def __init__(self, stdout: Optional[List[str]] = None, stderr: Optional[List[str]] = None, **kwargs):
        self.stdout = stdout or []
        self.stderr = stderr or []

    def __repr__(self):
        return f"Logs(stdout: {self.stdout}, stderr: {self.stderr})"

    def to_json(self) -> str:
        return json.dumps({"stdout": self.stdout, "stderr": self.stderr})


def serialize_results(results: List[Result]) -> List[Dict[str, Any]]:
    serialized = []
    for result in results:
        item = {}
        for key in result.formats():
            if key == "chart" and hasattr(result.chart, "to_dict"):
                item[key] = result.chart.to_dict()
            elif key in (result.extra or {}):
                item[key] = result.extra[key]
            else:
                item[key] = result[key]
        item["text"] = result.text
        serialized.append(item)
    return serialized


@dataclass(repr=False)
class Execution:
    """Everything one run_code produced."""

    results: List[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    execution_count: Optional[int] = None

    def __init__(
        self,
        results: Optional[List[Result]] = None,
        logs: Optional[Logs] = None,
        error: Optional[ExecutionError] = None,
        execution_count: Optional[int] = None,
        **kwargs,
    ):
        self.results = results or []
        self.logs = logs or Logs()
        self.error = error
        self.execution_count = execution_count

    def __repr__(self):
        return f"Execution(Results: {self.results}, Logs: {self.logs}, Error: {self.error})"

    @property
    def text(self) -> Optional[str]:
        """Text of the main result (the cell's value), None if there is none."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    def to_json(self) -> str:
        return json.dumps({
            "results": serialize_results(self.results),
            "logs": self.logs.to_json(),
            "error": self.error.to_json() if self.error else None,
        })


@dataclass
class Context:
    """A namespace (its own Python process) code runs in."""

    id: str
    language: str
    cwd: str

    def __init__(self, context_id: str, language: str, cwd: str, **kwargs):
        self.id = context_id
        self.language = language
        self.cwd = cwd

    @classmethod
    def from_json(cls, data: Dict[str, str]) -> "Context":
        return cls(context_id=data.get("id"), language=data.get("language"), cwd=data.get("cwd"))


# --- files and commands (E2B's e2b.sandbox.filesystem / e2b.sandbox.commands types) ---

import datetime as _dt
import sys as _sys
from enum import Enum as _Enum

# Aware UTC, as e2b 2.45's modified_time (protobuf.wkt Timestamp.to_datetime()).
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
# E2B declares WriteInfo.metadata keyword-only (Python 3.10+).
_KW_ONLY = {"kw_only": True} if _sys.version_info >= (3, 10) else {}


class FileType(_Enum):
    """Type of a filesystem entry (E2B's FileType)."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"  # E2B's envd may report it; cellvm's agent gives a link its target's type


class WriteEntry(TypedDict):
    """One file for files.write_files() (E2B's WriteEntry, a TypedDict)."""

    path: str
    data: Union[str, bytes, IO]


Username = Literal["root", "user"]
"""E2B's type of the `user` arguments (any user of the guest works here)."""
Stdout = str
Stderr = str
PtyOutput = bytes


@dataclass
class PtySize:
    """E2B's pseudo-terminal size, for sandbox.pty (cellvm.pty)."""

    rows: int
    cols: int


@dataclass
class WriteInfo:
    """What files.write() wrote (E2B's WriteInfo)."""

    name: str
    type: Optional[FileType]
    path: str
    metadata: Optional[Dict[str, str]] = field(default=None, **_KW_ONLY)
    """E2B's user metadata of a file (its `user.e2b.*` xattrs); cellvm keeps
    none: None, as E2B has it for a file without any. A field as in E2B, so
    repr() prints what E2B's does."""

    @classmethod
    def from_dict(cls, payload: Dict) -> "WriteInfo":
        """E2B's: from an entry of its `/files` upload response ({"name",
        "type", "path", "metadata"}); a type other than file/dir is None."""
        kind = payload.get("type")
        return cls(name=payload["name"], type=FileType(kind) if kind in ("file", "dir") else None,
                   path=payload["path"], metadata=payload.get("metadata") or None)


@dataclass
class EntryInfo(WriteInfo):
    """A filesystem entry (E2B's EntryInfo)."""

    size: int = 0
    mode: int = 0
    permissions: str = ""
    owner: str = ""
    group: str = ""
    modified_time: Optional[_dt.datetime] = None
    symlink_target: Optional[str] = None

    @classmethod
    def from_wire(cls, m: dict) -> "EntryInfo":
        t = m.get("type")
        ns = m.get("modified_time")
        return cls(
            name=m.get("name", ""),
            type=FileType(t) if t in ("file", "dir") else None,
            path=m.get("path", ""),
            size=m.get("size", 0),
            mode=m.get("mode", 0),
            permissions=m.get("permissions", ""),
            owner=m.get("owner", ""),
            group=m.get("group", ""),
            # E2B: protobuf's Timestamp.ToDatetime(), a naive datetime in UTC
            # (microseconds), and so its repr and str.
            modified_time=None if ns is None else _EPOCH + _dt.timedelta(microseconds=int(ns) // 1000),
            symlink_target=m.get("symlink_target"),
        )


class FilesystemEventType(_Enum):
    """Kinds of change watch_dir() reports (E2B's FilesystemEventType)."""

    CHMOD = "chmod"
    CREATE = "create"
    REMOVE = "remove"
    RENAME = "rename"
    WRITE = "write"


EventType = FilesystemEventType


@dataclass
class FilesystemEvent:
    """One change under a watched directory; `name` is relative to it."""

    name: str
    type: FilesystemEventType
    entry: Optional[EntryInfo] = None
    """What the event names, with watch_dir(include_entry=True) (None once it is gone)."""


@dataclass
class CommandResult:
    """Result of a finished command (E2B's CommandResult)."""

    stderr: str
    stdout: str
    exit_code: int
    error: Optional[str] = None


@dataclass
class ProcessInfo:
    """A running command (E2B's ProcessInfo)."""

    pid: int
    tag: Optional[str]
    cmd: str
    args: List[str]
    envs: Dict[str, str]
    cwd: Optional[str]


class SandboxState(str, _Enum):
    """E2B's SandboxState. A cellvm sandbox is running until killed; it is never paused."""

    RUNNING = "running"
    PAUSED = "paused"

    def __str__(self):
        return str(self.value)


ProxyTypes = str
"""E2B's type of the `proxy` option (a URL; E2B also takes httpx's URL and
Proxy objects). cellvm's channel is local: the option is accepted, unused."""


class ApiParams(TypedDict, total=False):
    """E2B's per-request options (the `**opts` of most calls). cellvm uses
    request_timeout; the others address E2B's cloud API and are ignored."""

    request_timeout: Optional[float]
    headers: Optional[Dict[str, str]]
    api_headers: Optional[Dict[str, str]]
    api_key: Optional[str]
    validate_api_key: Optional[bool]
    domain: Optional[str]
    api_url: Optional[str]
    debug: Optional[bool]
    proxy: Optional[ProxyTypes]
    sandbox_url: Optional[str]


SandboxListOrder = Literal["asc", "desc"]
"""E2B's `order` of Sandbox.list(): by start time."""


class SandboxOnTimeoutPause(TypedDict):
    """E2B's on_timeout {"action": "pause"}: the sandbox is paused at its
    timeout (`keep_memory` False, a filesystem-only pause, is refused by
    cellvm's create(): the keeper that pauses it cannot reach its files)."""
    action: Literal["pause"]
    keep_memory: NotRequired[bool]


class SandboxOnTimeoutKill(TypedDict):
    action: Literal["kill"]


SandboxOnTimeout = Union[Literal["pause", "kill"], SandboxOnTimeoutPause, SandboxOnTimeoutKill]
"""E2B's lifecycle `on_timeout`: "kill" (the default) or "pause" (its keeper
pauses it at its timeout: `cellvm create --on-timeout pause`)."""


class SandboxLifecycle(TypedDict, total=False):
    """E2B's `lifecycle=` of create()."""

    on_timeout: SandboxOnTimeout
    auto_resume: bool


class SandboxInfoLifecycle(TypedDict):
    """E2B's SandboxInfo.lifecycle."""

    on_timeout: Literal["pause", "kill"]
    auto_resume: bool


@dataclass
class SandboxInfo:
    """E2B's SandboxInfo (fields in E2B's order), from Sandbox.get_info() and
    Sandbox.list(): `sandbox_id` is a micro-VM's registry key (`qemu-1a2b3c4d`,
    as `cellvm ps` shows it), a dev-mode agent's address; `template_id` the
    image directory of a booted VM, else
    None; `started_at`/`end_at` the lifetime's start and end (cellvm.lifetime;
    `end_at` None for a dev-mode agent, which has no timeout); `envd_version` is the agent's version;
    `cpu_count`/`memory_mb` those of a booted VM, else of the agent's host."""

    sandbox_id: str
    sandbox_domain: Optional[str] = None
    template_id: Optional[str] = None
    name: Optional[str] = None
    metadata: Dict[str, str] = field(default_factory=dict)
    started_at: Optional[_dt.datetime] = None
    end_at: Optional[_dt.datetime] = None
    state: SandboxState = SandboxState.RUNNING
    cpu_count: int = 0
    memory_mb: int = 0
    envd_version: str = ""
    allow_internet_access: Optional[bool] = None
    network: Optional[dict] = None
    lifecycle: Optional[dict] = None
    volume_mounts: List[Dict[str, str]] = field(default_factory=list)


@dataclass
class SandboxMetrics:
    """E2B's SandboxMetrics: one sample of the sandbox's resources (bytes)."""

    cpu_count: int
    cpu_used_pct: float
    disk_total: int
    disk_used: int
    mem_total: int
    mem_used: int
    mem_cache: int
    timestamp: _dt.datetime


@dataclass
class SandboxQuery:
    """E2B's filter for Sandbox.list(): metadata (every pair must match),
    state (a list of SandboxState), started_after, template."""

    metadata: Optional[Dict[str, str]] = None
    state: Optional[List[SandboxState]] = None
    started_after: Optional[_dt.datetime] = None
    template: Optional[str] = None
