"""Sandbox lifecycle models (``opensandbox.models.sandboxes``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, List, Optional, Set

from pydantic import BaseModel, Field, field_validator, model_validator


class SandboxImageAuth(BaseModel):
    """Registry credentials of a private image."""

    username: str
    password: str


class SandboxImageSpec(BaseModel):
    """A container image; ``SandboxImageSpec("python:3.11")`` works positionally."""

    image: str
    auth: Optional[SandboxImageAuth] = None

    def __init__(self, image: Optional[str] = None, *, auth: Optional[SandboxImageAuth] = None, **data: Any) -> None:
        if image is not None:
            data["image"] = image
        if auth is not None:
            data["auth"] = auth
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _wire_uri(cls, data: Any) -> Any:
        # The lifecycle API calls the image reference "uri".
        if isinstance(data, dict) and "image" not in data and "uri" in data:
            data = dict(data)
            data["image"] = data.pop("uri")
        return data

    @field_validator("image")
    @classmethod
    def image_must_not_be_empty(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError("image cannot be empty")
        return v


class PlatformSpec(BaseModel):
    """OS / architecture of a sandbox."""

    os: str = "linux"
    arch: str = "amd64"


class NetworkRule(BaseModel):
    """One egress rule."""

    action: str = Field(description="allow or deny")
    target: str


class NetworkPolicy(BaseModel):
    """Egress policy: a default action and rules."""

    default_action: Optional[str] = None
    egress: Optional[List[NetworkRule]] = None


class SandboxStatus(BaseModel):
    """Lifecycle state of a sandbox."""

    state: str
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_at: Optional[datetime] = None


class SnapshotStatus(BaseModel):
    """Lifecycle state of a snapshot."""

    state: str
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_at: Optional[datetime] = None


class SnapshotInfo(BaseModel):
    """A snapshot."""

    id: str
    sandbox_id: str
    name: Optional[str] = None
    status: SnapshotStatus
    created_at: datetime


class SandboxInfo(BaseModel):
    """A sandbox as the lifecycle API reports it."""

    id: str
    status: SandboxStatus
    entrypoint: List[str] = Field(default_factory=list)
    expires_at: Optional[datetime] = None
    created_at: datetime
    image: Optional[SandboxImageSpec] = None
    snapshot_id: Optional[str] = None
    platform: Optional[PlatformSpec] = None
    metadata: Optional[Dict[str, str]] = None
    extensions: Optional[Dict[str, str]] = None


class SandboxCreateResponse(BaseModel):
    """Answer of a create call."""

    id: str
    platform: Optional[PlatformSpec] = None
    extensions: Optional[Dict[str, str]] = None


class SandboxRenewResponse(BaseModel):
    """The new expiry time."""

    expires_at: datetime


class SandboxEndpoint(BaseModel):
    """How to reach a port of a sandbox: an address plus headers to send."""

    endpoint: str
    headers: Dict[str, str] = Field(default_factory=dict)
    origin: Optional[str] = None


class PaginationInfo(BaseModel):
    """Page metadata of a list call."""

    page: int
    page_size: int
    total_items: int
    total_pages: int
    has_next_page: bool


class PagedSandboxInfos(BaseModel):
    """One page of sandboxes."""

    sandbox_infos: List[SandboxInfo]
    pagination: PaginationInfo


class PagedSnapshotInfos(BaseModel):
    """One page of snapshots."""

    snapshot_infos: List[SnapshotInfo]
    pagination: PaginationInfo


class SandboxFilter(BaseModel):
    """Filter of ``list_sandbox_infos``."""

    states: Optional[List[str]] = None
    metadata: Optional[Dict[str, str]] = None
    page_size: Optional[int] = None
    page: Optional[int] = None

    @field_validator("page_size")
    @classmethod
    def page_size_must_be_positive(cls, v: Optional[int]) -> Optional[int]:
        if v is not None and v <= 0:
            raise ValueError("page_size must be positive")
        return v


class SnapshotFilter(BaseModel):
    """Filter of ``list_snapshots``."""

    sandbox_id: Optional[str] = None
    name: Optional[str] = None
    states: Optional[List[str]] = None
    page_size: Optional[int] = None
    page: Optional[int] = None


class SandboxMetrics(BaseModel):
    """CPU and memory of a sandbox."""

    cpu_count: float
    cpu_used_percentage: float
    memory_total_in_mib: float
    memory_used_in_mib: float
    timestamp: int


class SandboxState:
    """Sandbox state names."""

    PENDING = "Pending"
    RUNNING = "Running"
    PAUSING = "Pausing"
    PAUSED = "Paused"
    STOPPING = "Stopping"
    TERMINATED = "Terminated"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    @classmethod
    def values(cls) -> Set[str]:
        return {v for k, v in vars(cls).items() if k.isupper()}


__all__ = [
    "SandboxImageAuth",
    "SandboxImageSpec",
    "PlatformSpec",
    "NetworkRule",
    "NetworkPolicy",
    "SandboxStatus",
    "SnapshotStatus",
    "SnapshotInfo",
    "SandboxInfo",
    "SandboxCreateResponse",
    "SandboxRenewResponse",
    "SandboxEndpoint",
    "PaginationInfo",
    "PagedSandboxInfos",
    "PagedSnapshotInfos",
    "SandboxFilter",
    "SnapshotFilter",
    "SandboxMetrics",
    "SandboxState",
]
