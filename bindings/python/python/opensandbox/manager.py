"""``SandboxManager``: lifecycle calls by sandbox id (async)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, Optional

from opensandbox import _bridge
from opensandbox._args import sandbox_filter, snapshot_filter, template_filter, template_request_args
from opensandbox.config.connection import ConnectionConfig
from opensandbox.models.diagnostics import DiagnosticContent
from opensandbox.models.sandboxes import (
    PagedSandboxInfos,
    PagedSnapshotInfos,
    SandboxFilter,
    SandboxInfo,
    SandboxRenewResponse,
    SnapshotFilter,
    SnapshotInfo,
)
from opensandbox.models.templates import (
    CreateTemplateRequest,
    PagedTemplateInfos,
    TemplateFilter,
    TemplateInfo,
)


class SandboxManager:
    """List, inspect, renew, pause, resume and kill sandboxes; snapshots; diagnostics."""

    def __init__(self, connection_config: Optional[ConnectionConfig] = None) -> None:
        self._config = connection_config or ConnectionConfig()
        self._client = self._config._client()

    @property
    def connection_config(self) -> ConnectionConfig:
        return self._config

    @classmethod
    async def create(cls, connection_config: Optional[ConnectionConfig] = None) -> "SandboxManager":
        """A manager over ``connection_config`` (default: from the environment)."""
        return cls(connection_config)

    async def _call(self, op: str, **args: Any) -> Any:
        return await _bridge.acall(self._client, op, args)

    async def list_sandbox_infos(self, filter: SandboxFilter) -> PagedSandboxInfos:
        return PagedSandboxInfos.model_validate(
            await self._call("manager.list_sandbox_infos", **sandbox_filter(filter))
        )

    async def get_sandbox_info(self, sandbox_id: str) -> SandboxInfo:
        return SandboxInfo.model_validate(await self._call("manager.get_sandbox_info", sandbox_id=sandbox_id))

    async def get_diagnostic_logs(self, sandbox_id: str, scope: str) -> DiagnosticContent:
        return DiagnosticContent.model_validate(
            await self._call("manager.get_diagnostic_logs", sandbox_id=sandbox_id, scope=scope)
        )

    async def get_diagnostic_events(self, sandbox_id: str, scope: str) -> DiagnosticContent:
        return DiagnosticContent.model_validate(
            await self._call("manager.get_diagnostic_events", sandbox_id=sandbox_id, scope=scope)
        )

    async def patch_sandbox_metadata(self, sandbox_id: str, patch: Dict[str, Optional[str]]) -> SandboxInfo:
        return SandboxInfo.model_validate(
            await self._call("manager.patch_sandbox_metadata", sandbox_id=sandbox_id, patch=patch)
        )

    async def kill_sandbox(self, sandbox_id: str) -> None:
        await self._call("manager.kill_sandbox", sandbox_id=sandbox_id)

    async def renew_sandbox(self, sandbox_id: str, timeout: timedelta) -> SandboxRenewResponse:
        r = await self._call("manager.renew_sandbox", sandbox_id=sandbox_id, seconds=timeout.total_seconds())
        return SandboxRenewResponse.model_validate(r)

    async def pause_sandbox(self, sandbox_id: str) -> None:
        await self._call("manager.pause_sandbox", sandbox_id=sandbox_id)

    async def resume_sandbox(self, sandbox_id: str) -> None:
        await self._call("manager.resume_sandbox", sandbox_id=sandbox_id)

    async def create_snapshot(self, sandbox_id: str, name: Optional[str] = None) -> SnapshotInfo:
        return SnapshotInfo.model_validate(
            await self._call("manager.create_snapshot", sandbox_id=sandbox_id, name=name)
        )

    async def get_snapshot(self, snapshot_id: str) -> SnapshotInfo:
        return SnapshotInfo.model_validate(await self._call("manager.get_snapshot", snapshot_id=snapshot_id))

    async def list_snapshots(self, filter: SnapshotFilter) -> PagedSnapshotInfos:
        return PagedSnapshotInfos.model_validate(await self._call("manager.list_snapshots", **snapshot_filter(filter)))

    async def delete_snapshot(self, snapshot_id: str) -> None:
        await self._call("manager.delete_snapshot", snapshot_id=snapshot_id)

    async def create_template(self, request: CreateTemplateRequest) -> TemplateInfo:
        """Declares a template build (phase ``Pending``); poll :meth:`get_template` until
        ``Succeeded`` or ``Failed``."""
        return TemplateInfo.model_validate(
            await self._call("manager.create_template", **template_request_args(request))
        )

    async def get_template(self, template_id: str) -> TemplateInfo:
        return TemplateInfo.model_validate(await self._call("manager.get_template", template_id=template_id))

    async def list_templates(self, filter: Optional[TemplateFilter] = None) -> PagedTemplateInfos:
        return PagedTemplateInfos.model_validate(await self._call("manager.list_templates", **template_filter(filter)))

    async def delete_template(self, template_id: str) -> None:
        """Deletes a template; sandboxes created from it keep running."""
        await self._call("manager.delete_template", template_id=template_id)

    async def close(self) -> None:
        """Nothing to release: connections belong to the shared native pool."""

    async def __aenter__(self) -> "SandboxManager":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


__all__ = ["SandboxManager"]
