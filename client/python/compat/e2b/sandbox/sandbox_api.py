"""e2b.sandbox.sandbox_api under E2B's module name."""

from cellvm.models import (  # noqa: F401
    SandboxInfo, SandboxInfoLifecycle, SandboxLifecycle, SandboxListOrder, SandboxMetrics,
    SandboxOnTimeout, SandboxOnTimeoutKill, SandboxOnTimeoutPause, SandboxQuery, SandboxState,
)
from cellvm.network import (  # noqa: F401
    ALL_TRAFFIC, SandboxNetworkOpts, SandboxNetworkSelector, SandboxNetworkSelectorContext,
    SandboxNetworkUpdate,
)
from cellvm.snapshots import SnapshotInfo  # noqa: F401
