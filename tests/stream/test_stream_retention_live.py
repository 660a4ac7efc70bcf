"""Retention against a real daphne: a client whose cursor points at pruned events gets
`stream.reset` first, then the kept events after its cursor, then the live stream."""

from __future__ import annotations

import queue

import pytest

from tests.support.sse import Frame, SSEClient

pytestmark = pytest.mark.live

ENV = {"CROWS_NEST_POST_RATE_PER_MIN": "100000", "CROWS_EXCHANGES_PER_TURN": "0"}


def post(server, text: str) -> None:
    r = server.post("/api/nests/todo/messages", {"author": "owner", "text": text})
    assert r.status_code == 201, r.text


def frames(client: SSEClient, count: int, timeout: float = 15) -> list[Frame]:
    """The next `count` frames that are not comments, id or no id."""
    got: list[Frame] = []
    while len(got) < count:
        frame = client.frames.get(timeout=timeout)
        if frame.event:
            got.append(frame)
    return got


def test_a_stale_cursor_gets_stream_reset_then_the_kept_events_then_live(live_server_factory):
    server = live_server_factory(env=ENV).start()
    for n in range(3):
        post(server, f"old note {n}")
    old_last = server.get("/api/state").json()["last_event_id"]
    # Age the first three events past retention, then prune as the owner would.
    aged = server.manage(
        "shell", "-c",
        "from datetime import timedelta; from django.utils import timezone; from flock.models import Event; "
        f"Event.objects.filter(id__lte={old_last}).update(created_at=timezone.now() - timedelta(days=9))",
    )
    assert aged.returncode == 0, aged.stderr
    post(server, "kept note")
    pruned = server.manage("prune", "--older-than", "7")
    assert pruned.returncode == 0, pruned.stderr
    assert "3 rows deleted" in pruned.stdout or "deleted" in pruned.stdout

    stale = SSEClient(f"{server.url}/api/events", last_event_id=1)
    current = SSEClient(f"{server.url}/api/events?nest_id=todo", last_event_id=old_last)
    try:
        reset, kept = frames(stale, 2)
        # The frame carries the cursor to go on from: everything after the pruned mark is kept.
        assert reset.event == "stream.reset" and reset.id == old_last
        assert reset.data == {**reset.data, "reason": "retention", "cursor": 1, "pruned_through": old_last}
        assert kept.event == "nest.message" and kept.data["text"] == "kept note" and kept.id > old_last
        post(server, "live note")
        (live,) = frames(stale, 1)
        assert live.event == "nest.message" and live.data["text"] == "live note"
        # A client that already has everything up to the pruned mark gets no reset.
        first, second = frames(current, 2)
        assert [first.event, second.event] == ["nest.message", "nest.message"]
        assert [first.data["text"], second.data["text"]] == ["kept note", "live note"]
        # A keyed stream opened without a cursor replays from 0: its start was pruned.
        fresh = SSEClient(f"{server.url}/api/events?nest_id=todo")
        try:
            (reset_nest,) = frames(fresh, 1)
            assert reset_nest.event == "stream.reset" and reset_nest.data["nest_id"] == "todo"
        finally:
            fresh.close()
    except queue.Empty:
        pytest.fail("the stream went quiet")
    finally:
        stale.close()
        current.close()


def test_a_cursor_the_log_never_reached_gets_stream_reset_then_the_events_that_come_next(live_server_factory):
    # As after a database reset or a restore from an older copy: the page's cursor is
    # above every id the log handed out. It would otherwise drop every event up to it.
    server = live_server_factory(env=ENV).start()
    post(server, "before")
    newest = server.get("/api/state").json()["last_event_id"]
    ahead = SSEClient(f"{server.url}/api/events?nest_id=todo", last_event_id=newest + 1000)
    firehose = SSEClient(f"{server.url}/api/events?since={newest + 5}")
    try:
        (reset,) = frames(ahead, 1)
        assert reset.event == "stream.reset" and reset.id == newest
        assert reset.data == {**reset.data, "reason": "ahead", "cursor": newest + 1000, "newest_id": newest,
                              "nest_id": "todo"}
        (reset_all,) = frames(firehose, 1)
        assert reset_all.data["reason"] == "ahead" and "nest_id" not in reset_all.data
        post(server, "after")
        (next_message,) = frames(ahead, 1)
        assert next_message.event == "nest.message" and next_message.data["text"] == "after"
        assert next_message.id > newest
        assert [f.data.get("text") for f in frames(firehose, 1)] == ["after"]
    except queue.Empty:
        pytest.fail("the stream went quiet")
    finally:
        ahead.close()
        firehose.close()
