"""Async ``Egress`` service: the sandbox's egress policy."""

from __future__ import annotations

from typing import Any, List

from opensandbox import _bridge
from opensandbox.models.sandboxes import NetworkPolicy, NetworkRule


class Egress:
    """Get / patch / delete egress rules of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def get_policy(self) -> NetworkPolicy:
        r = await _bridge.acall(self._client, "sandbox.get_egress_policy", {"sandbox": self._id})
        return NetworkPolicy.model_validate(r)

    async def patch_rules(self, rules: List[NetworkRule]) -> None:
        items = [{"action": r.action, "target": r.target} for r in rules]
        await _bridge.acall(self._client, "sandbox.patch_egress_rules", {"sandbox": self._id, "rules": items})

    async def delete_rules(self, targets: List[str]) -> None:
        await _bridge.acall(
            self._client, "sandbox.delete_egress_rules", {"sandbox": self._id, "targets": list(targets)}
        )


__all__ = ["Egress"]
