#!/usr/bin/env python3
"""Fail when a crate's unit tests would silently never run.

Some crates set `test = false` on their lib or bin target so that `make test`'s one
workspace build does not compile them a second time as an empty test harness (their
tests live in tests/ or in another language). A `#[cfg(test)]` module added to such a
crate's src/ would then never be built or run: this check, part of `make lint`, says so.
"""

import pathlib
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def members():
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]
    for pattern in workspace.get("members", []):
        yield from sorted(ROOT.glob(pattern))


def untested_targets(manifest):
    """(target kind, src dir) of each lib/bin target with `test = false`."""
    lib = manifest.get("lib")
    if lib and lib.get("test") is False:
        yield "lib", pathlib.Path(lib.get("path", "src/lib.rs")).parent
    for b in manifest.get("bin", []):
        if b.get("test") is False:
            yield f"bin {b.get('name')}", pathlib.Path(b.get("path", "src/main.rs")).parent


def main():
    problems = []
    for crate in members():
        path = crate / "Cargo.toml"
        if not path.is_file():
            continue
        for kind, src in untested_targets(tomllib.loads(path.read_text())):
            for f in sorted((crate / src).rglob("*.rs")):
                if re.search(r"#\[cfg\(test\)\]|#\[test\]", f.read_text()):
                    problems.append(
                        f"{f.relative_to(ROOT)}: unit tests in a {kind} target with "
                        f"`test = false` ({path.relative_to(ROOT)}): they never run; "
                        "move them to tests/"
                    )
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
