from code_interpreter.services.code import Codes

__all__ = ["Codes"]
