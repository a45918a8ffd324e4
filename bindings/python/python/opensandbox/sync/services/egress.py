# Generated from opensandbox/services/egress.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""Sync ``Egress`` service: the sandbox's egress policy."""

from __future__ import annotations

from typing import Any, List

from opensandbox import _bridge
from opensandbox.models.sandboxes import NetworkPolicy, NetworkRule


class EgressSync:
    """Get / patch / delete egress rules of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    def get_policy(self) -> NetworkPolicy:
        r = _bridge.call(self._client, "sandbox.get_egress_policy", {"sandbox": self._id})
        return NetworkPolicy.model_validate(r)

    def patch_rules(self, rules: List[NetworkRule]) -> None:
        items = [{"action": r.action, "target": r.target} for r in rules]
        _bridge.call(self._client, "sandbox.patch_egress_rules", {"sandbox": self._id, "rules": items})

    def delete_rules(self, targets: List[str]) -> None:
        _bridge.call(self._client, "sandbox.delete_egress_rules", {"sandbox": self._id, "targets": list(targets)})


__all__ = ["EgressSync"]
