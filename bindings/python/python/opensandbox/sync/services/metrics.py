# Generated from opensandbox/services/metrics.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
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
        return SandboxMetrics.model_validate(r)

    def watch_metrics(self) -> Iterator[SandboxMetrics]:
        """Extension of this SDK: a live stream of samples (``/metrics/watch``)."""
        watch = _bridge.native(self._client.watch_metrics, {"sandbox": self._id})
        try:
            while True:
                item = _bridge.native(watch.next_item)
                if item is None:
                    return
                yield SandboxMetrics.model_validate(item)
        finally:
            watch.close()


__all__ = ["MetricsSync"]
