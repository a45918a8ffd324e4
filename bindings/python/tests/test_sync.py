"""The blocking API against the real reference server."""

import hashlib
import io
import threading
import time

import pytest

from opensandbox import ConnectionConfigSync, SandboxManagerSync, SandboxSync
from opensandbox.exceptions import InvalidArgumentException, SandboxApiException, SandboxConnectionException
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.execd_sync import ExecutionHandlersSync
from opensandbox.models.filesystem import SearchEntry, WriteEntry
from opensandbox.models.sandboxes import SandboxFilter


def line(text):
    """An output event's text without its line ending: the 1.1 execd keeps "\n" in
    stdout/stderr events (the default framing), older servers strip it; a lone "\n"
    (an empty line in the old framing) stays as it is. Passes on both framings."""
    return text[:-1] if len(text) > 1 and text.endswith("\n") else text


def test_run_exit_codes_and_streams(sandbox_sync):
    ok = sandbox_sync.commands.run("echo a; echo; echo b >&2")
    assert ok.exit_code == 0
    assert [line(m.text) for m in ok.logs.stdout] == ["a", "\n"]
    assert [line(m.text) for m in ok.logs.stderr] == ["b"]
    bad = sandbox_sync.commands.run("echo oops >&2; exit 3")
    assert bad.exit_code == 3
    assert bad.error is not None and bad.error.value == "3"
    bg = sandbox_sync.commands.run("sleep 0.1", opts=RunCommandOpts(background=True))
    assert bg.exit_code is None and bg.id


def test_one_call_run_equals_the_streamed_run(sandbox_sync, monkeypatch):
    """Without handlers that want events a run is one native call of the run op;
    with them it is a start and a pull per batch. Both give the same Execution."""
    from opensandbox import _bridge

    ops = []
    real_call = _bridge.call

    def traced(client, op, args, blobs=None):
        ops.append(op)
        return real_call(client, op, args, blobs)

    monkeypatch.setattr(_bridge, "call", traced)
    cmd = "echo one; echo two >&2; echo 'h\u00e9llo'; exit 3"

    def shape(x):
        return (
            x.exit_code,
            [line(m.text) for m in x.logs.stdout],
            [line(m.text) for m in x.logs.stderr],
            all(m.timestamp > 0 for m in x.logs.stdout),
            (x.error.name, x.error.value) if x.error else None,
            x.id is not None,
            x.complete is not None,
        )

    once = sandbox_sync.commands.run(cmd)
    streamed = sandbox_sync.commands.run(cmd, handlers=ExecutionHandlersSync(on_init=lambda i: None))
    assert [o for o in ops if o.startswith("commands.")] == ["commands.run", "commands.start"]
    assert shape(once) == shape(streamed)
    assert shape(once)[:3] == (3, ["one", "h\u00e9llo"], ["two"])


def test_sync_handlers_in_order(sandbox_sync):
    seen = []
    h = ExecutionHandlersSync(
        on_init=lambda i: seen.append(("init", i.id)),
        on_stdout=lambda m: seen.append(("out", line(m.text))),
        on_stderr=lambda m: seen.append(("err", line(m.text))),
        on_execution_complete=lambda c: seen.append(("done", None)),
    )
    ex = sandbox_sync.commands.run("echo 1; sleep 0.1; echo 2 >&2; sleep 0.1; echo 3", handlers=h)
    assert seen[0] == ("init", ex.id)
    assert [s for s in seen[1:]] == [("out", "1"), ("err", "2"), ("out", "3"), ("done", None)]


def test_handler_messages_are_the_models_pydantic_builds(sandbox_sync):
    """Output messages are built natively without validation (one batch at a time):
    they must be indistinguishable from the validated model, and independent."""
    from opensandbox.models.execd import OutputMessage

    got = []
    h = ExecutionHandlersSync(on_stdout=got.append, on_stderr=got.append, skip_accumulation=True)
    sandbox_sync.commands.run("printf 'a\\nb\\n'; echo c >&2", handlers=h)
    # stdout and stderr are separate pipes: their relative order is not fixed.
    assert [line(m.text) for m in got if not m.is_error] == ["a", "b"]
    assert [line(m.text) for m in got if m.is_error] == ["c"]
    for m in got:
        ref = OutputMessage(text=m.text, timestamp=m.timestamp, is_error=m.is_error)
        assert type(m) is OutputMessage
        assert m == ref and m.model_dump() == ref.model_dump() and repr(m) == repr(ref)
        assert m.model_fields_set == ref.model_fields_set
        assert m.model_copy(update={"text": "x"}).text == "x"
    # Assigning to one message changes no other.
    out = [m for m in got if not m.is_error]
    out[0].text = "changed"
    assert line(out[1].text) == "b" and out[0].model_dump()["text"] == "changed"


def test_a_handler_error_propagates_and_releases_the_run(sandbox_sync):
    """Sync output handlers are called from native code: an exception they raise comes
    out of run() as itself (mid-batch), and the run is released (the sandbox serves the
    next command at once)."""

    class Boom(Exception):
        pass

    calls = []

    def on_stdout(m):
        calls.append(m.text)
        if len(calls) == 3:
            raise Boom(m.text)

    with pytest.raises(Boom) as err:
        sandbox_sync.commands.run("seq 1 20000", handlers=ExecutionHandlersSync(on_stdout=on_stdout))
    assert len(calls) == 3 and line(err.value.args[0]) == "3"
    assert line(sandbox_sync.commands.run("echo next").logs.stdout[0].text) == "next"


def test_only_the_streams_with_handlers_are_delivered(sandbox_sync):
    got = []
    ex = sandbox_sync.commands.run("echo o; echo e >&2; echo o2", handlers=ExecutionHandlersSync(on_stderr=got.append))
    assert [(line(m.text), m.is_error) for m in got] == [("e", True)]
    # Kept output (built natively from the outcome) is complete and made of real models.
    from opensandbox.models.execd import OutputMessage

    assert [line(m.text) for m in ex.logs.stdout] == ["o", "o2"]
    for m in ex.logs.stdout + ex.logs.stderr:
        assert type(m) is OutputMessage
        assert m == OutputMessage(text=m.text, timestamp=m.timestamp, is_error=m.is_error)
    assert [m.is_error for m in ex.logs.stderr] == [True]


def test_files_round_trip(sandbox_sync):
    f = sandbox_sync.files
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    f.write_file("/data/blob.bin", payload, mode=600)
    f.write_files(
        [
            WriteEntry(path="/data/a.txt", data="héllo\nworld\n"),
            WriteEntry(path="/data/s.txt", data=io.BytesIO(b"x" * 3_000_000)),
        ]
    )
    assert f.read_bytes("/data/blob.bin") == payload
    assert f.read_bytes("/data/blob.bin", range_header="bytes=0-9") == payload[:10]
    assert f.read_file("/data/a.txt", offset=2, limit=1).strip() == "world"
    h = hashlib.sha256()
    for chunk in f.read_bytes_stream("/data/s.txt"):
        h.update(chunk)
    assert h.hexdigest() == hashlib.sha256(b"x" * 3_000_000).hexdigest()
    info = f.get_file_info(["/data/blob.bin"])["/data/blob.bin"]
    assert info.size == len(payload) and info.mode == 600 and info.entry_type == "file"
    found = {e.path for e in f.search(SearchEntry(path="/data", pattern="*.txt"))}
    assert found == {"/data/a.txt", "/data/s.txt"}


def test_download_stream_chunks_are_of_chunk_size(sandbox_sync):
    # As the official SDK (httpx's iter_bytes(chunk_size)): every chunk `chunk_size`
    # bytes but the last, every byte once and in order; the sync iterator reads each
    # straight into its `bytes` (bindings/python/src/download.rs). An empty file yields
    # nothing; a chunk_size that is no positive int is refused before anything is opened.
    f = sandbox_sync.files
    size = 3 * 65536 + 17
    payload = bytes((i * 7 + (i >> 11)) & 0xFF for i in range(size))
    f.write_file("/data/odd.bin", payload)
    chunks = list(f.read_bytes_stream("/data/odd.bin"))
    assert [len(c) for c in chunks] == [65536] * 3 + [17]
    assert all(type(c) is bytes for c in chunks)
    assert b"".join(chunks) == payload
    odd = list(f.read_bytes_stream("/data/odd.bin", chunk_size=1000))
    assert [len(c) for c in odd] == [1000] * (size // 1000) + [size % 1000]
    assert b"".join(odd) == payload
    assert list(f.read_bytes_stream("/data/odd.bin", chunk_size=size + 5)) == [payload]
    # Far beyond the file (and beyond what is reserved up front): the file as one chunk.
    assert list(f.read_bytes_stream("/data/odd.bin", chunk_size=1 << 40)) == [payload]
    f.write_file("/data/empty.bin", b"")
    assert list(f.read_bytes_stream("/data/empty.bin")) == []
    part = b"".join(f.read_bytes_stream("/data/odd.bin", range_header="bytes=5-65545"))
    assert part == payload[5:65546]
    for bad in (0, -1, 1.5, True, "64"):
        with pytest.raises(InvalidArgumentException):
            f.read_bytes_stream("/data/odd.bin", chunk_size=bad)


def test_not_found_carries_status_code_and_request_id(server):
    with pytest.raises(SandboxApiException) as e:
        SandboxManagerSync().get_sandbox_info("no-such-sandbox")
    assert e.value.status_code == 404
    assert e.value.request_id
    assert e.value.error.code
    assert e.value.kind == "not_found"


def test_wrong_key_is_unauthorized(server):
    cfg = ConnectionConfigSync(api_key="wrong")
    with pytest.raises(SandboxApiException) as e:
        SandboxManagerSync(cfg).list_sandbox_infos(SandboxFilter())
    assert e.value.status_code == 401


def test_unreachable_server_is_a_connection_error(server):
    from datetime import timedelta

    cfg = ConnectionConfigSync(domain="127.0.0.1:9", request_timeout=timedelta(seconds=3))
    with pytest.raises(SandboxConnectionException):
        SandboxManagerSync(cfg).get_sandbox_info("x")


def test_invalid_arguments_are_rejected(server):
    with pytest.raises(InvalidArgumentException):
        SandboxSync.create("python:3.11", volumes=[object()])
    with pytest.raises(InvalidArgumentException):
        SandboxSync.create()


def test_gil_is_released_while_waiting(sandbox_sync):
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    sandbox_sync.commands.run("sleep 1")
    stop.set()
    t.join()
    assert len(ticks) > 100  # the other thread ran during the blocking call


def test_set_env_reaches_later_commands_and_new_sessions(sandbox_sync):
    cmds = sandbox_sync.commands
    cmds.set_env("OSB_PLAIN", "hello")
    cmds.set_env("OSB_QUOTED", 'it\'s a "test" $(id) `id`')
    out = cmds.run('printf "%s|%s" "$OSB_PLAIN" "$OSB_QUOTED"')
    assert out.exit_code == 0
    assert "".join(m.text for m in out.logs.stdout) == 'hello|it\'s a "test" $(id) `id`'
    cmds.set_env("OSB_MULTI", "line1\nline2")
    session = cmds.create_session()
    try:
        ex = cmds.run_in_session(session, 'printf "%s" "$OSB_MULTI" | wc -l; echo "$OSB_PLAIN"')
        assert [line(m.text) for m in ex.logs.stdout] == ["1", "hello"]
    finally:
        cmds.delete_session(session)
    # The request's envs still win over the file.
    opts = RunCommandOpts(envs={"OSB_PLAIN": "request"})
    assert line(cmds.run("echo $OSB_PLAIN", opts=opts).logs.stdout[0].text) == "request"


def test_set_env_refuses_bad_keys_before_any_request(sandbox_sync):
    for key in ["", "1A", "A-B", "A B", "A=B"]:
        with pytest.raises(InvalidArgumentException):
            sandbox_sync.commands.set_env(key, "v")
    with pytest.raises(InvalidArgumentException):
        sandbox_sync.commands.set_env("K", "a\0b")
