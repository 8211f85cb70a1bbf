"""E2B's Sandbox methods for features this SDK's sandboxes lack (the snapshots
API, which only `cellvm serve` has here; the MCP gateway), with E2B's names and signatures
(e2b/sandbox_sync/main.py, e2b/sandbox_async/main.py, e2b/sandbox/main.py).
Each raises SandboxException(code="unsupported") saying why, so a program
learns at the call what cellvm does not offer instead of meeting an
AttributeError. tests/e2b_api_allowlist.md lists them."""

from typing import Optional

from ._variant import class_or_instance
from .exceptions import SandboxException

SNAPSHOTS = ("E2B's snapshots API is served by `cellvm serve` to E2B's own SDKs "
             "(docs/SERVE.md, Snapshots), not yet to this SDK's sandboxes; they have "
             "pause(), fork() and local templates (docs/SNAPSHOTS.md)")
MCP = "E2B's MCP gateway is a service of E2B's cloud (create(mcp=...))"


def unsupported(call: str, why: str) -> SandboxException:
    return SandboxException(f"{call} is not supported by cellvm: {why}", code="unsupported")


class CloudOnly:
    """Mixed into the sync Sandbox."""

    @class_or_instance("_cls_create_snapshot")
    def create_snapshot(self, name: Optional[str] = None, **opts):
        raise unsupported("create_snapshot()", SNAPSHOTS)

    @classmethod
    def _cls_create_snapshot(cls, sandbox_id: str, name: Optional[str] = None, **opts):
        raise unsupported("create_snapshot()", SNAPSHOTS)

    @class_or_instance("_cls_list_snapshots")
    def list_snapshots(self, limit: Optional[int] = None, next_token: Optional[str] = None,
                       name: Optional[str] = None, **opts):
        raise unsupported("list_snapshots()", SNAPSHOTS)

    @classmethod
    def _cls_list_snapshots(cls, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                            next_token: Optional[str] = None, name: Optional[str] = None, **opts):
        raise unsupported("list_snapshots()", SNAPSHOTS)

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, **opts) -> bool:
        raise unsupported("delete_snapshot()", SNAPSHOTS)

    def get_mcp_url(self) -> str:
        raise unsupported("get_mcp_url()", MCP)

    def get_mcp_token(self) -> Optional[str]:
        raise unsupported("get_mcp_token()", MCP)


class AsyncCloudOnly(CloudOnly):
    """Mixed into AsyncSandbox: E2B's async twins, coroutines where E2B's are
    (list_snapshots and get_mcp_url are plain methods in E2B's async SDK too)."""

    @class_or_instance("_cls_create_snapshot")
    async def create_snapshot(self, name: Optional[str] = None, **opts):
        raise unsupported("create_snapshot()", SNAPSHOTS)

    @classmethod
    async def _cls_create_snapshot(cls, sandbox_id: str, name: Optional[str] = None, **opts):
        raise unsupported("create_snapshot()", SNAPSHOTS)

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, **opts) -> bool:
        raise unsupported("delete_snapshot()", SNAPSHOTS)

    async def get_mcp_token(self) -> Optional[str]:
        raise unsupported("get_mcp_token()", MCP)
