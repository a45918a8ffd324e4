# Generated from opensandbox/services/diagnostics.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""Sync ``Diagnostics`` service."""

from __future__ import annotations

from typing import Any

from opensandbox import _bridge
from opensandbox.models.diagnostics import DiagnosticContent


class DiagnosticsSync:
    """Logs and events of sandboxes."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def get_logs(self, sandbox_id: str, scope: str) -> DiagnosticContent:
        r = _bridge.call(self._client, "manager.get_diagnostic_logs", {"sandbox_id": sandbox_id, "scope": scope})
        return DiagnosticContent.model_validate(r)

    def get_events(self, sandbox_id: str, scope: str) -> DiagnosticContent:
        r = _bridge.call(self._client, "manager.get_diagnostic_events", {"sandbox_id": sandbox_id, "scope": scope})
        return DiagnosticContent.model_validate(r)


__all__ = ["DiagnosticsSync"]
