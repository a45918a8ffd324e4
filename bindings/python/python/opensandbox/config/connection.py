"""``ConnectionConfig``: where the server is and how to talk to it."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Dict, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

DEFAULT_DOMAIN = "localhost:8080"
USER_AGENT = "OpenSandbox-Python-SDK/1.1.1"


class ConnectionConfig(BaseModel):
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

    model_config = ConfigDict(arbitrary_types_allowed=True)

    _native: Any = PrivateAttr(default=None)

    @field_validator("protocol")
    @classmethod
    def protocol_must_be_valid(cls, v: str) -> str:
        if v.lower() not in ("http", "https"):
            raise ValueError("protocol must be 'http' or 'https'")
        return v.lower()

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
        }
        key = self.get_api_key()
        cfg["api_key"] = key if key is not None else ""
        return cfg

    def _client(self) -> Any:
        """The native client of this configuration (built once)."""
        if self._native is None:
            from opensandbox import _native

            self._native = _native.Client(self._to_native_config())
        return self._native

    async def close_transport_if_owned(self) -> None:
        """Nothing to close: connections belong to the shared native pool."""


__all__ = ["ConnectionConfig"]
