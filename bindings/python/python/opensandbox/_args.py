"""Op-layer arguments shared by the async and the sync API: create / connect, filters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, List, Optional, Union

from opensandbox.exceptions import InvalidArgumentException
from opensandbox.models.sandboxes import NetworkPolicy, SandboxFilter, SandboxImageSpec, SnapshotFilter


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
    unsupported: Dict[str, Any],
) -> Dict[str, Any]:
    for name, value in unsupported.items():
        if value not in (None, False, [], {}):
            raise InvalidArgumentException(f"{name} is not supported by this SDK yet")
    if image is None and snapshot_id is None:
        raise InvalidArgumentException("either image or snapshot_id is required")
    if image is not None and snapshot_id is not None:
        raise InvalidArgumentException("image and snapshot_id are mutually exclusive")
    if isinstance(image, SandboxImageSpec):
        if image.auth is not None:
            raise InvalidArgumentException("image registry auth is not supported by this SDK yet")
        image = image.image
    args: Dict[str, Any] = {
        "image": image,
        "snapshot_id": snapshot_id,
        "timeout_s": None if timeout is None else timeout.total_seconds(),
        "ready_timeout_s": ready_timeout.total_seconds(),
        "health_check_polling_interval_s": health_check_polling_interval.total_seconds(),
        "env": dict(env or {}),
        "metadata": dict(metadata or {}),
        "extensions": dict(extensions or {}),
        "skip_health_check": skip_health_check,
    }
    if resource is not None:
        args["resource"] = dict(resource)
    if entrypoint is not None:
        args["entrypoint"] = list(entrypoint)
    if network_policy is not None:
        args["network_policy"] = {
            "default_action": network_policy.default_action,
            "egress": [{"action": r.action, "target": r.target} for r in (network_policy.egress or [])],
        }
    return args


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
