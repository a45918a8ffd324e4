"""The bridge's own rules that need no server."""

import asyncio

from opensandbox import _bridge


class RecordingClient:
    def __init__(self):
        self.calls = []

    def call(self, op, args, blobs):
        self.calls.append((op, args))


def test_a_result_that_arrives_after_the_cancel_releases_its_handle():
    """A start op that finished just as its awaiting task was cancelled: the handle it
    made (a started run) is released, not leaked with its command still running."""
    client = RecordingClient()
    loop = asyncio.new_event_loop()
    try:
        fut = loop.create_future()
        fut.cancel()
        _bridge._resolve(fut, True, {"handle": 7, "id": "ex"}, lambda v: _bridge._release_orphan(client, v))
        # A failure or a result without a handle leaves nothing to release.
        _bridge._resolve(fut, False, None, lambda v: _bridge._release_orphan(client, v))
        _bridge._resolve(fut, True, {"ok": 1}, lambda v: _bridge._release_orphan(client, v))
        _bridge._resolve(fut, True, [1, 2], lambda v: _bridge._release_orphan(client, v))
    finally:
        loop.close()
    assert client.calls == [("release", {"handle": 7})]
