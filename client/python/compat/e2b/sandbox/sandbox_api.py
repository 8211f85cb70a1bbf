"""e2b.sandbox.sandbox_api under E2B's module name."""

from cellvm.models import SandboxInfo, SandboxQuery, SandboxState  # noqa: F401
from cellvm.network import SandboxNetworkOpts  # noqa: F401
from cellvm.models import (  # noqa: F401
    SandboxInfoLifecycle, SandboxLifecycle, SandboxListOrder, SandboxMetrics, SandboxOnTimeout,
)
from cellvm.network import (  # noqa: F401
    ALL_TRAFFIC, SandboxNetworkSelector, SandboxNetworkSelectorContext, SandboxNetworkUpdate,
)
