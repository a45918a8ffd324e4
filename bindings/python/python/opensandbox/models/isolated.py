"""Isolated-session models (``opensandbox.models.isolated``, 1.1.1): nested sandboxes
inside a sandbox (upstream OSEP-0013). Field names are snake_case, as on the wire."""

from datetime import datetime
from typing import Dict, List, Optional

from pydantic import ConfigDict, Field

from opensandbox.models._base import LazyModel

_CONFIG = ConfigDict(populate_by_name=True)


class IsolatedWorkspaceSpec(LazyModel):
    """The legacy single workspace: a sandbox directory and how the session sees it."""

    model_config = _CONFIG

    path: str = Field(description="Directory of the sandbox")
    mode: Optional[str] = Field(default=None, description="'rw', 'overlay' or 'ro'; None = server default (overlay)")


class IsolatedOverlaySpec(LazyModel):
    """One mount of the session: ``overlay`` (copy-on-write; ``persist`` picks a disk
    or a tmpfs upper layer), ``rw`` or ``ro`` (a direct bind; leave ``persist`` unset)."""

    model_config = _CONFIG

    path: str = Field(description="Absolute path inside the session")
    mode: Optional[str] = Field(default=None, description="'overlay' (default), 'rw' or 'ro'")
    persist: Optional[bool] = Field(default=None, description="Overlay mode only; None = server default (True)")


class EnvPassthroughSpec(LazyModel):
    """Which of the sandbox's environment variables reach the session."""

    model_config = _CONFIG

    mode: str = Field(default="deny", description="'deny' (denylist) or 'allow' (allowlist)")
    keys: List[str] = Field(default_factory=list, description="The keys to deny or allow")


class BindMount(LazyModel):
    """A sandbox path bound into the session (source inside the server's allowlist)."""

    model_config = _CONFIG

    source: str = Field(description="Sandbox path")
    dest: Optional[str] = Field(default=None, description="Path in the session; None = source")
    readonly: Optional[bool] = Field(default=None, description="Bind read-only")


class CreateIsolatedSessionRequest(LazyModel):
    """A session to create: at least one of ``workspace`` and ``overlays`` (``workspace``
    is prepended to ``overlays`` when both are given)."""

    model_config = _CONFIG

    workspace: Optional[IsolatedWorkspaceSpec] = None
    overlays: Optional[List[IsolatedOverlaySpec]] = None
    profile: Optional[str] = Field(default=None, description="'strict' or 'balanced'")
    extra_writable: Optional[List[str]] = None
    binds: Optional[List[BindMount]] = None
    share_net: Optional[bool] = None
    env_passthrough: Optional[EnvPassthroughSpec] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    uid_mode: Optional[str] = Field(default=None, description="'setpriv' (default) or 'userns'")
    idle_timeout_seconds: Optional[int] = Field(default=None, description="0 = no idle timeout")


class IsolatedSessionInfo(LazyModel):
    """A session handle's description: the create answer, or the echo ``attach`` reads
    back from the session's state (older servers omit the echo: fields stay None)."""

    model_config = _CONFIG

    session_id: str
    created_at: Optional[datetime] = None
    profile: Optional[str] = None
    workspace: Optional[IsolatedWorkspaceSpec] = None
    overlays: Optional[List[IsolatedOverlaySpec]] = None
    extra_writable: Optional[List[str]] = None
    binds: Optional[List[BindMount]] = None
    share_net: Optional[bool] = None
    env_passthrough: Optional[EnvPassthroughSpec] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    uid_mode: Optional[str] = None
    idle_timeout_seconds: Optional[int] = None


class IsolatedSessionState(LazyModel):
    """A session's state (``active``, ``dead`` or ``destroyed``) and its parameters."""

    model_config = _CONFIG

    status: str
    created_at: Optional[datetime] = None
    last_run_at: Optional[datetime] = None
    idle_remaining_seconds: Optional[int] = None
    profile: Optional[str] = None
    workspace: Optional[IsolatedWorkspaceSpec] = None
    overlays: Optional[List[IsolatedOverlaySpec]] = None
    extra_writable: Optional[List[str]] = None
    binds: Optional[List[BindMount]] = None
    share_net: Optional[bool] = None
    env_passthrough: Optional[EnvPassthroughSpec] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    uid_mode: Optional[str] = None
    idle_timeout_seconds: Optional[int] = None


class IsolatedSessionSummary(LazyModel):
    """One session of ``list()``."""

    model_config = _CONFIG

    session_id: str
    status: str
    created_at: datetime
    last_run_at: datetime
    idle_remaining_seconds: Optional[int] = None


class IsolatedRunOpts(LazyModel):
    """Options of a run: variables for this run only, and a foreground time limit."""

    model_config = _CONFIG

    envs: Optional[Dict[str, str]] = None
    timeout_seconds: Optional[int] = None


class IsolatedBackgroundRun(LazyModel):
    """The handle of a background run."""

    model_config = _CONFIG

    session_id: str
    run_id: str
    started_at: Optional[datetime] = None


class IsolatedRunStatus(LazyModel):
    """A background run's state."""

    model_config = _CONFIG

    session_id: str
    run_id: str
    running: bool
    exit_code: Optional[int] = None
    error: Optional[str] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None


class IsolatedRunLogs(LazyModel):
    """Output of a background run from a cursor, and the cursor of the next read."""

    model_config = _CONFIG

    text: str
    cursor: int


class HardeningLayerState(LazyModel):
    """Whether one hardening layer is enforced."""

    state: Optional[str] = None
    message: Optional[str] = None


class HardeningStatus(LazyModel):
    """The server's init mode and workload hardening."""

    model_config = _CONFIG

    init_mode: Optional[str] = None
    signal_shield: bool = False
    cap_drop: Optional[HardeningLayerState] = None
    seccomp: Optional[HardeningLayerState] = None
    landlock: Optional[HardeningLayerState] = None
    ebpf: Optional[HardeningLayerState] = None


class IsolatedCapabilities(LazyModel):
    """What isolation the sandbox offers (``available`` false with a ``message`` when none)."""

    model_config = _CONFIG

    available: bool = False
    isolator: Optional[str] = None
    version: Optional[str] = None
    message: Optional[str] = None
    setpriv_available: bool = False
    userns_available: bool = False
    commit_supported: bool = False
    diff_supported: bool = False
    hardening: Optional[HardeningStatus] = None


__all__ = [
    "IsolatedWorkspaceSpec",
    "IsolatedOverlaySpec",
    "EnvPassthroughSpec",
    "BindMount",
    "CreateIsolatedSessionRequest",
    "IsolatedSessionInfo",
    "IsolatedSessionState",
    "IsolatedSessionSummary",
    "IsolatedRunOpts",
    "IsolatedBackgroundRun",
    "IsolatedRunStatus",
    "IsolatedRunLogs",
    "HardeningLayerState",
    "HardeningStatus",
    "IsolatedCapabilities",
]
