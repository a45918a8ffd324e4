"""Connection configuration."""

from opensandbox.config.connection import ConnectionConfig
from opensandbox.config.connection_sync import ConnectionConfigSync

__all__ = ["ConnectionConfig", "ConnectionConfigSync"]
