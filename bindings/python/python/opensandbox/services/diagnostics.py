"""Async ``Diagnostics`` service."""

from __future__ import annotations

from typing import Any

from opensandbox import _bridge
from opensandbox.models.diagnostics import DiagnosticContent


class Diagnostics:
    """Logs and events of sandboxes."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def get_logs(self, sandbox_id: str, scope: str) -> DiagnosticContent:
        r = await _bridge.acall(self._client, "manager.get_diagnostic_logs", {"sandbox_id": sandbox_id, "scope": scope})
        return DiagnosticContent.model_validate(r)

    async def get_events(self, sandbox_id: str, scope: str) -> DiagnosticContent:
        r = await _bridge.acall(
            self._client, "manager.get_diagnostic_events", {"sandbox_id": sandbox_id, "scope": scope}
        )
        return DiagnosticContent.model_validate(r)


__all__ = ["Diagnostics"]
