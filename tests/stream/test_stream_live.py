"""The event stream against a real daphne on loopback, read by a real SSE client."""

from __future__ import annotations

import random
import threading
import time

import httpx
import pytest

from tests.support.server import LiveServer
from tests.support.sse import SSEClient

pytestmark = pytest.mark.live

WRITER_ENV = {"CROWS_NEST_POST_RATE_PER_MIN": "100000", "CROWS_EXCHANGES_PER_TURN": "0"}
AUTHORS = ["owner", "Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook"]


def post(server, n: int, *, nest: str = "todo", author: str = "owner") -> list[int]:
    ids = []
    for i in range(n):
        r = server.post(f"/api/nests/{nest}/messages", {"author": author, "text": f"note {i} from {author}"})
        assert r.status_code == 201, r.text
    return ids


def last_event_id(server) -> int:
    return server.get("/api/state").json()["last_event_id"]


def stored_ids(server, query: str = "", *, since: int = 0) -> list[int]:
    client = SSEClient(f"{server.url}/api/events?since={since}{query}")
    try:
        last = server.get("/api/state").json()["last_event_id"]
        frames = []
        while not frames or frames[-1].id < last:
            frames.extend(client.drain(quiet=1.0))
            if not frames:
                break
        return [f.id for f in frames]
    finally:
        client.close()


@pytest.fixture(scope="module")
def server(sqlite_template, tmp_path_factory):
    """One server for the module: each test reads the stream after its own cursor (or from
    its own room), so the events of the tests before it are no concern, and a server start
    costs seconds of CPU."""
    started = LiveServer(sqlite_template.fresh_dir(tmp_path_factory.mktemp("stream").name), env=WRITER_ENV).start()
    yield started
    started.stop()


def test_replay_after_cursor_returns_exactly_the_stored_ids_after_it(server):
    before = last_event_id(server)
    post(server, 12)
    everything = stored_ids(server, since=before)
    assert len(everything) == 12
    cursor = everything[4]
    by_header = SSEClient(f"{server.url}/api/events", last_event_id=cursor)
    by_since = SSEClient(f"{server.url}/api/events?since={cursor}")
    try:
        assert [f.id for f in by_header.events(7)] == everything[5:]
        assert [f.id for f in by_since.events(7)] == everything[5:]
        assert by_header.drain(quiet=0.5) == []
    finally:
        by_header.close()
        by_since.close()


def test_keyed_stream_without_cursor_replays_from_its_first_event(server):
    assert server.post("/api/nests", {"name": "Launch", "crows": ["Pepper"]}).status_code == 201
    post(server, 3, nest="launch")
    post(server, 2, nest="todo")
    client = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        frames = client.events(3)
        assert [f.event for f in frames] == ["nest.message"] * 3
        assert [f.data["msg_id"] for f in frames] == ["launch-1", "launch-2", "launch-3"]
        assert all(f.data["nest_id"] == "launch" and f.data["ts"] for f in frames)
        assert client.drain(quiet=0.5) == []
    finally:
        client.close()


def test_firehose_without_cursor_starts_live(server):
    post(server, 3)
    client = SSEClient(f"{server.url}/api/events")
    try:
        assert client.drain(quiet=0.5) == []
        post(server, 1)
        (frame,) = client.events(1)
        assert frame.data["text"] == "note 0 from owner"
    finally:
        client.close()


def test_concurrent_writers_and_reconnecting_clients_miss_nothing(server):
    """4 writers post at once while 3 clients drop and reconnect at random moments with
    Last-Event-ID: each client's union equals the stored ids after its first cursor, in
    order, with no duplicate."""
    post(server, 2)
    first_cursor = last_event_id(server)
    writers_done = threading.Event()
    # Set once the writers are done: the newest stored id, which every reader must reach.
    # A reader stops there, not after a quiet spell, so a busy machine that delivers the
    # last frames late fails nothing (it waits at most QUIET_S for each frame).
    last_id: list[int] = []
    received: dict[int, list[int]] = {}
    QUIET_S = 30.0

    def writer(author: str) -> None:
        post(server, 30, author=author)

    def reader(n: int) -> None:
        rng = random.Random(n)
        got: list[int] = []
        cursor = first_cursor
        while True:
            client = SSEClient(f"{server.url}/api/events", last_event_id=cursor)
            deadline = time.monotonic() + rng.uniform(0.05, 0.6)
            try:
                while time.monotonic() < deadline or writers_done.is_set():
                    if last_id and cursor >= last_id[0]:
                        received[n] = got
                        return
                    try:
                        frame = client.frames.get(timeout=0.1 if not writers_done.is_set() else QUIET_S)
                    except Exception:
                        if writers_done.is_set():
                            received[n] = got
                            return
                        continue
                    if frame.id is not None:
                        got.append(frame.id)
                        cursor = frame.id
            finally:
                client.close()

    threads = [threading.Thread(target=writer, args=(a,)) for a in AUTHORS[:4]]
    readers = [threading.Thread(target=reader, args=(n,)) for n in range(3)]
    for t in readers + threads:
        t.start()
    for t in threads:
        t.join()
    last_id.append(last_event_id(server))
    writers_done.set()
    for t in readers:
        t.join(timeout=90)

    expected = stored_ids(server, since=first_cursor)
    assert len(expected) == 120
    for n in range(3):
        assert received[n] == expected, f"client {n} saw a gap, a duplicate or a reordering"


def test_events_written_by_another_process_reach_open_streams(server):
    """A management command (no Redis) writes events; the server's poll rings for them."""
    client = SSEClient(f"{server.url}/api/events?nest_id=todo")
    try:
        result = server.manage(
            "shell", "-c",
            "from nests.actions import post_message; post_message('todo', author='owner', text='from a shell')",
        )
        assert result.returncode == 0, result.stderr
        frame = client.wait_for(lambda f: f.data.get("text") == "from a shell", timeout=10)
        assert frame.event == "nest.message"
    finally:
        client.close()


def test_heartbeat_comment_arrives(live_server_factory):
    server = live_server_factory(env={"CROWS_HEARTBEAT_S": "0.2"}).start()
    client = SSEClient(f"{server.url}/api/events")
    try:
        deadline = time.monotonic() + 5
        comments = []
        while time.monotonic() < deadline and "ping" not in comments:
            frame = client.frames.get(timeout=5)
            comments.append(frame.comment)
        assert "ping" in comments
    finally:
        client.close()


def test_a_client_that_leaves_is_cleaned_up_at_once(server):
    clients = [SSEClient(f"{server.url}/api/events") for _ in range(5)]
    assert server.get("/api/state").json()["streams_open"] == 5
    for c in clients:
        c.close()
    # Closing the socket, not waiting for the next heartbeat, is what frees the consumer.
    with httpx.Client() as probe:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if probe.get(f"{server.url}/api/state").json()["streams_open"] == 0:
                break
            time.sleep(0.05)
    assert server.get("/api/state").json()["streams_open"] == 0


@pytest.mark.parametrize(
    "query, status, words",
    [
        ("?nest_id=nope", 404, "no such nest"),
        ("?list_id=nope", 404, "no such list"),
        ("?since=abc", 400, "cursor"),
        ("?since=-3", 400, "cursor"),
        ("?since=1.5", 400, "cursor"),
        ("?nest_id=", 400, "empty"),
        ("?nest_id=todo&list_id=x", 400, "one stream"),
        # Over 100 characters, as every identifier the API reads: 400, not "no such".
        ("?list_id=" + "L" * 101, 400, "list_id must be at most 100 characters"),
        ("?nest_id=" + "n" * 101, 400, "nest_id must be at most 100 characters"),
    ],
)
def test_bad_stream_requests_get_a_clear_4xx(server, query, status, words):
    r = server.get(f"/api/events{query}")
    assert r.status_code == status
    assert words in r.json()["message"]


def test_bad_last_event_id_header_is_a_400_and_the_server_lives_on(server):
    r = server.get("/api/events", headers={"Last-Event-ID": "yesterday"})
    assert r.status_code == 400 and "cursor" in r.json()["message"]
    assert server.get("/api/state").status_code == 200


def test_last_event_id_wins_over_a_since_left_in_the_url(server):
    """An EventSource opened with ?since= reconnects to the same URL with Last-Event-ID."""
    before = last_event_id(server)
    post(server, 5)
    ids = stored_ids(server, since=before)
    client = SSEClient(f"{server.url}/api/events?since={ids[0]}", last_event_id=ids[3])
    try:
        assert [f.id for f in client.events(1)] == [ids[4]]
        assert client.drain(quiet=0.5) == []
    finally:
        client.close()


def test_replayed_events_carry_the_same_data_as_live_ones(server):
    """Replay sends the stored payload text; it must read the same as the live frame."""
    live = SSEClient(f"{server.url}/api/events")
    try:
        text = 'crème brûlée, "quoted", back\\slash, tab\there, emoji 🐦'
        r = server.post("/api/nests/todo/messages", {"author": "owner", "text": text})
        assert r.status_code == 201
        (seen,) = live.events(1)
    finally:
        live.close()
    replay = SSEClient(f"{server.url}/api/events?since={seen.id - 1}")
    try:
        (again,) = replay.events(1)
    finally:
        replay.close()
    assert again.id == seen.id and again.event == seen.event
    assert again.data == seen.data and again.data["text"] == text


def test_replay_only_sends_the_rooms_backlog_then_says_where_it_ended_and_closes(server):
    before = last_event_id(server)
    post(server, 3)
    post(server, 2, nest="todo", author="Hugin")
    last = last_event_id(server)
    with httpx.Client(timeout=10) as client:
        body = client.get(f"{server.url}/api/events?nest_id=todo&since={before}&replay=1").text
    frames = [block for block in body.split("\n\n") if "event:" in block]
    assert [f.split("event: ")[1].split("\n")[0] for f in frames] == ["nest.message"] * 5 + ["stream.replayed"]
    assert frames[-1].endswith(f'data: {{"upto":{last}}}')
    cursor = int(frames[1].split("id: ")[1].split("\n")[0])
    with httpx.Client(timeout=10) as client:
        after = client.get(f"{server.url}/api/events?nest_id=todo&since={cursor}&replay=1").text
    assert after.count("event: nest.message") == 3


def test_replay_takes_only_one_or_zero(server):
    r = httpx.get(f"{server.url}/api/events?replay=yes", timeout=10)
    assert r.status_code == 400
    assert "replay" in r.json()["message"]
