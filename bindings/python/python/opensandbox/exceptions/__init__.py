"""Exceptions of the OpenSandbox SDK (same classes and attributes as the official SDK)."""

from __future__ import annotations

from datetime import timedelta
from typing import Optional


class SandboxError:
    """Standard error codes of the SDK, plus the server's own codes (``code``)."""

    INTERNAL_UNKNOWN_ERROR = "INTERNAL_UNKNOWN_ERROR"
    READY_TIMEOUT = "READY_TIMEOUT"
    UNHEALTHY = "UNHEALTHY"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    UNEXPECTED_RESPONSE = "UNEXPECTED_RESPONSE"
    POOL_EMPTY = "POOL_EMPTY"
    POOL_ACQUIRE_FAILED = "POOL_ACQUIRE_FAILED"
    POOL_STATE_STORE_UNAVAILABLE = "POOL_STATE_STORE_UNAVAILABLE"
    POOL_NOT_RUNNING = "POOL_NOT_RUNNING"
    POOL_DESTROYED = "POOL_DESTROYED"
    POOL_DESTROY_INCOMPLETE = "POOL_DESTROY_INCOMPLETE"
    TIMEOUT = "TIMEOUT"
    CONNECTION = "CONNECTION"
    RATE_LIMIT = "RATE_LIMIT"

    def __init__(self, code: str, message: Optional[str] = None) -> None:
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"SandboxError(code='{self.code}', message='{self.message}')"


class SandboxException(Exception):
    """Base class of every SDK error."""

    def __init__(
        self,
        message: Optional[str] = None,
        cause: Optional[BaseException] = None,
        error: Optional[SandboxError] = None,
        request_id: Optional[str] = None,
        is_retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.__cause__ = cause
        self.error = error or SandboxError(SandboxError.INTERNAL_UNKNOWN_ERROR)
        self.request_id = request_id
        self._is_retryable = is_retryable
        #: The core's stable error kind (``not_found``, ``timeout``...), set by this SDK.
        self.kind: Optional[str] = None
        #: The operation that failed (``sandbox.get_info``...), set by this SDK.
        self.operation: Optional[str] = None

    @property
    def is_retryable(self) -> bool:
        """Whether the SDK treated this failure as retryable."""
        return self._is_retryable

    def __str__(self) -> str:
        parts = [super().__str__()]
        if self.error and self.error.message:
            parts.append(f"[{self.error.code}] {self.error.message}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        return " | ".join(parts)


class SandboxApiException(SandboxException):
    """The API answered with an error status (4xx/5xx) or an unexpected response."""

    def __init__(
        self,
        message: Optional[str] = None,
        cause: Optional[BaseException] = None,
        status_code: Optional[int] = None,
        error: Optional[SandboxError] = None,
        request_id: Optional[str] = None,
        response_body: Optional[bytes] = None,
        is_retryable: bool = False,
    ) -> None:
        super().__init__(
            message,
            cause,
            error or SandboxError(SandboxError.UNEXPECTED_RESPONSE),
            request_id=request_id,
            is_retryable=is_retryable,
        )
        self.status_code = status_code
        self.response_body = response_body


class SandboxRateLimitException(SandboxApiException):
    """HTTP 429."""

    def __init__(
        self,
        message: Optional[str] = None,
        cause: Optional[BaseException] = None,
        status_code: Optional[int] = 429,
        error: Optional[SandboxError] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[timedelta] = None,
        response_body: Optional[bytes] = None,
        is_retryable: bool = False,
    ) -> None:
        super().__init__(
            message,
            cause,
            status_code=status_code,
            error=error or SandboxError(SandboxError.RATE_LIMIT, message),
            request_id=request_id,
            response_body=response_body,
            is_retryable=is_retryable,
        )
        self.retry_after = retry_after


class SandboxInternalException(SandboxException):
    """An unexpected error inside the SDK (or a broken stream)."""

    def __init__(
        self,
        message: Optional[str] = None,
        cause: Optional[BaseException] = None,
        error: Optional[SandboxError] = None,
        is_retryable: bool = False,
    ) -> None:
        super().__init__(
            message,
            cause,
            error or SandboxError(SandboxError.INTERNAL_UNKNOWN_ERROR),
            is_retryable=is_retryable,
        )


class SandboxTimeoutException(SandboxInternalException):
    """A request timeout or retry deadline fired."""

    def __init__(
        self,
        message: Optional[str] = None,
        cause: Optional[BaseException] = None,
        is_retryable: bool = False,
    ) -> None:
        super().__init__(
            message,
            cause,
            error=SandboxError(SandboxError.TIMEOUT, message),
            is_retryable=is_retryable,
        )


class SandboxConnectionException(SandboxInternalException):
    """The server could not be reached."""

    def __init__(
        self,
        message: Optional[str] = None,
        cause: Optional[BaseException] = None,
        is_retryable: bool = False,
    ) -> None:
        super().__init__(
            message,
            cause,
            error=SandboxError(SandboxError.CONNECTION, message),
            is_retryable=is_retryable,
        )


class SandboxUnhealthyException(SandboxException):
    """The sandbox is unhealthy."""

    def __init__(self, message: Optional[str] = None, cause: Optional[BaseException] = None) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.UNHEALTHY, message))


class SandboxReadyTimeoutException(SandboxException):
    """The sandbox did not become ready in time."""

    def __init__(self, message: Optional[str] = None, cause: Optional[BaseException] = None) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.READY_TIMEOUT, message))


class InvalidArgumentException(SandboxException):
    """An argument of an SDK call is invalid."""

    def __init__(self, message: Optional[str] = None, cause: Optional[BaseException] = None) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.INVALID_ARGUMENT, message))


class PoolEmptyException(SandboxException):
    """``acquire`` found no idle sandbox and the policy does not create one."""

    def __init__(
        self,
        message: Optional[str] = "No idle sandbox available and policy is FAIL_FAST",
        cause: Optional[BaseException] = None,
    ) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.POOL_EMPTY, message))


class PoolAcquireFailedException(SandboxException):
    """``acquire`` tried idle candidates, none was usable, and the policy does not create one."""

    def __init__(
        self,
        message: Optional[str] = "Acquire failed due to unusable idle sandbox candidate(s)",
        cause: Optional[BaseException] = None,
    ) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.POOL_ACQUIRE_FAILED, message))


class PoolStateStoreUnavailableException(SandboxException):
    """The pool state store (e.g. Redis) failed or is unreachable."""

    def __init__(self, message: Optional[str] = None, cause: Optional[BaseException] = None) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.POOL_STATE_STORE_UNAVAILABLE, message))


class PoolNotRunningException(SandboxException):
    """``acquire`` on a pool that is not started, draining or stopped."""

    def __init__(self, message: Optional[str] = "Pool is not running", cause: Optional[BaseException] = None) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.POOL_NOT_RUNNING, message))


class PoolDestroyedException(SandboxException):
    """The pool namespace is being destroyed or was destroyed (``SandboxPoolManager.destroy``)."""

    def __init__(
        self, message: Optional[str] = "Pool namespace is destroyed", cause: Optional[BaseException] = None
    ) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.POOL_DESTROYED, message))


class PoolDestroyIncompleteException(SandboxException):
    """A pool destroy started but did not finish (drain timeout, store failure); run it again."""

    def __init__(
        self, message: Optional[str] = "Pool destroy did not complete", cause: Optional[BaseException] = None
    ) -> None:
        super().__init__(message, cause, SandboxError(SandboxError.POOL_DESTROY_INCOMPLETE, message))


__all__ = [
    "SandboxException",
    "SandboxApiException",
    "SandboxRateLimitException",
    "SandboxInternalException",
    "SandboxTimeoutException",
    "SandboxConnectionException",
    "SandboxUnhealthyException",
    "SandboxReadyTimeoutException",
    "InvalidArgumentException",
    "SandboxError",
    "PoolEmptyException",
    "PoolAcquireFailedException",
    "PoolStateStoreUnavailableException",
    "PoolNotRunningException",
    "PoolDestroyedException",
    "PoolDestroyIncompleteException",
]
