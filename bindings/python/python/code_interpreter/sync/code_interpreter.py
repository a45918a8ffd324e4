# Generated from code_interpreter/code_interpreter.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""``CodeInterpreter``: a sandbox with code execution in persistent contexts (blocking)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from code_interpreter.sync.services.code import CodesSync
from opensandbox import _bridge
from opensandbox.exceptions import SandboxReadyTimeoutException
from opensandbox.sync.sandbox import SandboxSync

DEFAULT_READY_TIMEOUT = timedelta(seconds=30)
DEFAULT_HEALTH_CHECK_POLLING_INTERVAL = timedelta(milliseconds=200)


class CodeInterpreterSync:
    """Wraps a :class:`~opensandbox.Sandbox` with the ``codes`` service."""

    def __init__(self, sandbox: SandboxSync, code_service: CodesSync) -> None:
        self._sandbox = sandbox
        self._codes = code_service

    @property
    def sandbox(self) -> SandboxSync:
        return self._sandbox

    @property
    def id(self) -> str:
        return self._sandbox.id

    @property
    def files(self) -> Any:
        return self._sandbox.files

    @property
    def commands(self) -> Any:
        return self._sandbox.commands

    @property
    def metrics(self) -> Any:
        return self._sandbox.metrics

    @property
    def codes(self) -> CodesSync:
        """Contexts and code runs."""
        return self._codes

    def close(self) -> None:
        """Releases local resources (the sandbox keeps running)."""
        self._sandbox.close()

    def ping(self) -> bool:
        return self._codes.ping()

    def is_healthy(self) -> bool:
        return self._sandbox.is_healthy()

    def check_ready(self, timeout: timedelta, polling_interval: timedelta) -> None:
        deadline = time.monotonic() + timeout.total_seconds()
        while not self.ping():
            if time.monotonic() >= deadline:
                raise SandboxReadyTimeoutException(f"code interpreter not ready within {timeout}")
            _bridge.sleep(polling_interval.total_seconds())

    @classmethod
    def create(
        cls,
        sandbox: SandboxSync,
        *,
        ready_timeout: timedelta = DEFAULT_READY_TIMEOUT,
        health_check_polling_interval: timedelta = DEFAULT_HEALTH_CHECK_POLLING_INTERVAL,
        skip_health_check: bool = False,
    ) -> "CodeInterpreterSync":
        """Adds code execution to ``sandbox`` (waits for the code service unless skipped)."""
        ci = cls(sandbox, CodesSync(sandbox._client, sandbox.id))
        if not skip_health_check:
            ci.check_ready(ready_timeout, health_check_polling_interval)
        return ci


__all__ = ["CodeInterpreterSync"]
