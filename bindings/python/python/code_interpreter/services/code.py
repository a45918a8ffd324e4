"""Async ``Codes`` service (``interpreter.codes``)."""

from __future__ import annotations

from typing import Any, List, Optional

from code_interpreter._args import run_args
from code_interpreter.models.code import CodeContext
from opensandbox import _bridge
from opensandbox.models.execd import Execution
from opensandbox.models.execd import ExecutionHandlers


class Codes:
    """Contexts and code runs of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def _call(self, op: str, **args: Any) -> Any:
        args["sandbox"] = self._id
        return await _bridge.acall(self._client, op, args)

    async def create_context(self, language: str) -> CodeContext:
        """A new context of ``language``."""
        return CodeContext.model_validate(await self._call("code.create_context", language=language))

    async def get_context(self, context_id: str) -> CodeContext:
        return CodeContext.model_validate(await self._call("code.get_context", context_id=context_id))

    async def list_contexts(self, language: str) -> List[CodeContext]:
        return [CodeContext.model_validate(c) for c in await self._call("code.list_contexts", language=language)]

    async def delete_context(self, context_id: str) -> None:
        await self._call("code.delete_context", context_id=context_id)

    async def delete_contexts(self, language: str) -> None:
        await self._call("code.delete_contexts", language=language)

    async def run(
        self,
        code: str,
        *,
        language: Optional[str] = None,
        context: Optional[CodeContext] = None,
        handlers: Optional[ExecutionHandlers] = None,
    ) -> Execution:
        """Runs code in ``context`` (or the default context of ``language``, python by default)."""
        return await _bridge.arun_execution(
            self._client, "code.start", run_args(self._id, code, language, context), handlers
        )

    async def interrupt(self, execution_id: str) -> None:
        """Interrupts the running cell (``execution_id`` is the context id)."""
        await self._call("code.interrupt", id=execution_id)

    async def ping(self) -> bool:
        """Whether the code service answers."""
        try:
            return bool((await self._call("sandbox.is_healthy"))["healthy"])
        except Exception:
            return False


__all__ = ["Codes"]
