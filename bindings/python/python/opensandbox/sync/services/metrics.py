"""Sync ``Metrics`` service (``sandbox.metrics``)."""

from __future__ import annotations

from typing import Any, Iterator

from opensandbox import _bridge
from opensandbox.models.sandboxes import SandboxMetrics


class MetricsSync:
    """CPU and memory of a sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    def get_metrics(self, sandbox_id: str) -> SandboxMetrics:
        """Current metrics of ``sandbox_id`` (this sandbox's id)."""
        r = _bridge.call(self._client, "sandbox.get_metrics", {"sandbox": sandbox_id or self._id})
        return SandboxMetrics.model_validate(_bridge.loads(r))

    def watch_metrics(self) -> Iterator[SandboxMetrics]:
        """Extension of this SDK: a live stream of samples (``/metrics/watch``)."""
        chunks = _bridge.call(self._client, "metrics.watch", {"sandbox": self._id})
        try:
            while True:
                item = _bridge.next_item(chunks)
                if item is None:
                    return
                yield SandboxMetrics.model_validate(_bridge.loads(item))
        finally:
            chunks.close()


__all__ = ["MetricsSync"]
