"""Diagnostics model (``opensandbox.models.diagnostics``)."""

from datetime import datetime
from typing import List, Optional

from pydantic import ConfigDict, Field

from opensandbox.models._base import LazyModel


class DiagnosticContent(LazyModel):
    """Logs or events of a sandbox, inline or behind a URL."""

    sandbox_id: str = Field(alias="sandboxId")
    kind: str
    scope: str
    delivery: str
    content_type: str = Field(alias="contentType")
    truncated: bool
    content: Optional[str] = None
    content_url: Optional[str] = Field(default=None, alias="contentUrl")
    content_length: Optional[int] = Field(default=None, alias="contentLength")
    expires_at: Optional[datetime] = Field(default=None, alias="expiresAt")
    warnings: Optional[List[str]] = None

    model_config = ConfigDict(populate_by_name=True)


__all__ = ["DiagnosticContent"]
