"""Code interpreter for OpenSandbox (the official ``opensandbox-code-interpreter`` API)."""

from code_interpreter.code_interpreter import CodeInterpreter
from code_interpreter.models.code import CodeContext, SupportedLanguage
from code_interpreter.sync.code_interpreter import CodeInterpreterSync

__version__ = "1.1.1"

__all__ = ["CodeInterpreter", "CodeInterpreterSync", "CodeContext", "SupportedLanguage"]
