"""Blocking code interpreter."""

from code_interpreter.sync.code_interpreter import CodeInterpreterSync

__all__ = ["CodeInterpreterSync"]
