#!/usr/bin/env python3
"""Validate every OpenAPI file under openapi/ with openapi-spec-validator.

Usage: validate_openapi.py [FILE_OR_DIR ...]   (default: the repository's openapi/)

Prints one line per file and exits non-zero if any file is invalid or none was found.
Needs `openapi-spec-validator` and `pyyaml` (the Makefile installs them into a venv).
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import yaml
    from openapi_spec_validator import validate
    from openapi_spec_validator.readers import read_from_filename
except ImportError as exc:  # pragma: no cover - environment problem, not a spec problem
    print(
        f"error: {exc}. Install with: pip install openapi-spec-validator pyyaml",
        file=sys.stderr,
    )
    sys.exit(2)


def collect(args: list[str]) -> list[Path]:
    if not args:
        args = [str(Path(__file__).resolve().parent.parent / "openapi")]
    files: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")))
        else:
            files.append(path)
    return files


def count_operations(spec: dict) -> int:
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    return sum(
        1
        for item in (spec.get("paths") or {}).values()
        for key in item
        if key in methods
    )


def check(path: Path) -> str | None:
    """Returns None when valid, else a one-line reason."""
    try:
        spec, base_uri = read_from_filename(str(path))
    except (OSError, yaml.YAMLError) as exc:
        return f"cannot read: {exc}".replace("\n", " ")
    try:
        validate(spec, base_uri=base_uri)
    except Exception as exc:  # the validator raises several unrelated types
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return f"{type(exc).__name__}: {first}"
    return None


def main(argv: list[str]) -> int:
    files = collect(argv)
    if not files:
        print("error: no OpenAPI files found", file=sys.stderr)
        return 1
    failed = 0
    for path in files:
        reason = check(path)
        if reason is None:
            spec, _ = read_from_filename(str(path))
            print(f"ok      {path}  (openapi {spec.get('openapi')}, {count_operations(spec)} operations)")
        else:
            failed += 1
            print(f"INVALID {path}  {reason}")
    print(f"{len(files) - failed} valid, {failed} invalid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
