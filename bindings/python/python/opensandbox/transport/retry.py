"""``RetryPolicy`` (the official 1.1.1 shape and defaults), ``RetryEvent`` and the enums.

Retries run in the native core: :class:`~opensandbox.config.ConnectionConfig` hands the
policy to it as the op layer's ``retry`` arguments. The core honours ``max_retries``,
the backoff (``initial_backoff``, ``max_backoff``, ``backoff_multiplier``), jitter on or
off and ``retryable_status_codes_idempotent``; it waits a server's ``Retry-After``
(capped by ``max_backoff``), replays any method when the connection could not be
established and idempotent methods after a broken connection, never a timed-out
request. ``retryable_status_codes_non_idempotent``, ``per_attempt_timeout``,
``overall_deadline`` and ``on_retry`` have no equivalent there: a config whose policy
sets them is refused with ``InvalidArgumentException`` instead of ignoring them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from http import HTTPStatus
from typing import Any, Dict, FrozenSet, List, Optional

_IDEMPOTENT_METHODS: FrozenSet[str] = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


def is_idempotent_method(method: str) -> bool:
    """RFC 9110 §9.2.2 idempotent methods."""
    return method.upper() in _IDEMPOTENT_METHODS


class JitterMode(str, Enum):
    """Backoff jitter. The core randomises each wait in ``[wait/2, wait]`` for ``FULL``
    and ``DECORRELATED`` alike; ``NONE`` waits exactly."""

    NONE = "none"
    FULL = "full"
    DECORRELATED = "decorrelated"


class RetryCause(str, Enum):
    """Failure classification carried on :class:`RetryEvent`."""

    PRE_SEND = "pre_send"
    OPAQUE_TRANSPORT = "opaque_transport"
    READ_TIMEOUT = "read_timeout"
    WRITE_TIMEOUT = "write_timeout"
    UNEXPECTED_EOF = "unexpected_eof"
    STATUS_408 = "status_408"
    STATUS_425 = "status_425"
    STATUS_429 = "status_429"
    STATUS_500 = "status_500"
    STATUS_502 = "status_502"
    STATUS_503 = "status_503"
    STATUS_504 = "status_504"
    STATUS_OTHER = "status_other"

    @classmethod
    def for_status(cls, status_code: int) -> "RetryCause":
        return {
            408: cls.STATUS_408,
            425: cls.STATUS_425,
            429: cls.STATUS_429,
            500: cls.STATUS_500,
            502: cls.STATUS_502,
            503: cls.STATUS_503,
            504: cls.STATUS_504,
        }.get(int(status_code), cls.STATUS_OTHER)


@dataclass(frozen=True)
class RetryEvent:
    """The official ``on_retry`` payload (the core reports no per-retry events, so a
    policy with ``on_retry`` is refused; the class is here for code that names it)."""

    attempt: int
    retries_used: int
    method: str
    url: str
    cause: RetryCause
    status_code: Optional[int]
    backoff: timedelta
    request_id: Optional[str]
    exception: Optional[BaseException]


_DEFAULT_IDEMPOTENT_STATUS: FrozenSet[HTTPStatus] = frozenset(
    {HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.BAD_GATEWAY, HTTPStatus.SERVICE_UNAVAILABLE}
)


@dataclass(frozen=True)
class RetryPolicy:
    """Retry configuration (defaults as the official 1.1.1: 3 retries, 500 ms initial
    backoff, 30 s cap, multiplier 2, decorrelated jitter, 429/502/503 for idempotent
    methods, nothing for POST/PATCH). :meth:`disabled` never retries."""

    max_retries: int = 3
    initial_backoff: timedelta = timedelta(milliseconds=500)
    max_backoff: timedelta = timedelta(seconds=30)
    backoff_multiplier: float = 2.0
    jitter: JitterMode = JitterMode.DECORRELATED
    retryable_status_codes_idempotent: FrozenSet[HTTPStatus] = _DEFAULT_IDEMPOTENT_STATUS
    retryable_status_codes_non_idempotent: FrozenSet[HTTPStatus] = field(default_factory=frozenset)
    per_attempt_timeout: Optional[timedelta] = None
    overall_deadline: Optional[timedelta] = None
    on_retry: Optional[Callable[[RetryEvent], None]] = None

    @classmethod
    def disabled(cls) -> "RetryPolicy":
        """Never retry."""
        return cls(max_retries=0)

    def wraps_transport(self) -> bool:
        """As the official: whether the policy does more than one plain attempt."""
        return (
            self.max_retries > 0
            or self.per_attempt_timeout is not None
            or self.overall_deadline is not None
            or self.on_retry is not None
        )

    def retryable_statuses_for(self, method: str) -> FrozenSet[HTTPStatus]:
        if is_idempotent_method(method):
            return frozenset(self.retryable_status_codes_idempotent)
        return frozenset(self.retryable_status_codes_non_idempotent)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if self.initial_backoff.total_seconds() < 0:
            raise ValueError(f"initial_backoff must be >= 0, got {self.initial_backoff!r}")
        if self.max_backoff.total_seconds() < 0:
            raise ValueError(f"max_backoff must be >= 0, got {self.max_backoff!r}")
        if self.backoff_multiplier < 1.0:
            raise ValueError(f"backoff_multiplier must be >= 1.0, got {self.backoff_multiplier!r}")
        if self.per_attempt_timeout is not None and self.per_attempt_timeout.total_seconds() <= 0:
            raise ValueError(f"per_attempt_timeout must be > 0 when set, got {self.per_attempt_timeout!r}")
        if self.overall_deadline is not None and self.overall_deadline.total_seconds() <= 0:
            raise ValueError(f"overall_deadline must be > 0 when set, got {self.overall_deadline!r}")
        object.__setattr__(self, "retryable_status_codes_idempotent", frozenset(self.retryable_status_codes_idempotent))
        object.__setattr__(
            self, "retryable_status_codes_non_idempotent", frozenset(self.retryable_status_codes_non_idempotent)
        )

    def _unsupported(self) -> List[str]:
        """The knobs the native core cannot honour (empty = all honoured)."""
        knobs: List[str] = []
        if self.retryable_status_codes_non_idempotent:
            knobs.append("retryable_status_codes_non_idempotent")
        if self.per_attempt_timeout is not None:
            knobs.append("per_attempt_timeout")
        if self.overall_deadline is not None:
            knobs.append("overall_deadline")
        if self.on_retry is not None:
            knobs.append("on_retry")
        return knobs

    def _to_native(self) -> Optional[Dict[str, Any]]:
        """The op layer's ``retry`` argument (``None`` = no retries)."""
        if self.max_retries == 0:
            return None
        return {
            "max_retries": self.max_retries,
            "initial_backoff_ms": int(self.initial_backoff.total_seconds() * 1000),
            "max_backoff_ms": int(self.max_backoff.total_seconds() * 1000),
            "multiplier": float(self.backoff_multiplier),
            "jitter": JitterMode(self.jitter) is not JitterMode.NONE,
            "retryable_status_codes": sorted(int(s) for s in self.retryable_status_codes_idempotent),
        }


__all__ = ["JitterMode", "RetryCause", "RetryEvent", "RetryPolicy", "is_idempotent_method"]
