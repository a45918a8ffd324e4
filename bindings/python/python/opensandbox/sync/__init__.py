"""The blocking API: ``SandboxSync``, ``SandboxManagerSync`` and ``SandboxPoolSync``."""

from opensandbox.sync.manager import SandboxManagerSync
from opensandbox.sync.pool import SandboxPoolSync
from opensandbox.sync.sandbox import SandboxSync

__all__ = ["SandboxSync", "SandboxManagerSync", "SandboxPoolSync"]
