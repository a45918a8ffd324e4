"""The blocking API: ``SandboxSync``, ``SandboxManagerSync`` and ``SandboxPoolSync``."""

from typing import TYPE_CHECKING, Any

from opensandbox.sync.manager import SandboxManagerSync
from opensandbox.sync.sandbox import SandboxSync

if TYPE_CHECKING:
    from opensandbox.sync.pool import SandboxPoolSync


def __getattr__(name: str) -> Any:
    # The pool loads on first use (see opensandbox/__init__.py).
    if name == "SandboxPoolSync":
        from opensandbox.sync.pool import SandboxPoolSync

        globals()[name] = SandboxPoolSync
        return SandboxPoolSync
    raise AttributeError(f"module 'opensandbox.sync' has no attribute {name!r}")


__all__ = ["SandboxSync", "SandboxManagerSync", "SandboxPoolSync"]
