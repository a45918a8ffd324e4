"""Op-layer arguments shared by the async and the sync API: create / connect, templates,
filters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, List, Optional, Union

from opensandbox.exceptions import InvalidArgumentException
from opensandbox.models.sandboxes import (
    CredentialProxyConfig,
    NetworkPolicy,
    PlatformSpec,
    SandboxFilter,
    SandboxImageSpec,
    SandboxLifecycle,
    SnapshotFilter,
    Volume,
)


def _model(cls: Any, value: Any) -> Any:
    """``value`` as model ``cls`` (a dict is validated into one)."""
    if value is None or isinstance(value, cls):
        return value
    try:
        return cls.model_validate(value)
    except Exception as e:  # pydantic's ValidationError, or a wrong type
        raise InvalidArgumentException(f"invalid {cls.__name__}: {e}") from e


def _volume(v: Any) -> Dict[str, Any]:
    v = _model(Volume, v)
    out: Dict[str, Any] = {"name": v.name, "mount_path": v.mount_path, "read_only": v.read_only}
    if v.sub_path is not None:
        out["sub_path"] = v.sub_path
    if v.host is not None:
        out["host"] = {"path": v.host.path}
    if v.pvc is not None:
        out["pvc"] = {
            "claim_name": v.pvc.claim_name,
            "create_if_not_exists": v.pvc.create_if_not_exists,
            "delete_on_sandbox_termination": v.pvc.delete_on_sandbox_termination,
            "storage_class": v.pvc.storage_class,
            "storage": v.pvc.storage,
            "access_modes": v.pvc.access_modes,
        }
    if v.ossfs is not None:
        out["ossfs"] = {
            "bucket": v.ossfs.bucket,
            "endpoint": v.ossfs.endpoint,
            "access_key_id": v.ossfs.access_key_id,
            "access_key_secret": v.ossfs.access_key_secret,
            "version": v.ossfs.version,
            "options": v.ossfs.options,
        }
    return out


def _hook(h: Any) -> Dict[str, Any]:
    return {"command": list(h.command), "timeout_seconds": h.timeout_seconds}


def lifecycle_args(lifecycle: Any) -> Optional[Dict[str, Any]]:
    """``SandboxLifecycle`` (or its dict) as the op layer's ``lifecycle``."""
    lc = _model(SandboxLifecycle, lifecycle)
    if lc is None:
        return None
    out: Dict[str, Any] = {}
    if lc.pre_start is not None:
        out["pre_start"] = _hook(lc.pre_start)
    if lc.periodic:
        out["periodic"] = [dict(_hook(p), name=p.name, schedule=p.schedule) for p in lc.periodic]
    return out


def policy_args(network_policy: Any) -> Dict[str, Any]:
    p = _model(NetworkPolicy, network_policy)
    return {
        "default_action": p.default_action,
        "egress": [{"action": r.action, "target": r.target} for r in (p.egress or [])],
    }


def create_args(
    image: Union[SandboxImageSpec, str, None],
    snapshot_id: Optional[str],
    timeout: Optional[timedelta],
    ready_timeout: timedelta,
    env: Optional[Dict[str, str]],
    metadata: Optional[Dict[str, str]],
    resource: Optional[Dict[str, str]],
    network_policy: Optional[NetworkPolicy],
    extensions: Optional[Dict[str, str]],
    entrypoint: Optional[List[str]],
    health_check_polling_interval: timedelta,
    skip_health_check: bool,
    more: Dict[str, Any],
) -> Dict[str, Any]:
    """``sandbox.create`` arguments; ``more`` holds the 1.1 options (``resource_requests``,
    ``platform``, ``credential_proxy``, ``secure_access``, ``volumes``, ``lifecycle``)."""
    if image is None and snapshot_id is None:
        raise InvalidArgumentException("either image or snapshot_id is required")
    if image is not None and snapshot_id is not None:
        raise InvalidArgumentException("image and snapshot_id are mutually exclusive")
    args: Dict[str, Any] = {
        "snapshot_id": snapshot_id,
        "timeout_s": None if timeout is None else timeout.total_seconds(),
        "ready_timeout_s": ready_timeout.total_seconds(),
        "health_check_polling_interval_s": health_check_polling_interval.total_seconds(),
        "env": dict(env or {}),
        "metadata": dict(metadata or {}),
        "extensions": dict(extensions or {}),
        "skip_health_check": skip_health_check,
        "secure_access": bool(more.get("secure_access")),
    }
    if isinstance(image, SandboxImageSpec):
        if image.auth is not None:
            args["image_auth"] = {"username": image.auth.username, "password": image.auth.password}
        image = image.image
    args["image"] = image
    if resource is not None:
        args["resource"] = dict(resource)
    if more.get("resource_requests"):
        args["resource_requests"] = dict(more["resource_requests"])
    if entrypoint is not None:
        args["entrypoint"] = list(entrypoint)
    if network_policy is not None:
        args["network_policy"] = policy_args(network_policy)
    platform = _model(PlatformSpec, more.get("platform"))
    if platform is not None:
        args["platform"] = {"os": platform.os, "arch": platform.arch}
    proxy = _model(CredentialProxyConfig, more.get("credential_proxy"))
    if proxy is not None:
        args["credential_proxy"] = {"enabled": proxy.enabled}
    if more.get("volumes"):
        args["volumes"] = [_volume(v) for v in more["volumes"]]
    lifecycle = lifecycle_args(more.get("lifecycle"))
    if lifecycle is not None:
        args["lifecycle"] = lifecycle
    return args


def template_create_args(
    template_id: str,
    timeout: timedelta,
    ready_timeout: timedelta,
    metadata: Optional[Dict[str, str]],
    network_policy: Optional[NetworkPolicy],
    extensions: Optional[Dict[str, str]],
    health_check_polling_interval: timedelta,
    skip_health_check: bool,
) -> Dict[str, Any]:
    """``sandbox.create`` arguments of ``create_from_template``: the template fixes the
    image, entrypoint, env and limits; the timeout is required."""
    if not template_id or not template_id.strip():
        raise InvalidArgumentException("template_id cannot be blank")
    if timeout is None:
        raise InvalidArgumentException("timeout is required when creating from a template")
    args: Dict[str, Any] = {
        "template_id": template_id,
        "timeout_s": timeout.total_seconds(),
        "ready_timeout_s": ready_timeout.total_seconds(),
        "health_check_polling_interval_s": health_check_polling_interval.total_seconds(),
        "metadata": dict(metadata or {}),
        "extensions": dict(extensions or {}),
        "skip_health_check": skip_health_check,
    }
    if network_policy is not None:
        args["network_policy"] = policy_args(network_policy)
    return args


def template_request_args(request: Any) -> Dict[str, Any]:
    """``manager.create_template`` arguments of a ``CreateTemplateRequest``."""
    from opensandbox.models.templates import CreateTemplateRequest

    r = _model(CreateTemplateRequest, request)
    args: Dict[str, Any] = {"image": r.image, "publish": r.publish}
    for key in ("resource_limits", "env", "metadata"):
        value = getattr(r, key)
        if value:
            args[key] = dict(value)
    if r.entrypoint:
        args["entrypoint"] = list(r.entrypoint)
    if r.readiness is not None:
        args["readiness"] = {"probe": r.readiness.probe, "warmup_seconds": r.readiness.warmup_seconds}
    if r.format is not None:
        args["format"] = r.format
    return args


def template_filter(f: Any) -> Dict[str, Any]:
    from opensandbox.models.templates import TemplateFilter

    f = _model(TemplateFilter, f) or TemplateFilter()
    return {"metadata": f.metadata or {}, "page": f.page, "page_size": f.page_size}


def connect_args(
    sandbox_id: str, timeout_key: str, timeout: timedelta, polling: timedelta, skip: bool
) -> Dict[str, Any]:
    return {
        "sandbox_id": sandbox_id,
        timeout_key: timeout.total_seconds(),
        "health_check_polling_interval_s": polling.total_seconds(),
        "skip_health_check": skip,
    }


def sandbox_filter(f: SandboxFilter) -> Dict[str, Any]:
    return {"states": f.states or [], "metadata": f.metadata or {}, "page": f.page, "page_size": f.page_size}


def snapshot_filter(f: SnapshotFilter) -> Dict[str, Any]:
    return {"sandbox_id": f.sandbox_id, "states": f.states or [], "page": f.page, "page_size": f.page_size}
