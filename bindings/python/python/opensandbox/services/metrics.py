"""Async ``Metrics`` service (``sandbox.metrics``)."""

from __future__ import annotations

from typing import Any, AsyncIterator

from opensandbox import _bridge
from opensandbox.models.sandboxes import SandboxMetrics


class Metrics:
    """CPU and memory of a sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def get_metrics(self, sandbox_id: str) -> SandboxMetrics:
        """Current metrics of ``sandbox_id`` (this sandbox's id)."""
        r = await _bridge.acall(self._client, "sandbox.get_metrics", {"sandbox": sandbox_id or self._id})
        return SandboxMetrics.model_validate(r)

    async def watch_metrics(self) -> AsyncIterator[SandboxMetrics]:
        """Extension of this SDK: a live stream of samples (``/metrics/watch``)."""
        watch = await _bridge.anative(self._client.watch_metrics_async, {"sandbox": self._id})
        try:
            while True:
                item = await _bridge.anative(watch.next_item_async)
                if item is None:
                    return
                yield SandboxMetrics.model_validate(item)
        finally:
            watch.close()


__all__ = ["Metrics"]
