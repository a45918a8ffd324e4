# Generated from opensandbox/sandbox.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""``Sandbox``: the blocking handle of one sandbox."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

from opensandbox import _bridge
from opensandbox._args import connect_args, create_args, template_create_args
from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.exceptions import SandboxException, SandboxReadyTimeoutException
from opensandbox.models.diagnostics import DiagnosticContent
from opensandbox.models.sandboxes import (
    NetworkPolicy,
    NetworkRule,
    SandboxEndpoint,
    SandboxImageSpec,
    SandboxInfo,
    SandboxMetrics,
    SandboxOrigin,
    SandboxRenewResponse,
    SnapshotInfo,
)

if TYPE_CHECKING:
    from opensandbox.sync.services.command import CommandsSync
    from opensandbox.sync.services.egress import CredentialVaultSync, EgressSync
    from opensandbox.sync.services.filesystem import FilesystemSync
    from opensandbox.sync.services.isolated import IsolationServiceSync
    from opensandbox.sync.services.metrics import MetricsSync
    from opensandbox.sync.services.pty import PtySync

# Largest uid/gid of the identity file routes ((uid_t)-1 means "unchanged").
_MAX_IDENTITY = 4294967294


def _origin(opened: Dict[str, Any]) -> str:
    """The origin the server reported for an opened sandbox (``OPEN-SANDBOX-ORIGIN``)."""
    return SandboxOrigin.TEMPLATE if opened.get("origin") == SandboxOrigin.TEMPLATE else SandboxOrigin.UNKNOWN


class SandboxSync:
    """An isolated sandbox: commands, files, metrics and its lifecycle.

    Create one with :meth:`create`, attach to an existing one with :meth:`connect`.
    ``with`` closes local resources on exit (it does not kill the sandbox).
    """

    def __init__(
        self, sandbox_id: str, connection_config: ConnectionConfigSync, origin: str = SandboxOrigin.UNKNOWN
    ) -> None:
        self._id = sandbox_id
        self._origin = origin
        self._config = connection_config
        client = connection_config._client()
        self._client = client
        # Each service (and the models only it uses) is imported and made on first use:
        # `from opensandbox import Sandbox` then costs a tenth less, and a program that
        # never opens a PTY or an isolated session never loads them.
        self._files: Optional[FilesystemSync] = None
        self._commands: Optional[CommandsSync] = None
        self._metrics: Optional[MetricsSync] = None
        self._egress: Optional[EgressSync] = None
        self._pty: Optional[PtySync] = None
        self._isolation: Optional[IsolationServiceSync] = None

    @property
    def id(self) -> str:
        """The sandbox id."""
        return self._id

    @property
    def files(self) -> FilesystemSync:
        """File operations."""
        if self._files is None:
            from opensandbox.sync.services.filesystem import FilesystemSync

            self._files = FilesystemSync(self._client, self._id)
        return self._files

    def files_with_identity(self, uid: int, gid: int) -> FilesystemSync:
        """A separate file client whose operations run as Linux ``uid``:``gid`` on the
        server (``/v1/filesystem/{uid}/{gid}``); it never falls back to the default
        identity. ``sandbox.files`` is unchanged."""
        from opensandbox.exceptions import InvalidArgumentException

        for name, value in (("uid", uid), ("gid", gid)):
            if type(value) is not int or not 0 <= value <= _MAX_IDENTITY:
                raise InvalidArgumentException(f"{name} must be an integer between 0 and {_MAX_IDENTITY}")
        from opensandbox.sync.services.filesystem import FilesystemSync

        return FilesystemSync(self._client, self._id, {"identity": {"uid": uid, "gid": gid}})

    @property
    def isolation(self) -> IsolationServiceSync:
        """Isolated sessions: nested sandboxes with their own namespaces and overlays."""
        if self._isolation is None:
            from opensandbox.sync.services.isolated import IsolationServiceSync

            self._isolation = IsolationServiceSync(self._client, self._id)
        return self._isolation

    @property
    def commands(self) -> CommandsSync:
        """Commands and sessions."""
        if self._commands is None:
            from opensandbox.sync.services.command import CommandsSync

            self._commands = CommandsSync(self._client, self._id)
        return self._commands

    @property
    def metrics(self) -> MetricsSync:
        """Metrics."""
        if self._metrics is None:
            from opensandbox.sync.services.metrics import MetricsSync

            self._metrics = MetricsSync(self._client, self._id)
        return self._metrics

    @property
    def pty(self) -> PtySync:
        """Interactive PTY sessions and live background logs (extension of this SDK)."""
        if self._pty is None:
            from opensandbox.sync.services.pty import PtySync

            self._pty = PtySync(self._client, self._id)
        return self._pty

    @property
    def egress(self) -> EgressSync:
        """Egress policy."""
        if self._egress is None:
            from opensandbox.sync.services.egress import EgressSync

            self._egress = EgressSync(self._client, self._id)
        return self._egress

    @property
    def origin(self) -> str:
        """``SandboxOrigin.TEMPLATE`` for a sandbox made by :meth:`create_from_template`."""
        return self._origin

    @property
    def credential_vault(self) -> CredentialVaultSync:
        """The sandbox's credential vault (needs ``credential_proxy`` at create). Like the
        official SDK, refused for template-backed sandboxes."""
        if self._origin == SandboxOrigin.TEMPLATE:
            raise SandboxException("credential_vault is not available for template-backed sandboxes")
        return self.egress

    @property
    def connection_config(self) -> ConnectionConfigSync:
        """The configuration this handle uses."""
        return self._config

    def _call(self, op: str, **args: Any) -> Any:
        args["sandbox"] = self._id
        return _bridge.call(self._client, op, args)

    def get_info(self) -> SandboxInfo:
        """Current status, image, expiry and metadata."""
        return SandboxInfo.model_validate(self._call("sandbox.get_info"))

    def get_endpoint(self, port: int) -> SandboxEndpoint:
        """Address (and headers) to reach ``port`` of the sandbox."""
        return SandboxEndpoint.model_validate(self._call("sandbox.get_endpoint", port=port))

    def get_signed_endpoint(self, port: int, expires: int) -> SandboxEndpoint:
        """A signed address valid until ``expires`` (Unix seconds)."""
        r = self._call("sandbox.get_signed_endpoint", port=port, expires=expires)
        return SandboxEndpoint.model_validate(r)

    def get_metrics(self) -> SandboxMetrics:
        """CPU and memory."""
        return self.metrics.get_metrics(self._id)

    def get_diagnostic_logs(self, scope: str) -> DiagnosticContent:
        """Diagnostic logs of ``scope``."""
        return DiagnosticContent.model_validate(self._call("sandbox.get_diagnostic_logs", scope=scope))

    def get_diagnostic_events(self, scope: str) -> DiagnosticContent:
        """Diagnostic events of ``scope``."""
        return DiagnosticContent.model_validate(self._call("sandbox.get_diagnostic_events", scope=scope))

    def renew(self, timeout: timedelta) -> SandboxRenewResponse:
        """Extends the expiry to now + ``timeout``."""
        r = self._call("sandbox.renew", seconds=timeout.total_seconds())
        return SandboxRenewResponse.model_validate(r)

    def patch_metadata(self, patch: Dict[str, Optional[str]]) -> SandboxInfo:
        """Sets (or, with None, removes) metadata keys."""
        return SandboxInfo.model_validate(self._call("sandbox.patch_metadata", patch=patch))

    def create_snapshot(self, name: Optional[str] = None) -> SnapshotInfo:
        """Snapshots the sandbox."""
        return SnapshotInfo.model_validate(self._call("sandbox.create_snapshot", name=name))

    def get_egress_policy(self) -> NetworkPolicy:
        """The egress policy."""
        return self.egress.get_policy()

    def patch_egress_rules(self, rules: List[NetworkRule]) -> None:
        """Adds or replaces egress rules."""
        self.egress.patch_rules(rules)

    def delete_egress_rules(self, targets: List[str]) -> None:
        """Removes egress rules by target."""
        self.egress.delete_rules(targets)

    def pause(self) -> None:
        """Pauses the sandbox."""
        self._call("sandbox.pause")

    def kill(self) -> None:
        """Terminates the sandbox."""
        self._call("sandbox.kill")

    def close(self) -> None:
        """Releases local resources (the sandbox keeps running)."""
        self._client.forget(self._id)

    def destroy(self) -> None:
        """Kills the sandbox, then closes local resources."""
        try:
            self.kill()
        finally:
            self.close()

    def is_healthy(self) -> bool:
        """Whether execd answers its ping."""
        return bool((self._call("sandbox.is_healthy"))["healthy"])

    def check_ready(self, timeout: timedelta, polling_interval: timedelta) -> None:
        """Polls :meth:`is_healthy` until it holds or ``timeout`` passes."""
        deadline = time.monotonic() + timeout.total_seconds()
        while True:
            if self.is_healthy():
                return
            if time.monotonic() >= deadline:
                raise SandboxReadyTimeoutException(f"sandbox {self._id} not ready within {timeout}")
            _bridge.sleep(polling_interval.total_seconds())

    def __enter__(self) -> "SandboxSync":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @classmethod
    def _finish(
        cls,
        sandbox_id: str,
        config: ConnectionConfigSync,
        health_check: Optional[Callable[["SandboxSync"], bool]],
        ready_timeout: timedelta,
        polling: timedelta,
        origin: str = SandboxOrigin.UNKNOWN,
    ) -> "SandboxSync":
        sb = cls(sandbox_id, config, origin)
        if health_check is not None:
            deadline = time.monotonic() + ready_timeout.total_seconds()
            while not health_check(sb):
                if time.monotonic() >= deadline:
                    raise SandboxReadyTimeoutException(f"sandbox {sandbox_id} not ready within {ready_timeout}")
                _bridge.sleep(polling.total_seconds())
        return sb

    @classmethod
    def create(
        cls,
        image: Union[SandboxImageSpec, str, None] = None,
        *,
        snapshot_id: Optional[str] = None,
        timeout: Optional[timedelta] = timedelta(minutes=10),
        ready_timeout: timedelta = timedelta(seconds=30),
        env: Optional[Dict[str, str]] = None,
        metadata: Optional[Dict[str, str]] = None,
        resource: Optional[Dict[str, str]] = None,
        resource_requests: Optional[Dict[str, str]] = None,
        platform: Any = None,
        network_policy: Optional[NetworkPolicy] = None,
        credential_proxy: Any = None,
        extensions: Optional[Dict[str, str]] = None,
        secure_access: bool = False,
        entrypoint: Optional[List[str]] = None,
        volumes: Any = None,
        connection_config: Optional[ConnectionConfigSync] = None,
        health_check: Optional[Callable[["SandboxSync"], bool]] = None,
        health_check_polling_interval: timedelta = timedelta(milliseconds=200),
        skip_health_check: bool = False,
        lifecycle: Any = None,
    ) -> "SandboxSync":
        """Creates a sandbox and waits until it is ready (``timeout=None``: no expiry)."""
        config = connection_config or ConnectionConfigSync()
        args = create_args(
            image,
            snapshot_id,
            timeout,
            ready_timeout,
            env,
            metadata,
            resource,
            network_policy,
            extensions,
            entrypoint,
            health_check_polling_interval,
            skip_health_check or health_check is not None,
            {
                "resource_requests": resource_requests,
                "platform": platform,
                "credential_proxy": credential_proxy,
                "secure_access": secure_access,
                "volumes": volumes,
                "lifecycle": lifecycle,
            },
        )
        return cls._create(config, args, health_check, ready_timeout, health_check_polling_interval)

    @classmethod
    def _create(
        cls,
        config: ConnectionConfigSync,
        args: Dict[str, Any],
        health_check: Optional[Callable[["SandboxSync"], bool]],
        ready_timeout: timedelta,
        polling: timedelta,
        origin: str = SandboxOrigin.UNKNOWN,
    ) -> "SandboxSync":
        r = _bridge.call(config._client(), "sandbox.create", args)
        try:
            return cls._finish(
                r["id"], config, health_check, ready_timeout, polling, _origin(r) if r.get("origin") else origin
            )
        except BaseException:
            _bridge.call(config._client(), "manager.kill_sandbox", {"sandbox_id": r["id"]})
            raise

    @classmethod
    def create_from_template(
        cls,
        template_id: str,
        *,
        timeout: timedelta,
        ready_timeout: timedelta = timedelta(seconds=30),
        metadata: Optional[Dict[str, str]] = None,
        network_policy: Optional[NetworkPolicy] = None,
        extensions: Optional[Dict[str, str]] = None,
        connection_config: Optional[ConnectionConfigSync] = None,
        health_check: Optional[Callable[["SandboxSync"], bool]] = None,
        health_check_polling_interval: timedelta = timedelta(milliseconds=200),
        skip_health_check: bool = False,
    ) -> "SandboxSync":
        """Creates a sandbox from a ``Succeeded`` template (its image, entrypoint, env and
        limits); only metadata, network policy and extensions go with it, and the timeout
        is required."""
        config = connection_config or ConnectionConfigSync()
        args = template_create_args(
            template_id,
            timeout,
            ready_timeout,
            metadata,
            network_policy,
            extensions,
            health_check_polling_interval,
            skip_health_check or health_check is not None,
        )
        return cls._create(
            config, args, health_check, ready_timeout, health_check_polling_interval, SandboxOrigin.TEMPLATE
        )

    @classmethod
    def connect(
        cls,
        sandbox_id: str,
        connection_config: Optional[ConnectionConfigSync] = None,
        health_check: Optional[Callable[["SandboxSync"], bool]] = None,
        connect_timeout: timedelta = timedelta(seconds=30),
        health_check_polling_interval: timedelta = timedelta(milliseconds=200),
        skip_health_check: bool = False,
    ) -> "SandboxSync":
        """Attaches to an existing sandbox and waits until it is ready."""
        config = connection_config or ConnectionConfigSync()
        args = connect_args(
            sandbox_id,
            "connect_timeout_s",
            connect_timeout,
            health_check_polling_interval,
            skip_health_check or health_check is not None,
        )
        r = _bridge.call(config._client(), "sandbox.connect", args)
        return cls._finish(r["id"], config, health_check, connect_timeout, health_check_polling_interval, _origin(r))

    @classmethod
    def resume(
        cls,
        sandbox_id: str,
        connection_config: Optional[ConnectionConfigSync] = None,
        health_check: Optional[Callable[["SandboxSync"], bool]] = None,
        resume_timeout: timedelta = timedelta(seconds=30),
        health_check_polling_interval: timedelta = timedelta(milliseconds=200),
        skip_health_check: bool = False,
    ) -> "SandboxSync":
        """Resumes a paused sandbox and waits until it is ready."""
        config = connection_config or ConnectionConfigSync()
        args = connect_args(
            sandbox_id,
            "resume_timeout_s",
            resume_timeout,
            health_check_polling_interval,
            skip_health_check or health_check is not None,
        )
        r = _bridge.call(config._client(), "sandbox.resume", args)
        return cls._finish(r["id"], config, health_check, resume_timeout, health_check_polling_interval, _origin(r))


__all__ = ["SandboxSync"]
