# Generated from code_interpreter/services/code.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""Sync ``Codes`` service (``interpreter.codes``)."""

from __future__ import annotations

from typing import Any, List, Optional

from code_interpreter._args import run_args
from code_interpreter.models.code import CodeContext
from opensandbox import _bridge
from opensandbox.models.execd import Execution
from opensandbox.models.execd_sync import ExecutionHandlersSync


class CodesSync:
    """Contexts and code runs of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    def _call(self, op: str, **args: Any) -> Any:
        args["sandbox"] = self._id
        return _bridge.call(self._client, op, args)

    def create_context(self, language: str) -> CodeContext:
        """A new context of ``language``."""
        return CodeContext.model_validate(self._call("code.create_context", language=language))

    def get_context(self, context_id: str) -> CodeContext:
        return CodeContext.model_validate(self._call("code.get_context", context_id=context_id))

    def list_contexts(self, language: str) -> List[CodeContext]:
        return [CodeContext.model_validate(c) for c in self._call("code.list_contexts", language=language)]

    def delete_context(self, context_id: str) -> None:
        self._call("code.delete_context", context_id=context_id)

    def delete_contexts(self, language: str) -> None:
        self._call("code.delete_contexts", language=language)

    def run(
        self,
        code: str,
        *,
        language: Optional[str] = None,
        context: Optional[CodeContext] = None,
        handlers: Optional[ExecutionHandlersSync] = None,
    ) -> Execution:
        """Runs code in ``context`` (or the default context of ``language``, python by default)."""
        return _bridge.run_execution(self._client, "code.start", run_args(self._id, code, language, context), handlers)

    def interrupt(self, execution_id: str) -> None:
        """Interrupts the running cell (``execution_id`` is the context id)."""
        self._call("code.interrupt", id=execution_id)

    def ping(self) -> bool:
        """Whether the code service answers."""
        try:
            return bool((self._call("sandbox.is_healthy"))["healthy"])
        except Exception:
            return False


__all__ = ["CodesSync"]
