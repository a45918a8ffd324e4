from code_interpreter.models.code import CodeContext, SupportedLanguage

__all__ = ["CodeContext", "SupportedLanguage"]
