"""cellvm: run Python in a cellvm micro-VM, with the e2b_code_interpreter API.

    from cellvm import Sandbox          # instead of: from e2b_code_interpreter import Sandbox
    with Sandbox.create("build/image") as sbx:      # boots a micro-VM (cellvm.launch)
        print(sbx.run_code("1 + 1").text)
    with Sandbox.connect("unix:/run/cellvm/agent.sock") as sbx:   # an agent already running
        print(sbx.run_code("1 + 1").text)

See docs/SDK.md for what matches E2B and what differs. `CodeInterpreter` is
E2B 0.x's API (`sandbox.notebook.exec_cell`, ...), the legacy name
(cellvm.legacy), for tutorials written before E2B renamed it.
"""

from .boot import BootReport
from .exceptions import (
    AuthenticationException,
    BuildException,
    CommandExitException,
    FileNotFoundException,
    FileUploadException,
    GitAuthException,
    GitUpstreamException,
    InvalidArgumentException,
    NotEnoughSpaceException,
    NotFoundException,
    RateLimitException,
    SandboxException,
    SandboxNotFoundException,
    SecretException,
    SecretNotFoundException,
    TemplateException,
    TimeoutException,
    VolumeException,
    VolumeNotFoundException,
    VolumePathNotFoundException,
)
from .models import (
    ApiParams,
    ProxyTypes,
    SandboxInfoLifecycle,
    SandboxLifecycle,
    SandboxListOrder,
    SandboxOnTimeout,
    CommandResult,
    Context,
    EntryInfo,
    EventType,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    ProcessInfo,
    PtyOutput,
    PtySize,
    RunCodeLanguage,
    SandboxMetrics,
    SandboxQuery,
    SandboxState,
    Stderr,
    Stdout,
    Username,
    WriteEntry,
    WriteInfo,
    Execution,
    ExecutionError,
    Logs,
    MIMEType,
    OutputHandler,
    OutputMessage,
    Result,
    SandboxInfo,
)
from .commands import CommandHandle
from .files import WatchHandle
from .git import Git
from .git_types import GitBranches, GitFileStatus, GitResetMode, GitStatus
from .network import (ALL_TRAFFIC, SandboxNetworkOpts, SandboxNetworkSelector,
                      SandboxNetworkSelectorContext, SandboxNetworkUpdate)
from .sandbox import Sandbox, SandboxPaginator
from .snapshots import AsyncSnapshotPaginator, SnapshotInfo, SnapshotPaginator
from .async_commands import AsyncCommandHandle
from .async_files import AsyncWatchHandle
from .async_sandbox import AsyncSandbox, AsyncSandboxPaginator
from .legacy import CodeInterpreter  # E2B 0.x's API, the legacy name (docs/SDK.md)

__all__ = [
    "ApiParams",
    "ProxyTypes",
    "SandboxInfoLifecycle",
    "SandboxLifecycle",
    "SandboxListOrder",
    "SandboxNetworkSelector",
    "SandboxNetworkSelectorContext",
    "SandboxNetworkUpdate",
    "SandboxOnTimeout",
    "SecretException",
    "SecretNotFoundException",
    "VolumeException",
    "VolumeNotFoundException",
    "VolumePathNotFoundException",
    "ALL_TRAFFIC",
    "SandboxNetworkOpts",
    "AsyncCommandHandle",
    "AsyncSandbox",
    "AsyncSandboxPaginator",
    "AsyncWatchHandle",
    "AuthenticationException",
    "BuildException",
    "FileNotFoundException",
    "FileUploadException",
    "Git",
    "GitAuthException",
    "GitBranches",
    "GitFileStatus",
    "GitResetMode",
    "GitStatus",
    "GitUpstreamException",
    "PtyOutput",
    "PtySize",
    "RunCodeLanguage",
    "SandboxNotFoundException",
    "SandboxPaginator",
    "SnapshotInfo",
    "SnapshotPaginator",
    "AsyncSnapshotPaginator",
    "SandboxMetrics",
    "SandboxQuery",
    "SandboxState",
    "Stderr",
    "Stdout",
    "Username",
    "WriteEntry",
    "CommandExitException",
    "CommandHandle",
    "CommandResult",
    "EntryInfo",
    "EventType",
    "FileType",
    "FilesystemEvent",
    "FilesystemEventType",
    "ProcessInfo",
    "WatchHandle",
    "WriteInfo",
    "BootReport",
    "CodeInterpreter",
    "Context",
    "Execution",
    "ExecutionError",
    "InvalidArgumentException",
    "Logs",
    "MIMEType",
    "NotEnoughSpaceException",
    "NotFoundException",
    "OutputHandler",
    "OutputMessage",
    "RateLimitException",
    "Result",
    "Sandbox",
    "SandboxInfo",
    "SandboxException",
    "TemplateException",
    "TimeoutException",
]
