"""The committed blocking API is exactly what scripts/gen_sync.py (unasync over the
async API, then ruff format) generates: edit the async sources, then regenerate."""

import importlib.util
import pathlib

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gen_sync.py"


def test_sync_files_match_their_generation():
    spec = importlib.util.spec_from_file_location("gen_sync", SCRIPT)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    stale = gen.stale()
    assert not stale, f"stale generated files (run python {SCRIPT}): {stale}"
