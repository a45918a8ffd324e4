"""The blocking API: ``SandboxSync`` and ``SandboxManagerSync``."""

from opensandbox.sync.manager import SandboxManagerSync
from opensandbox.sync.sandbox import SandboxSync

__all__ = ["SandboxSync", "SandboxManagerSync"]
