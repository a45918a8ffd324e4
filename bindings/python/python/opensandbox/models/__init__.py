"""Models of the OpenSandbox SDK (pydantic, as in the official SDK).

Every name of the model modules is importable from here, as before; each module loads
when one of its names is first taken (PEP 562), so importing one model module (what the
SDK itself does) does not define the hundred-odd classes of the others.
``tests/test_models.py`` checks that this table lists exactly the modules' ``__all__``.
"""

from typing import Any, Dict, List

# module (under opensandbox.models) -> the names it exports
_EXPORTS = {
    "diagnostics": ("DiagnosticContent",),
    "execd": (
        "AsyncOutputHandler",
        "CommandLogs",
        "CommandStatus",
        "Execution",
        "ExecutionComplete",
        "ExecutionError",
        "ExecutionHandlers",
        "ExecutionInit",
        "ExecutionLogs",
        "ExecutionResult",
        "OutputMessage",
        "RunCommandOpts",
    ),
    "execd_sync": ("ExecutionHandlersSync",),
    "filesystem": (
        "ContentReplaceEntry",
        "ContentReplaceResult",
        "DirectoryListEntry",
        "EntryInfo",
        "IOBase",
        "MoveEntry",
        "SearchEntry",
        "SetPermissionEntry",
        "WriteEntry",
    ),
    "isolated": (
        "BindMount",
        "CreateIsolatedSessionRequest",
        "EnvPassthroughSpec",
        "HardeningLayerState",
        "HardeningStatus",
        "IsolatedBackgroundRun",
        "IsolatedCapabilities",
        "IsolatedOverlaySpec",
        "IsolatedRunLogs",
        "IsolatedRunOpts",
        "IsolatedRunStatus",
        "IsolatedSessionInfo",
        "IsolatedSessionState",
        "IsolatedSessionSummary",
        "IsolatedWorkspaceSpec",
    ),
    "sandboxes": (
        "CreateSnapshotRequest",
        "Credential",
        "CredentialAuth",
        "CredentialAuthMetadata",
        "CredentialBinding",
        "CredentialBindingListResponse",
        "CredentialBindingMetadata",
        "CredentialBindingMutationSet",
        "CredentialListResponse",
        "CredentialMatch",
        "CredentialMetadata",
        "CredentialMutationSet",
        "CredentialProxyConfig",
        "CredentialSubstitution",
        "CredentialVaultPatchRequest",
        "CredentialVaultState",
        "CustomHeaderEntry",
        "Host",
        "InlineCredentialSource",
        "LifecycleHook",
        "NetworkPolicy",
        "NetworkRule",
        "OSSFS",
        "PVC",
        "PagedSandboxInfos",
        "PagedSnapshotInfos",
        "PaginationInfo",
        "PeriodicLifecycleHook",
        "PlatformSpec",
        "SandboxAllocation",
        "SandboxCreateResponse",
        "SandboxEndpoint",
        "SandboxFilter",
        "SandboxImageAuth",
        "SandboxImageSpec",
        "SandboxInfo",
        "SandboxLifecycle",
        "SandboxMetrics",
        "SandboxOrigin",
        "SandboxRenewResponse",
        "SandboxState",
        "SandboxStatus",
        "SnapshotFilter",
        "SnapshotInfo",
        "SnapshotStatus",
        "Volume",
    ),
}
_MODULE_OF: Dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'opensandbox.models' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"opensandbox.models.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = sorted(_MODULE_OF)
