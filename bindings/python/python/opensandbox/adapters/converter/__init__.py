"""``opensandbox.adapters.converter``: converters that tools import (``osb`` uses
``MetricsModelConverter`` on the metrics stream it reads itself)."""

from __future__ import annotations

from opensandbox.api.execd.models import Metrics
from opensandbox.models.sandboxes import SandboxMetrics


class MetricsModelConverter:
    """Wire metrics (execd ``/metrics``) to :class:`SandboxMetrics`."""

    @staticmethod
    def to_sandbox_metrics(api_metrics: Metrics) -> SandboxMetrics:
        return SandboxMetrics(
            cpu_count=api_metrics.cpu_count,
            cpu_used_percentage=api_metrics.cpu_used_pct,
            memory_total_in_mib=api_metrics.mem_total_mib,
            memory_used_in_mib=api_metrics.mem_used_mib,
            timestamp=api_metrics.timestamp,
        )


__all__ = ["MetricsModelConverter"]
