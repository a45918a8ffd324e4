"""Op-layer arguments of code runs, shared by the async and the sync API."""

from __future__ import annotations

from typing import Any, Dict, Optional

from code_interpreter.models.code import CodeContext, SupportedLanguage
from opensandbox.exceptions import InvalidArgumentException


def run_args(sandbox_id: str, code: str, language: Optional[str], context: Optional[CodeContext]) -> Dict[str, Any]:
    if not code or not code.strip():
        raise InvalidArgumentException("code cannot be empty")
    if context is not None and language is not None and context.language != language:
        raise InvalidArgumentException(f"language '{language}' must match context.language '{context.language}'")
    if context is None:
        context = CodeContext(language=language or SupportedLanguage.PYTHON)
    if context.id:
        return {"sandbox": sandbox_id, "code": code, "context_id": context.id}
    return {"sandbox": sandbox_id, "code": code, "language": context.language}
