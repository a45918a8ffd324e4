"""Retry policy (``opensandbox.transport`` of the official SDK).

The official module also holds httpx transport wrappers (``RetryAsyncTransport``,
``RetrySyncTransport``, ``unwrap_retry_transport``); requests here go through the native
core, which applies the policy itself, so those are not provided.
"""

from opensandbox.transport.retry import JitterMode, RetryCause, RetryEvent, RetryPolicy

__all__ = ["JitterMode", "RetryCause", "RetryEvent", "RetryPolicy"]
