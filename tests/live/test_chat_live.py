"""The chatroom against a real daphne on loopback, read by a real SSE client: the owner's
request is claimed and delivered by the crow it names (mock brain, embedded worker), two
racing claims leave one standing, and a nest stream replays from Last-Event-ID in order."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest

from tests.support.sse import SSEClient

pytestmark = pytest.mark.live


@pytest.fixture
def chat_server(live_server_factory, sqlite_template, jev_cache):
    def start(env: dict[str, str] | None = None):
        data_dir = sqlite_template.fresh_dir(f"chat-{uuid.uuid4().hex[:8]}")
        return live_server_factory(env=env, data_dir=data_dir).start()

    return start


def test_an_addressed_request_streams_a_claim_then_a_deliver_to_the_owner(chat_server):
    server = chat_server()
    assert server.post("/api/nests", {"name": "Launch", "crows": ["Hugin", "Munin"]}).status_code == 201
    stream = SSEClient(f"{server.url}/api/events?nest_id=launch")
    try:
        r = server.post(
            "/api/nests/launch/messages",
            {"author": "owner", "text": "@Hugin please summarise the launch notes", "kind": "request"},
        )
        assert r.status_code == 201, r.text
        request = r.json()
        assert (request["msg_id"], request["kind"], request["to"]) == ("launch-1", "request", "Hugin")
        frames = [stream.wait_for(lambda f: f.data["msg_id"] == "launch-1", timeout=30)]
        frames.append(stream.wait_for(lambda f: f.data["author"] != "owner", timeout=60))
        frames.append(stream.wait_for(lambda f: f.data["author"] != "owner", timeout=60))
        frames.extend(stream.drain(quiet=1.5))
    finally:
        stream.close()
    claim, deliver = frames[1].data, frames[2].data
    assert (claim["author"], claim["kind"], claim["refers_to"], claim["to"]) == ("Hugin", "claim", "launch-1", "owner")
    assert (deliver["author"], deliver["kind"], deliver["to"]) == ("Hugin", "deliver", "owner")
    assert deliver["refers_to"] == "launch-1"
    # Nobody else spoke, and the room's log says Hugin alone was invoked.
    assert [f.data["author"] for f in frames] == ["owner", "Hugin", "Hugin"], [f.data for f in frames]
    detail = server.get("/api/nests/launch").json()
    assert [(i["crow"], i["reason"], i["status"]) for i in detail["invocations"]] == [
        ("Hugin", "addressed", "done"), ("Hugin", "claim_deliver", "done"),
    ]
    assert detail["requests"][0]["state"] == "delivered"
    assert detail["budget"]["exchanges_left"] == detail["budget"]["exchanges_granted"] - 2


def test_two_crows_claiming_one_request_at_the_same_moment_one_stands_one_gets_409(chat_server):
    # Crows switched off, so only these two API claims race for the request.
    server = chat_server({"CROWS_EXCHANGES_PER_TURN": "0"})
    assert server.post("/api/nests", {"name": "Launch", "crows": ["Hugin", "Munin"]}).status_code == 201
    r = server.post(
        "/api/nests/launch/messages",
        {"author": "owner", "text": "Could someone please find the launch notes?", "kind": "request"},
    )
    assert r.status_code == 201 and r.json()["kind"] == "request", r.text
    # Speaking rights (docs/CHATROOM.md): regulars may claim an open request.
    seeded = server.manage("shell", "-c", "from trust.actions import seed_trust; from flock.personas import TASK_TYPES; "
        "[seed_trust(c, task_type=t, level=1) for c in ('Hugin', 'Munin') for t in TASK_TYPES]")
    assert seeded.returncode == 0, seeded.stderr
    barrier = threading.Barrier(2)
    results: dict[str, httpx.Response] = {}

    def claim(crow: str) -> None:
        barrier.wait()
        results[crow] = server.post(
            "/api/nests/launch/messages",
            {"author": crow, "text": "Taking it.", "kind": "claim", "refers_to": "launch-1"},
        )

    threads = [threading.Thread(target=claim, args=(crow,)) for crow in ("Hugin", "Munin")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    statuses = sorted(r.status_code for r in results.values())
    assert statuses == [201, 409], {c: r.text for c, r in results.items()}
    loser = next(r for r in results.values() if r.status_code == 409)
    assert set(loser.json()) == {"message"} and "already claimed" in loser.json()["message"]
    winner = next(crow for crow, r in results.items() if r.status_code == 201)
    claims = server.get("/api/nests/launch").json()["requests"][0]["claims"]
    assert [c["crow"] for c in claims] == [winner]


def test_the_nest_stream_replays_from_last_event_id_in_msg_id_order(chat_server):
    server = chat_server({"CROWS_EXCHANGES_PER_TURN": "0"})
    for i in range(6):
        assert server.post("/api/nests/todo/messages", {"author": "owner", "text": f"note {i}"}).status_code == 201
        # Another room's messages interleave in the event log, and must not leak in.
        assert server.post("/api/nests/dm-hugin/messages", {"author": "owner", "text": f"aside {i}"}).status_code == 201
    first = SSEClient(f"{server.url}/api/events?nest_id=todo")
    try:
        frames = first.events(6)
    finally:
        first.close()
    assert [f.data["msg_id"] for f in frames] == [f"todo-{n}" for n in range(1, 7)]
    resumed = SSEClient(f"{server.url}/api/events?nest_id=todo", last_event_id=frames[2].id)
    try:
        assert server.post("/api/nests/todo/messages", {"author": "owner", "text": "note 6"}).status_code == 201
        replay = resumed.events(4)
        assert resumed.drain(quiet=0.5) == []
    finally:
        resumed.close()
    assert [f.data["msg_id"] for f in replay] == ["todo-4", "todo-5", "todo-6", "todo-7"]
    assert [f.id for f in replay] == sorted(f.id for f in replay)
    assert all(f.event == "nest.message" and f.data["nest_id"] == "todo" for f in replay)
