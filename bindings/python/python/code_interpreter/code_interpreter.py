"""``CodeInterpreter``: a sandbox with code execution in persistent contexts (async)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from code_interpreter.services.code import Codes
from opensandbox import _bridge
from opensandbox.exceptions import SandboxReadyTimeoutException
from opensandbox.sandbox import Sandbox

DEFAULT_READY_TIMEOUT = timedelta(seconds=30)
DEFAULT_HEALTH_CHECK_POLLING_INTERVAL = timedelta(milliseconds=200)


class CodeInterpreter:
    """Wraps a :class:`~opensandbox.Sandbox` with the ``codes`` service."""

    def __init__(self, sandbox: Sandbox, code_service: Codes) -> None:
        self._sandbox = sandbox
        self._codes = code_service

    @property
    def sandbox(self) -> Sandbox:
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
    def codes(self) -> Codes:
        """Contexts and code runs."""
        return self._codes

    async def aclose(self) -> None:
        """Releases local resources (the sandbox keeps running)."""
        await self._sandbox.close()

    async def ping(self) -> bool:
        return await self._codes.ping()

    async def is_healthy(self) -> bool:
        return await self._sandbox.is_healthy()

    async def check_ready(self, timeout: timedelta, polling_interval: timedelta) -> None:
        deadline = time.monotonic() + timeout.total_seconds()
        while not await self.ping():
            if time.monotonic() >= deadline:
                raise SandboxReadyTimeoutException(f"code interpreter not ready within {timeout}")
            await _bridge.asleep(polling_interval.total_seconds())

    @classmethod
    async def create(
        cls,
        sandbox: Sandbox,
        *,
        ready_timeout: timedelta = DEFAULT_READY_TIMEOUT,
        health_check_polling_interval: timedelta = DEFAULT_HEALTH_CHECK_POLLING_INTERVAL,
        skip_health_check: bool = False,
    ) -> "CodeInterpreter":
        """Adds code execution to ``sandbox`` (waits for the code service unless skipped)."""
        ci = cls(sandbox, Codes(sandbox._client, sandbox.id))
        if not skip_health_check:
            await ci.check_ready(ready_timeout, health_check_polling_interval)
        return ci


__all__ = ["CodeInterpreter"]
