"""Generates the blocking API (``opensandbox/sync``, ``code_interpreter/sync``) from the
async one with ``unasync``, then formats it with ruff. The generated files are
committed; ``tests/test_sync_generated.py`` regenerates them and fails on any
difference, so edit the async sources and run this script:

    python bindings/python/scripts/gen_sync.py          # rewrite the sync files
    python bindings/python/scripts/gen_sync.py --check  # exit 1 if they are stale

Needs ``unasync`` and ``ruff`` in the running Python (mk/python.mk installs both).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

import tokenize_rt
import unasync

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "python"

# async source → generated sync file (relative to python/).
FILES: List[Tuple[str, str]] = [
    ("opensandbox/sandbox.py", "opensandbox/sync/sandbox.py"),
    ("opensandbox/manager.py", "opensandbox/sync/manager.py"),
    ("opensandbox/services/command.py", "opensandbox/sync/services/command.py"),
    ("opensandbox/services/diagnostics.py", "opensandbox/sync/services/diagnostics.py"),
    ("opensandbox/services/egress.py", "opensandbox/sync/services/egress.py"),
    ("opensandbox/services/filesystem.py", "opensandbox/sync/services/filesystem.py"),
    ("opensandbox/services/isolated.py", "opensandbox/sync/services/isolated.py"),
    ("opensandbox/services/metrics.py", "opensandbox/sync/services/metrics.py"),
    ("opensandbox/services/pty.py", "opensandbox/sync/services/pty.py"),
    ("opensandbox/async_redis_pool_store.py", "opensandbox/redis_pool_store.py"),
    ("code_interpreter/code_interpreter.py", "code_interpreter/sync/code_interpreter.py"),
    ("code_interpreter/services/code.py", "code_interpreter/sync/services/code.py"),
]

# Names (tokens and whole-string tokens) of the async API → the blocking API's.
NAMES: Dict[str, str] = {
    # the bridge's awaitable calls → the blocking ones
    "acall": "call",
    "arun_execution": "run_execution",
    "anative": "native",
    "asleep": "sleep",
    # native methods
    "read_bytes_async": "read_bytes",
    "read_chunks_async": "read_chunks",
    "watch_metrics_async": "watch_metrics",
    "next_item_async": "next_item",
    # helpers and methods
    "_aiter_chunks": "_iter_chunks",
    # the sync iterator reads one chunk per call (services/_common.py)
    "read_size": "sync_read_size",
    "aclose": "close",
    # public classes
    "Sandbox": "SandboxSync",
    "SandboxManager": "SandboxManagerSync",
    "ConnectionConfig": "ConnectionConfigSync",
    "ExecutionHandlers": "ExecutionHandlersSync",
    "Commands": "CommandsSync",
    "Diagnostics": "DiagnosticsSync",
    "Egress": "EgressSync",
    "CredentialVault": "CredentialVaultSync",
    "Filesystem": "FilesystemSync",
    "IsolationService": "IsolationServiceSync",
    "IsolationSession": "IsolationSessionSync",
    "asynccontextmanager": "contextmanager",
    "Metrics": "MetricsSync",
    "Pty": "PtySync",
    "PtyConnection": "PtyConnectionSync",
    "CodeInterpreter": "CodeInterpreterSync",
    "Codes": "CodesSync",
    "AsyncRedisPoolStateStore": "RedisPoolStateStore",
}

# Text after the token pass: modules of the sync classes, awaitable types, docs.
TEXT: List[Tuple[str, str]] = [
    (
        # also indented: TYPE_CHECKING blocks and the imports of lazily made services
        r"^(\s*)from opensandbox\.services\.(command|diagnostics|egress|filesystem|isolated|metrics|pty) import",
        r"\1from opensandbox.sync.services.\2 import",
    ),
    (r"^from opensandbox\.config\.connection import", "from opensandbox.config.connection_sync import"),
    (r"^from opensandbox\.sandbox import", "from opensandbox.sync.sandbox import"),
    (
        r"^from opensandbox\.models\.execd import ExecutionHandlersSync$",
        "from opensandbox.models.execd_sync import ExecutionHandlersSync",
    ),
    (r"^from code_interpreter\.services\.code import", "from code_interpreter.sync.services.code import"),
    (r"Awaitable\[([\w\[\], ]+?)\]", r"\1"),
    (r"\bAwaitable, ", ""),
    (r'^"""Async ', '"""Sync '),
    (r"\(async\)", "(blocking)"),
    (r"^(\s*)from redis\.asyncio import Redis$", r"\1from redis import Redis"),
    (r"\(``redis\.asyncio``\)", "(``redis``, blocking)"),
    (r"\bAsyncRedisPoolStateStore\b", "RedisPoolStateStore"),
    (r"\ban async iterator\b", "an iterator"),
    (r"\bthe async handle\b", "the blocking handle"),
    (r"``async with``", "``with``"),
]


def _header(src: str) -> str:
    return f"# Generated from {src} by bindings/python/scripts/gen_sync.py (unasync): do not edit.\n"


def unasync_text(text: str) -> str:
    """One async module as its blocking counterpart (before formatting)."""
    rule = unasync.Rule(fromdir="/", todir="/", additional_replacements=NAMES)
    tokens = list(rule._unasync_tokens(tokenize_rt.src_to_tokens(text)))
    out = tokenize_rt.tokens_to_src(tokens)
    for pattern, repl in TEXT:
        out = re.sub(pattern, repl, out, flags=re.M)
    return out


def generate(out_root: pathlib.Path) -> List[pathlib.Path]:
    """Writes every sync file under ``out_root`` (a copy of python/'s layout), formatted."""
    written = []
    for src, dst in FILES:
        text = _header(src) + unasync_text((SRC / src).read_text())
        path = out_root / dst
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    subprocess.run(
        [sys.executable, "-m", "ruff", "format", "-q", "--config", str(ROOT / "pyproject.toml"), *map(str, written)],
        check=True,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "-q",
            "--fix",
            "--select",
            "F401",
            "--config",
            str(ROOT / "pyproject.toml"),
            *map(str, written),
        ],
        check=False,
    )
    subprocess.run(
        [sys.executable, "-m", "ruff", "format", "-q", "--config", str(ROOT / "pyproject.toml"), *map(str, written)],
        check=True,
    )
    return written


def stale() -> List[str]:
    """The committed sync files that differ from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(pathlib.Path(tmp))
        return [dst for _, dst in FILES if (pathlib.Path(tmp) / dst).read_text() != (SRC / dst).read_text()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report stale files (exit 1)")
    args = ap.parse_args()
    if args.check:
        bad = stale()
        for f in bad:
            print(f"stale: python/{f} (run bindings/python/scripts/gen_sync.py)")
        return 1 if bad else 0
    generate(SRC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
