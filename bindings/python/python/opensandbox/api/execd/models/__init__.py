"""``opensandbox.api.execd.models``: execd wire models that tools import."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping


@dataclass
class Metrics:
    """One execd metrics sample, as on the wire (``/metrics``, ``/metrics/watch``)."""

    cpu_count: float
    cpu_used_pct: float
    mem_total_mib: float
    mem_used_mib: float
    timestamp: int
    additional_properties: Dict[str, Any] = field(default_factory=dict)

    _KNOWN = ("cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib", "timestamp")

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> "Metrics":
        """Parses a wire object; a missing field raises ``KeyError`` as the official."""
        d = dict(src_dict)
        known = {k: d.pop(k) for k in cls._KNOWN}
        return cls(
            cpu_count=float(known["cpu_count"]),
            cpu_used_pct=float(known["cpu_used_pct"]),
            mem_total_mib=float(known["mem_total_mib"]),
            mem_used_mib=float(known["mem_used_mib"]),
            timestamp=int(known["timestamp"]),
            additional_properties=d,
        )

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = dict(self.additional_properties)
        out.update(
            cpu_count=self.cpu_count,
            cpu_used_pct=self.cpu_used_pct,
            mem_total_mib=self.mem_total_mib,
            mem_used_mib=self.mem_used_mib,
            timestamp=self.timestamp,
        )
        return out


__all__ = ["Metrics"]
