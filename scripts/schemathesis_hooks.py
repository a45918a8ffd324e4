"""Schemathesis hooks of `scripts/schemathesis.sh` (loaded with SCHEMATHESIS_HOOKS).

The execd routes that write, move or delete files are fuzzed inside a runc sandbox,
whose files are its own; still, a generated `DELETE /directories?path=/` would empty the
sandbox and make every later request fail for a reason that is not a bug. So every
path such a request names is moved below one scratch directory (`SCRATCH`), keeping
the rest of what was generated (odd names, depths, modes, owners, bodies) as it was.
Read-only routes are left alone: reading any file of the sandbox is harmless.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis

SCRATCH = "/tmp/fuzz"

# (method, path) of the execd routes that change files.
WRITING = {
    ("DELETE", "/files"),
    ("POST", "/files/permissions"),
    ("POST", "/files/mv"),
    ("POST", "/files/replace"),
    ("POST", "/files/upload"),
    ("POST", "/directories"),
    ("DELETE", "/directories"),
}


def confine(path: Any) -> Any:
    """`path` below SCRATCH, without `.`/`..` components; non-strings unchanged."""
    if not isinstance(path, str):
        return path
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join([SCRATCH, *parts])


def confine_keys(body: Any) -> Any:
    if isinstance(body, dict):
        return {confine(k): v for k, v in body.items()}
    return body


def confine_metadata(meta: Any) -> Any:
    if isinstance(meta, dict):
        return {**meta, "path": confine(meta.get("path"))} if "path" in meta else meta
    if isinstance(meta, (str, bytes)):
        try:
            parsed = json.loads(meta)
        except ValueError:
            return meta
        if isinstance(parsed, dict) and "path" in parsed:
            parsed["path"] = confine(parsed["path"])
            return json.dumps(parsed)
    return meta


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    route = (case.operation.method.upper(), case.operation.path)
    if route not in WRITING:
        return
    if isinstance(case.query, dict) and "path" in case.query:
        value = case.query["path"]
        case.query["path"] = [confine(v) for v in value] if isinstance(value, list) else confine(value)
    body = case.body
    if route == ("POST", "/files/mv") and isinstance(body, list):
        case.body = [
            {**e, "src": confine(e.get("src")), "dest": confine(e.get("dest"))}
            if isinstance(e, dict)
            else e
            for e in body
        ]
    elif route == ("POST", "/files/upload") and isinstance(body, dict) and "metadata" in body:
        meta = body["metadata"]
        body["metadata"] = (
            [confine_metadata(m) for m in meta] if isinstance(meta, list) else confine_metadata(meta)
        )
    elif route in {("POST", "/files/permissions"), ("POST", "/files/replace"), ("POST", "/directories")}:
        case.body = confine_keys(body)
