"""Template models (``opensandbox.models.templates``, the 1.1 ``/templates`` API):
``SandboxManager.create_template`` / ``get_template`` / ``list_templates`` /
``delete_template`` and ``Sandbox.create_from_template``."""

from datetime import datetime
from typing import Dict, List, Literal, Optional, Set

from pydantic import ConfigDict, Field, field_validator

from opensandbox.models._base import LazyModel

from opensandbox.models.sandboxes import PaginationInfo


class TemplatePhase:
    """Build phases of a template."""

    PENDING = "Pending"
    BUILDING = "Building"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"

    @classmethod
    def values(cls) -> Set[str]:
        """Every known phase (the server may add more)."""
        return {v for k, v in vars(cls).items() if k.isupper() and not k.startswith("_")}


class TemplateReadiness(LazyModel):
    """How a sandbox made from the template is judged ready."""

    probe: Optional[str] = None
    warmup_seconds: Optional[int] = Field(default=None, alias="warmupSeconds")

    model_config = ConfigDict(populate_by_name=True)


class TemplateStatus(LazyModel):
    """Build status of a template."""

    phase: str
    manifest_ref: Optional[str] = Field(default=None, alias="manifestRef")
    message: Optional[str] = None

    model_config = ConfigDict(populate_by_name=True)


class CreateTemplateRequest(LazyModel):
    """A request to build a template from an image."""

    image: str
    publish: str
    resource_limits: Optional[Dict[str, str]] = Field(default=None, alias="resourceLimits")
    entrypoint: Optional[List[str]] = None
    env: Optional[Dict[str, str]] = None
    metadata: Optional[Dict[str, str]] = None
    readiness: Optional[TemplateReadiness] = None
    format: Optional[Literal["native", "overlaybd"]] = None

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("image", "publish")
    @classmethod
    def must_not_be_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("Template image and publish target cannot be blank")
        return v


class TemplateInfo(LazyModel):
    """A template as the server describes it."""

    template_id: str = Field(alias="templateId")
    image: str
    publish: str
    format: str
    status: TemplateStatus
    created_at: datetime = Field(alias="createdAt")
    updated_at: datetime = Field(alias="updatedAt")
    resource_limits: Optional[Dict[str, str]] = Field(default=None, alias="resourceLimits")
    entrypoint: Optional[List[str]] = None
    env: Optional[Dict[str, str]] = None
    metadata: Optional[Dict[str, str]] = None
    readiness: Optional[TemplateReadiness] = None

    model_config = ConfigDict(populate_by_name=True)


class TemplateFilter(LazyModel):
    """Filter and paging of a template listing."""

    metadata: Optional[Dict[str, str]] = None
    page_size: Optional[int] = Field(default=None, alias="pageSize")
    page: Optional[int] = None

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("page_size")
    @classmethod
    def template_page_size_must_be_positive(cls, v: Optional[int]) -> Optional[int]:
        if v is not None and v <= 0:
            raise ValueError("Page size must be positive")
        return v

    @field_validator("page")
    @classmethod
    def template_page_must_be_positive(cls, v: Optional[int]) -> Optional[int]:
        if v is not None and v < 1:
            raise ValueError("Page must be at least 1 (1-indexed)")
        return v


class PagedTemplateInfos(LazyModel):
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
