"""Code-interpreter models (``code_interpreter.models.code``)."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SupportedLanguage:
    """Languages of the code interpreter."""

    PYTHON = "python"
    JAVA = "java"
    GO = "go"
    TYPESCRIPT = "typescript"
    BASH = "bash"
    JAVASCRIPT = "javascript"


class CodeContext(BaseModel):
    """A persistent execution context (variables and imports survive between runs)."""

    id: Optional[str] = Field(default=None)
    language: str

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("language")
    @classmethod
    def language_must_not_be_empty(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError("language cannot be empty")
        return v


__all__ = ["CodeContext", "SupportedLanguage"]
