from code_interpreter.sync.services.code import CodesSync

__all__ = ["CodesSync"]
