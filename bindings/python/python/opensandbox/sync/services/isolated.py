# Generated from opensandbox/services/isolated.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""Sync ``IsolationService`` (``sandbox.isolation``, 1.1.1): isolated sessions, nested
sandboxes inside a sandbox (their own namespaces, overlays and uid). Every call is one op
of the core's op layer (``isolation.*``); a session's files are the ``files.*`` ops with
``isolated_session``."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Dict, List, Optional

from opensandbox import _bridge
from opensandbox.models.execd import Execution
from opensandbox.models.execd_sync import ExecutionHandlersSync
from opensandbox.models.isolated import (
    BindMount,
    CreateIsolatedSessionRequest,
    IsolatedBackgroundRun,
    IsolatedCapabilities,
    IsolatedRunLogs,
    IsolatedRunOpts,
    IsolatedRunStatus,
    IsolatedSessionInfo,
    IsolatedSessionState,
    IsolatedSessionSummary,
    IsolatedWorkspaceSpec,
)
from opensandbox.sync.services.filesystem import FilesystemSync


def _warn(message: str, *args: Any) -> None:
    # logging is imported when there is something to log, not by `import opensandbox`.
    import logging

    logging.getLogger(__name__).warning(message, *args)


def _run_args(sandbox_id: str, session_id: str, code: str, opts: Optional[IsolatedRunOpts]) -> Dict[str, Any]:
    args: Dict[str, Any] = {"sandbox": sandbox_id, "session_id": session_id, "code": code}
    if opts is not None:
        if opts.envs:
            args["envs"] = dict(opts.envs)
        if opts.timeout_seconds is not None:
            args["timeout_s"] = opts.timeout_seconds
    return args


class IsolationSessionSync:
    """One isolated session: its runs, its files, its state."""

    def __init__(self, client: Any, sandbox_id: str, info: IsolatedSessionInfo) -> None:
        self._client = client
        self._id = sandbox_id
        self._info = info
        self._files: Optional[FilesystemSync] = None

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._info.session_id

    @property
    def info(self) -> IsolatedSessionInfo:
        """How the session was created (as far as known)."""
        return self._info

    @property
    def files(self) -> FilesystemSync:
        """The session's files, resolved inside its mounts."""
        if self._files is None:
            self._files = FilesystemSync(self._client, self._id, {"isolated_session": self.session_id})
        return self._files

    def run(
        self,
        code: str,
        *,
        opts: Optional[IsolatedRunOpts] = None,
        handlers: Optional[ExecutionHandlersSync] = None,
    ) -> Execution:
        """Runs shell code in the session's shell (state persists between runs unless
        ``opts.envs`` is given); handlers are awaited in event order."""
        args = _run_args(self._id, self.session_id, code, opts)
        return _bridge.run_execution(self._client, "isolation.start", args, handlers)

    def run_background(self, code: str, *, opts: Optional[IsolatedRunOpts] = None) -> IsolatedBackgroundRun:
        """Starts code detached; poll :meth:`run_status` and :meth:`run_logs`."""
        args = _run_args(self._id, self.session_id, code, opts)
        args.pop("timeout_s", None)
        r = _bridge.call(self._client, "isolation.run_background", args)
        return IsolatedBackgroundRun.model_validate(r)

    def run_status(self, run_id: str) -> IsolatedRunStatus:
        """A background run's status."""
        args = {"sandbox": self._id, "session_id": self.session_id, "run_id": run_id}
        return IsolatedRunStatus.model_validate(_bridge.call(self._client, "isolation.run_status", args))

    def run_logs(self, run_id: str, cursor: int = 0) -> IsolatedRunLogs:
        """A background run's output from byte ``cursor``, with the next cursor."""
        args = {"sandbox": self._id, "session_id": self.session_id, "run_id": run_id, "cursor": cursor}
        return IsolatedRunLogs.model_validate(_bridge.call(self._client, "isolation.run_logs", args))

    def get(self) -> IsolatedSessionState:
        """The session's current state."""
        args = {"sandbox": self._id, "session_id": self.session_id}
        return IsolatedSessionState.model_validate(_bridge.call(self._client, "isolation.get", args))

    def delete(self) -> None:
        """Kills every process of the session and removes its state."""
        args = {"sandbox": self._id, "session_id": self.session_id}
        _bridge.call(self._client, "isolation.delete", args)


class IsolationServiceSync:
    """Isolated sessions of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    def create(self, request: CreateIsolatedSessionRequest) -> IsolationSessionSync:
        """Creates a session; it is running when this returns."""
        args: Dict[str, Any] = {"sandbox": self._id, **request.model_dump(exclude_none=True)}
        r = _bridge.call(self._client, "isolation.create", args)
        return IsolationSessionSync(self._client, self._id, IsolatedSessionInfo.model_validate(r))

    def attach(self, session_id: str) -> IsolationSessionSync:
        """A handle on an existing session, rebuilt from its state."""
        r = _bridge.call(self._client, "isolation.attach", {"sandbox": self._id, "session_id": session_id})
        return IsolationSessionSync(self._client, self._id, IsolatedSessionInfo.model_validate(r))

    def capabilities(self) -> IsolatedCapabilities:
        """What isolation the sandbox offers."""
        r = _bridge.call(self._client, "isolation.capabilities", {"sandbox": self._id})
        return IsolatedCapabilities.model_validate(r)

    def list(self) -> List[IsolatedSessionSummary]:
        """Every session of the sandbox."""
        r = _bridge.call(self._client, "isolation.list", {"sandbox": self._id})
        return [IsolatedSessionSummary.model_validate(x) for x in r]

    def run_once(
        self,
        code: str,
        *,
        workspace: str,
        workspace_mode: Optional[str] = None,
        opts: Optional[IsolatedRunOpts] = None,
        handlers: Optional[ExecutionHandlersSync] = None,
        profile: Optional[str] = None,
        share_net: Optional[bool] = None,
        binds: Optional[List[BindMount]] = None,
    ) -> Execution:
        """Creates a session on ``workspace``, runs ``code`` in it and deletes it."""
        request = CreateIsolatedSessionRequest(
            workspace=IsolatedWorkspaceSpec(path=workspace, mode=workspace_mode),
            profile=profile,
            share_net=share_net,
            binds=binds,
        )
        session = self.create(request)
        try:
            return session.run(code, opts=opts, handlers=handlers)
        finally:
            try:
                session.delete()
            except Exception:
                _warn("failed to delete isolated session %s", session.session_id)

    @contextmanager
    def session(self, request: CreateIsolatedSessionRequest) -> Iterator[IsolationSessionSync]:
        """A session deleted when the ``with`` block ends."""
        session = self.create(request)
        try:
            yield session
        finally:
            try:
                session.delete()
            except Exception:
                _warn("failed to delete isolated session %s", session.session_id)


__all__ = ["IsolationServiceSync", "IsolationSessionSync"]
