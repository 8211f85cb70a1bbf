"""E2B's Sandbox methods for features only E2B's cloud has (the MCP gateway),
with E2B's names and signatures (e2b/sandbox_sync/main.py, e2b/sandbox_async/main.py, e2b/sandbox/main.py).
Each raises SandboxException(code="unsupported") saying why, so a program
learns at the call what cellvm does not offer instead of meeting an
AttributeError. tests/e2b_api_allowlist.md lists them."""

from typing import Optional

from .exceptions import SandboxException

MCP = "E2B's MCP gateway is a service of E2B's cloud (create(mcp=...))"


def unsupported(call: str, why: str) -> SandboxException:
    return SandboxException(f"{call} is not supported by cellvm: {why}", code="unsupported")


class CloudOnly:
    """Mixed into the sync Sandbox."""

    def get_mcp_url(self) -> str:
        raise unsupported("get_mcp_url()", MCP)

    def get_mcp_token(self) -> Optional[str]:
        raise unsupported("get_mcp_token()", MCP)


class AsyncCloudOnly(CloudOnly):
    """Mixed into AsyncSandbox: E2B's async twins, coroutines where E2B's are
    (get_mcp_url is a plain method in E2B's async SDK too)."""

    async def get_mcp_token(self) -> Optional[str]:
        raise unsupported("get_mcp_token()", MCP)
