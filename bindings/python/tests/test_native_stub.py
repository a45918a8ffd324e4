"""The committed stub _native.pyi matches the extension module (drift check)."""

import ast
import inspect
import pathlib

from opensandbox import _native

STUB = pathlib.Path(__file__).resolve().parents[1] / "python" / "opensandbox" / "_native.pyi"


def _stub_surface():
    tree = ast.parse(STUB.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = sorted(
                n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"
            )
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = "function"
        elif isinstance(node, ast.AnnAssign):
            out[node.target.id] = None
    return out


def _module_surface():
    out = {}
    for name, obj in vars(_native).items():
        if name.startswith("_") and name != "__version__":
            continue
        if inspect.isclass(obj):
            if issubclass(obj, BaseException):
                out[name] = []
            else:
                out[name] = sorted(n for n in vars(obj) if not n.startswith("_"))
        elif callable(obj):
            out[name] = "function"
        elif name == "__version__":
            out[name] = None
    return out


def test_stub_matches_module():
    assert _stub_surface() == _module_surface()
