"""Sandbox lifecycle models (``opensandbox.models.sandboxes``)."""

from datetime import datetime
from typing import Any, Dict, List, Optional, Set, Union

from pydantic import ConfigDict, Field, field_validator, model_validator

from opensandbox.models._base import LazyModel


class SandboxImageAuth(LazyModel):
    """Registry credentials of a private image."""

    username: str
    password: str


class SandboxImageSpec(LazyModel):
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


class PlatformSpec(LazyModel):
    """OS / architecture of a sandbox."""

    os: str = "linux"
    arch: str = "amd64"


class NetworkRule(LazyModel):
    """One egress rule."""

    action: str = Field(description="allow or deny")
    target: str


class NetworkPolicy(LazyModel):
    """Egress policy: a default action and rules (the official default action is deny)."""

    default_action: Optional[str] = Field(default="deny", alias="defaultAction")
    egress: Optional[List[NetworkRule]] = None

    model_config = ConfigDict(populate_by_name=True)


class CredentialProxyConfig(LazyModel):
    """Whether the sandbox's egress goes through the credential proxy (1.1)."""

    enabled: bool = False

    model_config = ConfigDict(populate_by_name=True)


class LifecycleHook(LazyModel):
    """A command run once before the sandbox's entrypoint starts (1.1 ``preStart``)."""

    command: List[str] = Field(min_length=1)
    timeout_seconds: Optional[int] = Field(default=None, alias="timeoutSeconds")

    model_config = ConfigDict(populate_by_name=True)


class PeriodicLifecycleHook(LazyModel):
    """A named command run on a schedule inside the sandbox (1.1 ``periodic``)."""

    name: str = Field(min_length=1)
    schedule: str = Field(min_length=1)
    command: List[str] = Field(min_length=1)
    timeout_seconds: Optional[int] = Field(default=None, alias="timeoutSeconds")

    model_config = ConfigDict(populate_by_name=True)


class SandboxLifecycle(LazyModel):
    """Lifecycle hooks of a sandbox (1.1)."""

    pre_start: Optional[LifecycleHook] = Field(default=None, alias="preStart")
    periodic: Optional[List[PeriodicLifecycleHook]] = None

    model_config = ConfigDict(populate_by_name=True)


class Host(LazyModel):
    """A host directory volume backend."""

    path: str


class PVC(LazyModel):
    """A named (persistent) volume backend."""

    claim_name: str = Field(alias="claimName")
    create_if_not_exists: bool = Field(default=True, alias="createIfNotExists")
    delete_on_sandbox_termination: bool = Field(default=False, alias="deleteOnSandboxTermination")
    storage_class: Optional[str] = Field(default=None, alias="storageClass")
    storage: Optional[str] = None
    access_modes: Optional[List[str]] = Field(default=None, alias="accessModes")

    model_config = ConfigDict(populate_by_name=True)


class OSSFS(LazyModel):
    """An OSS bucket volume backend (the reference server answers it with a 400)."""

    bucket: str
    endpoint: str
    version: str = "2.0"
    options: Optional[List[str]] = None
    access_key_id: Optional[str] = Field(default=None, alias="accessKeyId")
    access_key_secret: Optional[str] = Field(default=None, alias="accessKeySecret", repr=False)

    model_config = ConfigDict(populate_by_name=True)


class Volume(LazyModel):
    """A volume mounted into the sandbox: exactly one backend of host / pvc / ossfs."""

    name: str
    host: Optional[Host] = None
    pvc: Optional[PVC] = None
    ossfs: Optional[OSSFS] = None
    mount_path: str = Field(alias="mountPath")
    read_only: bool = Field(default=False, alias="readOnly")
    sub_path: Optional[str] = Field(default=None, alias="subPath")

    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="after")
    def exactly_one_backend(self) -> "Volume":
        backends = [b for b in (self.host, self.pvc, self.ossfs) if b is not None]
        if len(backends) != 1:
            raise ValueError("a volume needs exactly one backend of host, pvc and ossfs")
        return self


class SandboxStatus(LazyModel):
    """Lifecycle state of a sandbox."""

    state: str
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_at: Optional[datetime] = None


class SnapshotStatus(LazyModel):
    """Lifecycle state of a snapshot."""

    state: str
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_at: Optional[datetime] = None


class SnapshotInfo(LazyModel):
    """A snapshot."""

    id: str
    sandbox_id: str
    name: Optional[str] = None
    status: SnapshotStatus
    created_at: datetime


class SandboxAllocation(LazyModel):
    """How a sandbox was allocated (1.1: from a server-side pool)."""

    mode: str
    pool_ref: str = Field(alias="poolRef")
    state: str

    model_config = ConfigDict(populate_by_name=True)


class SandboxInfo(LazyModel):
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
    allocation: Optional[SandboxAllocation] = None


class SandboxCreateResponse(LazyModel):
    """Answer of a create call."""

    id: str
    platform: Optional[PlatformSpec] = None
    extensions: Optional[Dict[str, str]] = None


class SandboxRenewResponse(LazyModel):
    """The new expiry time."""

    expires_at: datetime


class SandboxEndpoint(LazyModel):
    """How to reach a port of a sandbox: an address plus headers to send."""

    endpoint: str
    headers: Dict[str, str] = Field(default_factory=dict)
    origin: Optional[str] = None


class PaginationInfo(LazyModel):
    """Page metadata of a list call."""

    page: int
    page_size: int
    total_items: int
    total_pages: int
    has_next_page: bool


class PagedSandboxInfos(LazyModel):
    """One page of sandboxes."""

    sandbox_infos: List[SandboxInfo]
    pagination: PaginationInfo


class PagedSnapshotInfos(LazyModel):
    """One page of snapshots."""

    snapshot_infos: List[SnapshotInfo]
    pagination: PaginationInfo


class SandboxFilter(LazyModel):
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


class SnapshotFilter(LazyModel):
    """Filter of ``list_snapshots``."""

    sandbox_id: Optional[str] = None
    name: Optional[str] = None
    states: Optional[List[str]] = None
    page_size: Optional[int] = None
    page: Optional[int] = None


class SandboxMetrics(LazyModel):
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


class SandboxOrigin:
    """Where a sandbox came from (1.1 ``SandboxInfo.origin``)."""

    TEMPLATE = "template"
    UNKNOWN = "unknown"


class CreateSnapshotRequest(LazyModel):
    """The body of a snapshot creation."""

    name: Optional[str] = None


# Credential vault models (1.1): ``sandbox.credential_vault``.


class InlineCredentialSource(LazyModel):
    """A credential value given inline."""

    value: str = Field(repr=False)
    type: str = "inline"


class Credential(LazyModel):
    """A sandbox-local named credential."""

    name: str
    source: Union[InlineCredentialSource, Dict[str, str]]


class CredentialMatch(LazyModel):
    """Which requests a credential binding applies to."""

    schemes: Optional[List[str]] = None
    ports: Optional[List[int]] = None
    hosts: List[str]
    methods: Optional[List[str]] = None
    paths: Optional[List[str]] = None


class CustomHeaderEntry(LazyModel):
    """A header filled from a credential."""

    name: str
    credential: str


class CredentialSubstitution(LazyModel):
    """A placeholder replaced by a credential in part of a request."""

    credential: str
    placeholder: str
    in_: List[str] = Field(alias="in")

    model_config = ConfigDict(populate_by_name=True)


class CredentialAuth(LazyModel):
    """How a bound credential authenticates a request."""

    type: str
    credential: Optional[str] = None
    name: Optional[str] = None
    headers: Optional[List[CustomHeaderEntry]] = None
    substitutions: Optional[List[CredentialSubstitution]] = None


class CredentialBinding(LazyModel):
    """A credential bound to matching requests."""

    name: str
    match: Union[CredentialMatch, Dict[str, object]]
    auth: Union[CredentialAuth, Dict[str, object]]


class CredentialMetadata(LazyModel):
    """A stored credential, without its value."""

    name: str
    source_type: str = Field(alias="sourceType")
    revision: int

    model_config = ConfigDict(populate_by_name=True)


class CredentialAuthMetadata(LazyModel):
    """A binding's auth, without secrets."""

    type: str
    name: Optional[str] = None


class CredentialBindingMetadata(LazyModel):
    """A stored binding."""

    name: str
    revision: int
    match: Optional[CredentialMatch] = None
    auth: Optional[CredentialAuthMetadata] = None


class CredentialVaultState(LazyModel):
    """The vault of a sandbox: its revision, credentials and bindings."""

    revision: int
    credentials: List[CredentialMetadata]
    bindings: List[CredentialBindingMetadata]


class CredentialListResponse(LazyModel):
    """The credentials of a vault."""

    revision: int
    credentials: List[CredentialMetadata]


class CredentialBindingListResponse(LazyModel):
    """The bindings of a vault."""

    revision: int
    bindings: List[CredentialBindingMetadata]


class CredentialMutationSet(LazyModel):
    """Credentials to add, replace and delete in one patch."""

    add: Optional[List[Union[Credential, Dict[str, object]]]] = None
    replace: Optional[List[Union[Credential, Dict[str, object]]]] = None
    delete: Optional[List[str]] = None


class CredentialBindingMutationSet(LazyModel):
    """Bindings to add, replace and delete in one patch."""

    add: Optional[List[Union[CredentialBinding, Dict[str, object]]]] = None
    replace: Optional[List[Union[CredentialBinding, Dict[str, object]]]] = None
    delete: Optional[List[str]] = None


class CredentialVaultPatchRequest(LazyModel):
    """A vault patch, optionally guarded by the revision it was computed from."""

    expected_revision: Optional[int] = Field(default=None, alias="expectedRevision")
    credentials: Optional[Union[CredentialMutationSet, Dict[str, object]]] = None
    bindings: Optional[Union[CredentialBindingMutationSet, Dict[str, object]]] = None

    model_config = ConfigDict(populate_by_name=True)


__all__ = [
    "SandboxOrigin",
    "SandboxAllocation",
    "CreateSnapshotRequest",
    "InlineCredentialSource",
    "Credential",
    "CredentialMatch",
    "CustomHeaderEntry",
    "CredentialSubstitution",
    "CredentialAuth",
    "CredentialBinding",
    "CredentialMetadata",
    "CredentialAuthMetadata",
    "CredentialBindingMetadata",
    "CredentialVaultState",
    "CredentialListResponse",
    "CredentialBindingListResponse",
    "CredentialMutationSet",
    "CredentialBindingMutationSet",
    "CredentialVaultPatchRequest",
    "SandboxImageAuth",
    "SandboxImageSpec",
    "PlatformSpec",
    "CredentialProxyConfig",
    "LifecycleHook",
    "PeriodicLifecycleHook",
    "SandboxLifecycle",
    "Host",
    "PVC",
    "OSSFS",
    "Volume",
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
