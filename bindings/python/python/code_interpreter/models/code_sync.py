"""Models of the blocking code interpreter (``code_interpreter.models.code_sync``)."""

from __future__ import annotations

from code_interpreter.models.code import CodeContext, SupportedLanguage


class SupportedLanguageSync(SupportedLanguage):
    """Languages of the code interpreter (blocking API)."""


class CodeContextSync(CodeContext):
    """A persistent execution context (blocking API)."""


__all__ = ["CodeContextSync", "SupportedLanguageSync"]
