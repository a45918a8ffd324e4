"""``ConnectionConfig``: where the server is and how to talk to it."""

import os
from datetime import timedelta
from typing import Any, Dict, List, Optional

from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from opensandbox.models._base import LazyModel

from opensandbox.transport.retry import RetryPolicy

DEFAULT_DOMAIN = "localhost:8080"
USER_AGENT = "OpenSandbox-Python-SDK/1.1.1"


class ConnectionConfig(LazyModel):
    """Connection settings shared by ``Sandbox`` and ``SandboxManager``.

    ``api_key`` falls back to ``OPEN_SANDBOX_API_KEY``, ``domain`` to
    ``OPEN_SANDBOX_DOMAIN`` (then ``localhost:8080``). A scheme in the domain wins
    over ``protocol``. All instances built from one config share one connection pool.
    """

    api_key: Optional[str] = Field(default=None)
    domain: Optional[str] = Field(default=None)
    protocol: str = Field(default="http")
    request_timeout: timedelta = Field(default=timedelta(seconds=30))
    debug: bool = False
    user_agent: str = USER_AGENT
    headers: Dict[str, str] = Field(default_factory=dict)
    use_server_proxy: bool = False
    # Retries of non-streaming requests, applied by the native core (on by default, the
    # official 1.1.1 defaults); ``RetryPolicy.disabled()`` turns them off. Knobs the
    # core has no equivalent for are refused in model_post_init.
    retry_policy: RetryPolicy = Field(default_factory=RetryPolicy)
    # (1.1) The endpoint cache of this config (the core's): resolved sandbox endpoints
    # are reused for ``endpoint_cache_ttl``, up to ``endpoint_cache_size`` entries (0 =
    # the default 1024); kill and pause through this config drop a sandbox's entries.
    endpoint_cache_ttl: timedelta = Field(default=timedelta(seconds=600))
    endpoint_cache_size: int = Field(default=1024)
    endpoint_cache_disabled: bool = False
    # Accepted; this package sends no SDK telemetry (sandbox.create latency reports)
    # whatever it says (nor does OPENSANDBOX_DISABLE_METRICS change anything).
    disable_metrics: bool = False
    # The official knobs of its httpx stack. Connections here belong to the native
    # pool, so a custom transport or event hooks cannot be honoured: rather than
    # ignore them (a test mocking with httpx.MockTransport would then hit the network)
    # model_post_init refuses them with InvalidArgumentException.
    transport: Optional[Any] = None
    event_hooks: Optional[Dict[str, List[Any]]] = None

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    _native: Any = PrivateAttr(default=None)
    _owns_transport: bool = PrivateAttr(default=True)

    def model_post_init(self, __context: Any) -> None:
        from opensandbox.exceptions import InvalidArgumentException

        if self.transport is not None:
            raise InvalidArgumentException(
                "ConnectionConfig(transport=...) is not supported: this SDK talks through its "
                "native connection pool, so a custom httpx transport would never be used"
            )
        unsupported = self.retry_policy._unsupported()
        if unsupported:
            raise InvalidArgumentException(
                f"ConnectionConfig(retry_policy=...): {', '.join(unsupported)} not supported: "
                "retries run in the native core, which retries POST/PATCH only when the "
                "connection could not be established, bounds each attempt by request_timeout "
                "and reports no retry events (use max_retries, initial_backoff, max_backoff, "
                "backoff_multiplier, jitter and retryable_status_codes_idempotent)"
            )
        if self.event_hooks:
            raise InvalidArgumentException(
                "ConnectionConfig(event_hooks=...) is not supported: requests do not go through "
                "httpx, so the hooks would never be called"
            )

    @field_validator("protocol")
    @classmethod
    def protocol_must_be_valid(cls, v: str) -> str:
        if v.lower() not in ("http", "https"):
            raise ValueError("protocol must be 'http' or 'https'")
        return v.lower()

    @field_validator("retry_policy", mode="before")
    @classmethod
    def retry_policy_must_be_a_policy(cls, v: Any) -> Any:
        if v is None:
            return RetryPolicy.disabled()
        if not isinstance(v, RetryPolicy):
            from opensandbox.exceptions import InvalidArgumentException

            raise InvalidArgumentException(
                f"retry_policy must be an opensandbox.transport.RetryPolicy, got {type(v).__name__}"
            )
        return v

    @field_validator("endpoint_cache_ttl")
    @classmethod
    def ttl_must_not_be_negative(cls, v: timedelta) -> timedelta:
        if v.total_seconds() < 0:
            raise ValueError("endpoint_cache_ttl must not be negative")
        return v

    @field_validator("request_timeout")
    @classmethod
    def timeout_must_be_positive(cls, v: timedelta) -> timedelta:
        if v.total_seconds() <= 0:
            raise ValueError("request_timeout must be positive")
        return v

    def get_api_key(self) -> Optional[str]:
        """The key sent as ``OPEN-SANDBOX-API-KEY``."""
        return self.api_key if self.api_key is not None else os.environ.get("OPEN_SANDBOX_API_KEY")

    def get_domain(self) -> str:
        """The server's host[:port] (or URL)."""
        return self.domain or os.environ.get("OPEN_SANDBOX_DOMAIN") or DEFAULT_DOMAIN

    def get_base_url(self) -> str:
        """The lifecycle API's base URL."""
        domain = self.get_domain()
        if domain.startswith("http://") or domain.startswith("https://"):
            return domain.rstrip("/") + "/v1"
        return f"{self.protocol}://{domain}/v1"

    def _to_native_config(self) -> Dict[str, Any]:
        """The op layer's ``config.new`` arguments of this configuration."""
        cfg: Dict[str, Any] = {
            "domain": self.get_domain(),
            "protocol": self.protocol,
            "request_timeout_s": self.request_timeout.total_seconds(),
            "headers": dict(self.headers),
            "user_agent": self.user_agent,
            "use_server_proxy": self.use_server_proxy,
            "retry": self.retry_policy._to_native(),
        }
        if self.endpoint_cache_disabled:
            cfg["endpoint_cache_ttl_s"] = 0.0
            cfg["endpoint_cache_size"] = 0
        else:
            cfg["endpoint_cache_ttl_s"] = self.endpoint_cache_ttl.total_seconds()
            cfg["endpoint_cache_size"] = self.endpoint_cache_size if self.endpoint_cache_size > 0 else 1024
        key = self.get_api_key()
        cfg["api_key"] = key if key is not None else ""
        return cfg

    def _client(self) -> Any:
        """The native client of this configuration (built once)."""
        if self._native is None:
            from opensandbox import _native

            self._native = _native.Client(self._to_native_config())
        return self._native

    @property
    def owns_transport(self) -> bool:
        """True when this config may close its transport (as the official): here there is
        nothing of its own to close, the native pool outlives every config."""
        return self._owns_transport

    def with_transport_if_missing(self) -> "ConnectionConfig":
        """The official hook that gives a config its own transport: the native pool is
        always there, so this config is returned as it is."""
        return self

    async def close_transport_if_owned(self) -> None:
        """Nothing to close: connections belong to the shared native pool."""


__all__ = ["ConnectionConfig"]
