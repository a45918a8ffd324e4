"""Async ``Codes`` service (``interpreter.codes``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from code_interpreter.models.code import CodeContext, SupportedLanguage
from opensandbox import _bridge
from opensandbox.exceptions import InvalidArgumentException
from opensandbox.models.execd import Execution, ExecutionHandlers


def run_args(sandbox_id: str, code: str, language: Optional[str], context: Optional[CodeContext]) -> Dict[str, Any]:
    if not code or not code.strip():
        raise InvalidArgumentException("code cannot be empty")
    if context is not None and language is not None and context.language != language:
        raise InvalidArgumentException(f"language '{language}' must match context.language '{context.language}'")
    if context is None:
        context = CodeContext(language=language or SupportedLanguage.PYTHON)
    return {"sandbox": sandbox_id, "code": code, "context": {"id": context.id, "language": context.language}}


class Codes:
    """Contexts and code runs of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def _call(self, op: str, **args: Any) -> Any:
        args["sandbox"] = self._id
        return _bridge.loads(await _bridge.acall(self._client, op, args))

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
        stream = await _bridge.acall(self._client, "code.run", run_args(self._id, code, language, context))
        return await _bridge.arun_execution(stream, handlers)

    async def interrupt(self, execution_id: str) -> None:
        """Interrupts the running cell (``execution_id`` is the context id)."""
        await self._call("code.interrupt", id=execution_id)

    async def ping(self) -> bool:
        """Whether the code service answers."""
        try:
            return bool(await self._call("sandbox.is_healthy"))
        except Exception:
            return False


__all__ = ["Codes"]
