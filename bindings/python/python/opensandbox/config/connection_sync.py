"""``ConnectionConfigSync``: the synchronous API's connection settings."""

from opensandbox.config.connection import ConnectionConfig


class ConnectionConfigSync(ConnectionConfig):
    """Same fields and defaults as :class:`ConnectionConfig`."""

    def close_transport_if_owned(self) -> None:  # type: ignore[override]
        """Nothing to close: connections belong to the shared native pool."""


__all__ = ["ConnectionConfigSync"]
