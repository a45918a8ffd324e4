"""Template models (``opensandbox.models.templates``, the 1.1 ``/templates`` API).

The models are here so code written against the official 1.1.1 SDK (the ``osb template``
commands among it) imports and validates its input; the reference server does not serve
``/templates`` yet, so there are no template calls on the manager.
"""

from __future__ import annotations

from datetime import datetime
from typing import Dict, List, Optional

from pydantic import BaseModel, ConfigDict, Field

from opensandbox.models.sandboxes import PaginationInfo


class TemplatePhase:
    """Build phases of a template."""

    PENDING = "Pending"
    BUILDING = "Building"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class TemplateReadiness(BaseModel):
    """How a sandbox made from the template is judged ready."""

    probe: Optional[str] = None
    warmup_seconds: Optional[int] = Field(default=None, alias="warmupSeconds")

    model_config = ConfigDict(populate_by_name=True)


class TemplateStatus(BaseModel):
    """Build status of a template."""

    phase: str
    manifest_ref: Optional[str] = Field(default=None, alias="manifestRef")
    message: Optional[str] = None

    model_config = ConfigDict(populate_by_name=True)


class CreateTemplateRequest(BaseModel):
    """A request to build a template from an image."""

    image: str
    publish: str
    resource_limits: Optional[Dict[str, str]] = Field(default=None, alias="resourceLimits")
    entrypoint: Optional[List[str]] = None
    env: Optional[Dict[str, str]] = None
    metadata: Optional[Dict[str, str]] = None
    readiness: Optional[TemplateReadiness] = None
    format: Optional[str] = None

    model_config = ConfigDict(populate_by_name=True)


class TemplateInfo(BaseModel):
    """A template as the server describes it."""

    template_id: str = Field(alias="templateId")
    image: str
    publish: str
    format: str = "native"
    status: TemplateStatus
    created_at: datetime = Field(alias="createdAt")
    updated_at: datetime = Field(alias="updatedAt")
    resource_limits: Optional[Dict[str, str]] = Field(default=None, alias="resourceLimits")
    entrypoint: Optional[List[str]] = None
    env: Optional[Dict[str, str]] = None
    metadata: Optional[Dict[str, str]] = None
    readiness: Optional[TemplateReadiness] = None

    model_config = ConfigDict(populate_by_name=True)


class TemplateFilter(BaseModel):
    """Filter and paging of a template listing."""

    metadata: Optional[Dict[str, str]] = None
    page_size: Optional[int] = Field(default=None, alias="pageSize")
    page: Optional[int] = None

    model_config = ConfigDict(populate_by_name=True)


class PagedTemplateInfos(BaseModel):
    """One page of templates."""

    template_infos: List[TemplateInfo] = Field(alias="templateInfos")
    pagination: PaginationInfo

    model_config = ConfigDict(populate_by_name=True)


__all__ = [
    "PaginationInfo",
    "TemplatePhase",
    "TemplateReadiness",
    "TemplateStatus",
    "CreateTemplateRequest",
    "TemplateInfo",
    "TemplateFilter",
    "PagedTemplateInfos",
]
