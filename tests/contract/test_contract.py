"""The written contract, checked from outside: HTTP and the SSE stream only.

Sources: the contract as docs/API.md restates it (events, endpoints, errors, the /api/state
probe), then docs/LISTS.md and docs/CHATROOM.md for what the project settled.
Every check names the line it comes from. A discrepancy keeps a test that asserts the
documented behaviour, marked `xfail(strict=True)` with the discrepancy as its reason.

Servers (each a real daphne with its own fresh database):
- `plain`: defaults, heartbeat 1 s. Owner verdicts, validation, nests, messages, replay.
- `trusted`: `manage.py trust_seed` (every holder trusted), so every verdict is `auto`.
- `tight`: approval timeout 2 s, 2 lists / 3 nest posts a minute, cooldown 1 s, streak 1.
- `failing`: every brain call fails (CROWS_MOCK_FAIL_RATE=1).
- a function-scoped one for the 20-nest cap and a restart.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from flock.events import EVENT_TYPES
from nests.payloads import MessageRecord, NestCreated
from tests.support.payloads import assert_payload, fields
from tests.support.server import LiveServer
from tests.support.sse import Frame, SSEClient

pytestmark = pytest.mark.live

# --- the contract's vocabulary -----------------------------------------------------------

# EVENTS.md's list events, plus banter. Their fields are not restated here: each payload's
# TypedDict (the app's `payloads` module, beside the name's registration) is the one
# statement, and `assert_payload` checks a frame against it (keys and value types).
LIST_EVENTS = (
    "list.started", "item.triaged", "crow.flying", "crow.landed", "item.answered", "verdict", "trust.changed",
    "item.skipped", "requester.pranked", "list.finished", "crow.banter",
)
NEST_RECORD = fields(MessageRecord)
ALL_EVENT_NAMES = set(LIST_EVENTS) | {"nest.message"}
KINDS = {"say", "request", "claim", "deliver", "refer", "decline", "nudge", "flag"}
CROW_KINDS = {"say", "request", "claim", "deliver", "refer", "decline"}
TAGGED_BY = {"jev", "header", "disagreement", "default"}
MODES = {"solo", "split", "murder"}
TASK_TYPES = {"writing", "research", "code", "planning", "data", "chat"}
ROSTER = ["Quill", "Boss", "Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook"]
FLOCK = set(ROSTER) | {"Sentry", "Elder"}
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
LIST_ID = re.compile(r"^L[0-9a-z]{7}$")

SOLO = "Write a haiku about crows"
MURDER = "Should we use Postgres or SQLite?"
SPLIT = "Research crow intelligence; draft a summary email"
DATA = "Tally the sales spreadsheet numbers"


# --- servers -------------------------------------------------------------------------------


def _start(sqlite_template, name: str, env: dict[str, str], *, trusted: bool = False) -> LiveServer:
    server = LiveServer(sqlite_template.fresh_dir(name), env=env)
    if trusted:
        done = server.manage("trust_seed", "--holders", "all", "--task-types", "all", "--level", "2")
        assert done.returncode == 0, done.stderr
    return server.start()


@pytest.fixture(scope="module")
def plain(sqlite_template) -> Iterator[LiveServer]:
    server = _start(sqlite_template, "contract-plain", {"CROWS_HEARTBEAT_S": "1"})
    yield server
    server.stop()


@pytest.fixture(scope="module")
def trusted(sqlite_template) -> Iterator[LiveServer]:
    server = _start(sqlite_template, "contract-trusted", {}, trusted=True)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tight(sqlite_template) -> Iterator[LiveServer]:
    server = _start(sqlite_template, "contract-tight", {
        "CROWS_APPROVAL_TIMEOUT_S": "2",
        "CROWS_LIST_RATE_PER_MIN": "2",
        "CROWS_NEST_POST_RATE_PER_MIN": "3",
        "CROWS_PRANK_COOLDOWN_S": "1",
        "CROWS_TRUST_STREAK": "1",
        "CROWS_HEARTBEAT_S": "1",
    })
    yield server
    server.stop()


@pytest.fixture(scope="module")
def failing(sqlite_template) -> Iterator[LiveServer]:
    server = _start(sqlite_template, "contract-failing", {"CROWS_MOCK_FAIL_RATE": "1.0"})
    yield server
    server.stop()


# --- helpers -------------------------------------------------------------------------------


def assert_error(response: httpx.Response, status: int | tuple[int, ...]) -> dict[str, Any]:
    """A documented error: the status, and a JSON body with a non-empty `message`."""
    statuses = (status,) if isinstance(status, int) else status
    assert response.status_code in statuses, (response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"].strip(), body
    return body


def assert_4xx_message(response: httpx.Response) -> dict[str, Any]:
    """Hostile input: never a 500, always a 4xx with {"message"}."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"], body
    return body


def post_raw(server: LiveServer, path: str, raw: bytes, content_type: str = "application/json") -> httpx.Response:
    return httpx.post(server.url + path, content=raw, headers={"Content-Type": content_type}, timeout=30)


def post_list(server: LiveServer, text: str, requester: str, **extra: Any) -> str:
    response = server.post("/api/lists", {"text": text, "requester": requester, **extra})
    assert response.status_code == 202, response.text
    body = response.json()
    assert set(body) >= {"list_id"}
    assert LIST_ID.match(body["list_id"]) or body["list_id"], body
    return body["list_id"]


def is_rfc3339(value: Any) -> bool:
    if not isinstance(value, str) or not RFC3339.match(value):
        return False
    datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    return True


def check_list_frame(frame: Frame, list_id: str | None = None) -> None:
    """One list-stream frame against EVENTS.md: its fields exactly, list_id, ts, id line."""
    assert frame.id is not None, "every SSE message carries an id: line"
    assert frame.event in LIST_EVENTS, frame.event
    data = frame.data
    assert isinstance(data, dict)
    assert_payload(frame.event, data)
    assert "list_id" in data, frame.event
    if frame.event == "crow.landed":
        assert ("error" in data) == (data["ok"] is False), data  # EVENTS.md: `error?`, when not ok
    if list_id is not None:
        assert data["list_id"] == list_id
    assert is_rfc3339(data["ts"]), data["ts"]
    if "item_id" in data and list_id is not None:
        assert re.fullmatch(re.escape(list_id) + r"-[1-9]\d*", data["item_id"]), data["item_id"]
    kind = frame.event
    if kind == "list.started":
        assert isinstance(data["requester"], str) and isinstance(data["nest_id"], str)
        assert [set(item) for item in data["items"]] == [{"item_id", "text"}] * len(data["items"])
        assert [item["item_id"] for item in data["items"]] == [
            f"{data['list_id']}-{n}" for n in range(1, len(data["items"]) + 1)
        ]
    elif kind == "item.triaged":
        assert data["mode"] in MODES and data["task_type"] in TASK_TYPES
        assert isinstance(data["subtasks"], list) and all(isinstance(s, str) for s in data["subtasks"])
        assert isinstance(data["reason"], str) and type(data["needs_approval"]) is bool
        if data["mode"] == "split":
            assert 2 <= len(data["subtasks"]) <= 4, data["subtasks"]
    elif kind == "crow.flying":
        assert data["crow"] in FLOCK and type(data["borrowed"]) is bool
    elif kind == "crow.landed":
        assert data["crow"] in FLOCK and type(data["ok"]) is bool
        assert type(data["tokens"]) is int and data["tokens"] >= 0
        if not data["ok"]:
            assert isinstance(data["error"], str) and data["error"]
    elif kind == "item.answered":
        assert isinstance(data["answer"], str) and data["answer"]
        assert isinstance(data["crows"], list) and data["crows"] and set(data["crows"]) <= FLOCK
        assert type(data["needs_approval"]) is bool
    elif kind == "verdict":
        assert data["target"] in {"triage", "output"}
        assert data["verdict"] in {"approved", "rejected", "auto", "timeout"}
    elif kind == "trust.changed":
        assert isinstance(data["holder"], str) and data["task_type"] in TASK_TYPES
        assert data["from"] in (0, 1, 2) and data["to"] in (0, 1, 2) and abs(data["from"] - data["to"]) == 1
    elif kind == "item.skipped":
        assert isinstance(data["reason"], str) and data["reason"]
    elif kind == "requester.pranked":
        assert isinstance(data["message"], str) and data["message"]
        assert isinstance(data["cooldown_s"], int) and data["cooldown_s"] > 0
    elif kind == "list.finished":
        assert type(data["tokens_used"]) is int and type(data["token_budget"]) is int
    elif kind == "crow.banter":
        assert data["crow"] in FLOCK and isinstance(data["to"], str) and data["to"]
        assert isinstance(data["text"], str) and data["text"].strip() and "\n" not in data["text"]


def check_nest_frame(frame: Frame, nest_id: str) -> None:
    assert frame.id is not None
    assert frame.event == "nest.message"
    data = frame.data
    assert_payload(frame.event, data)
    assert set(data) == NEST_RECORD | {"nest_id", "ts"}, sorted(set(data) ^ (NEST_RECORD | {"nest_id", "ts"}))
    assert data["nest_id"] == nest_id and is_rfc3339(data["ts"])
    check_record(data, nest_id)


def check_record(record: dict[str, Any], nest_id: str) -> None:
    assert re.fullmatch(re.escape(nest_id) + r"-[1-9]\d*", record["msg_id"]), record["msg_id"]
    assert record["kind"] in KINDS and record["tagged_by"] in TAGGED_BY
    for field in ("author", "text", "to", "refers_to"):
        assert isinstance(record[field], str), field
    if record["tagged_by"] == "default":
        assert record["kind"] == "say"


Decide = Callable[[Frame], bool | None]


def run_list(server: LiveServer, list_id: str, decide: Decide | None = lambda f: True,
             timeout: float = 40, last_event_id: int | None = None) -> list[Frame]:
    """Reads the list's stream until list.finished, answering each approval with decide(frame)
    (True/False; None leaves it waiting)."""
    client = SSEClient(f"{server.url}/api/events?list_id={list_id}", last_event_id=last_event_id)
    assert client.status == 200, client.body_on_error
    frames: list[Frame] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            frame = client.wait_for(lambda f: True, timeout=max(0.1, deadline - time.monotonic()))
            frames.append(frame)
            data = frame.data
            if decide and frame.event in ("item.triaged", "item.answered") and data["needs_approval"]:
                answer = decide(frame)
                if answer is not None:
                    target = "triage" if frame.event == "item.triaged" else "output"
                    r = server.post("/api/verdicts", {"item_id": data["item_id"], "target": target, "approve": answer})
                    assert r.status_code == 204, r.text
            if frame.event == "list.finished":
                return frames
    finally:
        client.close()


def replay(server: LiveServer, query: str, *, last_event_id: int | None = None, quiet: float = 0.8) -> list[Frame]:
    client = SSEClient(f"{server.url}/api/events{query}", last_event_id=last_event_id)
    try:
        assert client.status == 200, client.body_on_error
        return client.drain(quiet)
    finally:
        client.close()


def by_item(frames: list[Frame]) -> dict[str, list[Frame]]:
    items: dict[str, list[Frame]] = defaultdict(list)
    for frame in frames:
        if "item_id" in frame.data:
            items[frame.data["item_id"]].append(frame)
    return items


def check_item_order(item_id: str, events: list[Frame]) -> None:
    """docs/LISTS.md: within one item the order always holds: Sentry flight, item.triaged, triage
    verdict, workers, Elder, item.answered, output verdict; item.skipped ends the item."""
    def ids(pred: Callable[[Frame], bool]) -> list[int]:
        return [f.id for f in events if pred(f)]

    work = [f for f in events if f.event != "crow.banter"]
    sentry = ids(lambda f: f.event in ("crow.flying", "crow.landed") and f.data["crow"] == "Sentry")
    triaged = ids(lambda f: f.event == "item.triaged")
    tri_verdict = ids(lambda f: f.event == "verdict" and f.data["target"] == "triage")
    workers = ids(lambda f: f.event in ("crow.flying", "crow.landed") and f.data["crow"] not in ("Sentry", "Elder"))
    elder = ids(lambda f: f.event in ("crow.flying", "crow.landed") and f.data["crow"] == "Elder")
    answered = ids(lambda f: f.event == "item.answered")
    out_verdict = ids(lambda f: f.event == "verdict" and f.data["target"] == "output")
    chain = [sentry, triaged, tri_verdict, workers, elder, answered, out_verdict]
    seen: list[int] = []
    for step in chain:
        if step and seen:
            assert min(step) > max(seen), (item_id, [(f.id, f.event) for f in work])
        seen += step
    skipped = ids(lambda f: f.event == "item.skipped")
    if skipped:
        assert skipped[0] == work[-1].id, (item_id, [(f.id, f.event) for f in work])


def check_whole_list(frames: list[Frame], list_id: str) -> None:
    """Invariants of one finished list's stream (EVENTS.md 'Settled details', docs/LISTS.md)."""
    for frame in frames:
        check_list_frame(frame, list_id)
    ids = [f.id for f in frames]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), "ids increase, no duplicates"
    assert frames[0].event == "list.started"
    assert frames[-1].event == "list.finished"
    assert [f.event for f in frames].count("list.finished") == 1
    started = frames[0].data
    item_ids = [item["item_id"] for item in started["items"]]
    items = by_item(frames)
    assert set(items) <= set(item_ids)
    banter = [f for f in frames if f.event == "crow.banter"]
    assert len(banter) <= 2, "at most 2 crow.banter per list"
    for item_id in item_ids:
        events = items[item_id]
        names = [f.event for f in events if f.event != "crow.banter"]
        triaged = [f for f in events if f.event == "item.triaged"]
        answered = [f for f in events if f.event == "item.answered"]
        verdicts = Counter(f.data["target"] for f in events if f.event == "verdict")
        # Exactly one verdict per target the item reached.
        assert verdicts["triage"] == len(triaged) <= 1, (item_id, names)
        assert verdicts["output"] == len(answered) <= 1, (item_id, names)
        ended = [n for n in names if n in ("item.skipped",)] + (
            ["answered"] if answered and any(
                f.event == "verdict" and f.data["target"] == "output" and f.data["verdict"] in ("approved", "auto")
                for f in events) else [])
        assert len(ended) == 1, (item_id, names)
        for tri in triaged:
            verdict = next(f for f in events if f.event == "verdict" and f.data["target"] == "triage")
            assert verdict.id > tri.id
            assert (verdict.data["verdict"] == "auto") == (not tri.data["needs_approval"])
        for ans in answered:
            verdict = next(f for f in events if f.event == "verdict" and f.data["target"] == "output")
            assert verdict.id > ans.id
            assert (verdict.data["verdict"] == "auto") == (not ans.data["needs_approval"])
        # crow.flying/landed pair up per crow.
        flying = Counter(f.data["crow"] for f in events if f.event == "crow.flying")
        landed = Counter(f.data["crow"] for f in events if f.event == "crow.landed")
        assert flying == landed, (item_id, flying, landed)
        if triaged:
            assert "Sentry" in flying, "the Sentry's flight fires crow.flying"
        check_item_order(item_id, events)
    # DECISIONS budgets: at most 3 worker crows per item; CROWS_MAX_IN_FLIGHT=6 in the air (Sentry
    # and Elder included) in the whole flock, so on this list's stream too.
    for item_id, events in items.items():
        workers = {f.data["crow"] for f in events if f.event == "crow.flying" and f.data["crow"] not in ("Sentry", "Elder")}
        assert len(workers) <= 3, (item_id, workers)
    in_air = peak = 0
    for frame in frames:
        in_air += {"crow.flying": 1, "crow.landed": -1}.get(frame.event, 0)
        peak = max(peak, in_air)
    assert peak <= 6, peak
    finished = frames[-1].data
    landed_tokens = sum(f.data["tokens"] for f in frames if f.event == "crow.landed")
    assert finished["tokens_used"] >= landed_tokens
    if not banter:
        assert finished["tokens_used"] == landed_tokens
    assert finished["tokens_used"] <= finished["token_budget"]


# =========================================================================================
# GET endpoints: state, crows, trust, nests
# =========================================================================================


def test_state_protocol_and_capabilities(plain: LiveServer) -> None:
    # DECISIONS "The event stream": {"protocol": "crows/1", "capabilities": [every SSE event name]}
    body = plain.get("/api/state").json()
    assert body["protocol"] == "crows/1"
    assert isinstance(body["capabilities"], list)
    assert ALL_EVENT_NAMES <= set(body["capabilities"]), ALL_EVENT_NAMES - set(body["capabilities"])
    # Every name the build emits has its payload's TypedDict, and the server lists exactly those.
    registered = {name for name, e in EVENT_TYPES.items() if e.payload.__module__.endswith(".payloads")}
    assert set(body["capabilities"]) == registered, sorted(set(body["capabilities"]) ^ registered)


def test_crows_lists_all_ten_with_persona_fields(plain: LiveServer) -> None:
    # EVENTS "Personas": GET /api/crows -> [{name, epithet, strength, backstory}] for all ten crows
    response = plain.get("/api/crows")
    assert response.status_code == 200
    crows = response.json()
    assert isinstance(crows, list)
    assert {c["name"] for c in crows} == FLOCK and len(crows) == 10
    for crow in crows:
        for field in ("name", "epithet", "strength", "backstory"):
            assert isinstance(crow[field], str) and crow[field].strip(), (crow["name"], field)


def test_trust_ledger_shape(plain: LiveServer) -> None:
    # EVENTS: GET /api/trust -> ledger JSON; LISTS.md "GET /api/trust" shape
    body = plain.get("/api/trust").json()
    assert body["levels"] == {"0": "stranger", "1": "regular", "2": "trusted"}
    assert body["streak_to_promote"] == 3
    assert set(body["task_types"]) == TASK_TYPES
    holders = body["holders"]
    assert {"flock"} | FLOCK <= set(holders)
    for name, per_type in holders.items():
        assert set(per_type) == TASK_TYPES, name
        for entry in per_type.values():
            assert set(entry) >= {"level", "level_name", "streak", "approvals", "rejections"}
            assert entry["level"] in (0, 1, 2)
            assert entry["level_name"] == body["levels"][str(entry["level"])]


def test_nests_listing_shape_and_roster(plain: LiveServer) -> None:
    # EVENTS "Nests": {"roster": [...8 crows, not Sentry or Elder], "nests": [{nest_id, name, crows}]}
    body = plain.get("/api/nests").json()
    assert sorted(body["roster"]) == sorted(ROSTER) and len(body["roster"]) == 8
    assert "Sentry" not in body["roster"] and "Elder" not in body["roster"]
    todo = [n for n in body["nests"] if n["nest_id"] == "todo"]
    assert todo and todo[0]["crows"] == []  # "The default nest is todo, with an empty core"
    for nest in body["nests"]:
        assert set(nest) >= {"nest_id", "name", "crows"}


@pytest.mark.parametrize("path", [
    "/api/state?x=1&y=%00", "/api/crows?limit=-1&x[]=1", "/api/trust?holder=%ff", "/api/nests?junk={}",
])
def test_get_endpoints_ignore_junk_query(plain: LiveServer, path: str) -> None:
    assert plain.get(path).status_code == 200


# =========================================================================================
# POST /api/nests
# =========================================================================================


def test_create_nest_201_and_listed(plain: LiveServer) -> None:
    response = plain.post("/api/nests", {"name": "  Launch Copy  ", "crows": ["Pepper", "Inky"]})
    assert response.status_code == 201, response.text
    nest = response.json()
    assert nest["nest_id"] == "launch-copy" and nest["name"] == "Launch Copy" and nest["crows"] == ["Pepper", "Inky"]
    listed = {n["nest_id"]: n for n in plain.get("/api/nests").json()["nests"]}
    assert listed["launch-copy"]["crows"] == ["Pepper", "Inky"]
    # docs/CHATROOM.md: nest.created on the firehose
    created = [f for f in replay(plain, "?since=0", quiet=0.5) if f.event == "nest.created"
               and f.data.get("nest_id") == "launch-copy"]
    assert len(created) == 1
    assert set(created[0].data) == fields(NestCreated) | {"ts"}
    assert created[0].data["created_by"] == "owner" and is_rfc3339(created[0].data["ts"])
    # 409 on a clash: same slug, any spelling
    assert_error(plain.post("/api/nests", {"name": "launch COPY!", "crows": ["Rook"]}), 409)
    assert_error(plain.post("/api/nests", {"name": "todo", "crows": ["Rook"]}), 409)


@pytest.mark.parametrize("body", [
    {"name": "", "crows": ["Rook"]},
    {"name": "   ", "crows": ["Rook"]},
    {"name": "x" * 41, "crows": ["Rook"]},
    {"name": "Empty", "crows": []},
    {"name": "Missing"},
    {"name": "Dupes", "crows": ["Rook", "Rook"]},
    {"name": "Sentry core", "crows": ["Sentry"]},
    {"name": "Elder core", "crows": ["Elder"]},
    {"name": "Unknown", "crows": ["Nobody"]},
    {"name": "Nine", "crows": ROSTER + ["Rook"]},
    {"name": 5, "crows": ["Rook"]},
    {"name": None, "crows": ["Rook"]},
    {"name": ["a"], "crows": ["Rook"]},
    {"name": {"a": 1}, "crows": ["Rook"]},
    {"name": "Strcrows", "crows": "Rook"},
    {"name": "Numcrows", "crows": [5]},
    {"name": "Nullcrows", "crows": [None]},
    {"name": "Objcrows", "crows": {"Rook": 1}},
    {"crows": ["Rook"]},
    {},
])
def test_create_nest_400s(plain: LiveServer, body: dict) -> None:
    # EVENTS guardrails: name 1–40 after trimming; crows roster names, no dups, 1–8
    assert_error(plain.post("/api/nests", body), 400)


def test_create_nest_edges_accepted(plain: LiveServer) -> None:
    ok40 = plain.post("/api/nests", {"name": "  " + "n" * 40 + "  ", "crows": ["Rook"]})
    assert ok40.status_code == 201, ok40.text
    assert re.fullmatch(r"[a-z0-9-]+", ok40.json()["nest_id"])
    eight = plain.post("/api/nests", {"name": "All Eight", "crows": ROSTER})
    assert eight.status_code == 201 and eight.json()["crows"] == ROSTER
    accented = plain.post("/api/nests", {"name": "Café Crème", "crows": ["Soot"]})
    assert accented.status_code == 201 and re.fullmatch(r"[a-z0-9-]+", accented.json()["nest_id"])


def test_nest_cap_persistence_and_timeout_across_restart(live_server_factory) -> None:
    # EVENTS: at most 20 nests; nests persist. DECISIONS: timeouts fire even across a restart.
    server = live_server_factory(env={"CROWS_APPROVAL_TIMEOUT_S": "3"}).start()
    count = len(server.get("/api/nests").json()["nests"])
    made = []
    for n in range(40):
        response = server.post("/api/nests", {"name": f"Cap {n}", "crows": ["Rook"]})
        if response.status_code != 201:
            assert_error(response, 400)
            break
        made.append(response.json()["nest_id"])
    total = server.get("/api/nests").json()["nests"]
    assert len(total) == 20, len(total)
    assert count + len(made) == 20
    # Direct chats don't count toward the cap.
    assert server.post("/api/nests/dm-rook/messages", {"author": "owner", "text": "hello"}).status_code == 201
    list_id = post_list(server, SOLO, "restarter")
    client = SSEClient(f"{server.url}/api/events?list_id={list_id}")
    triaged = client.wait_for(lambda f: f.event == "item.triaged")
    asked = time.monotonic()
    client.close()
    assert triaged.data["needs_approval"] is True
    server.stop()
    assert time.monotonic() - asked < 3, "the deadline must fall while the server is down"
    time.sleep(max(0.0, 3.3 - (time.monotonic() - asked)))
    server.start()
    assert [n["nest_id"] for n in server.get("/api/nests").json()["nests"]] == [n["nest_id"] for n in total]
    frames = run_list(server, list_id, decide=None, timeout=20, last_event_id=triaged.id)
    names = [(f.event, f.data.get("verdict") or f.data.get("reason")) for f in frames]
    assert ("verdict", "timeout") in names and ("item.skipped", "triage timeout") in names, names


# =========================================================================================
# POST /api/lists
# =========================================================================================


def test_list_202_bullets_and_item_ids(plain: LiveServer) -> None:
    text = "- dash\n* star\n+ plus\n1. dot\n2) paren\n[ ] open\n[x] done\n- [ ] both\n\n   \n1.5 kg flour\n-5 degrees"
    list_id = post_list(plain, text, "bullets")
    assert LIST_ID.match(list_id), list_id
    frames = replay(plain, f"?list_id={list_id}", quiet=0.5)
    started = frames[0]
    check_list_frame(started, list_id)
    assert started.event == "list.started"
    assert [i["text"] for i in started.data["items"]] == [
        "dash", "star", "plus", "dot", "paren", "open", "done", "both", "1.5 kg flour", "-5 degrees"]
    assert [i["item_id"] for i in started.data["items"]] == [f"{list_id}-{n}" for n in range(1, 11)]
    assert started.data["requester"] == "bullets" and started.data["nest_id"] == "todo"


def test_list_caps_20_items_and_2000_chars(plain: LiveServer) -> None:
    twenty = "\n".join(f"item {n}" for n in range(20))
    post_list(plain, twenty + "\n\n\n", "caps")
    assert_error(plain.post("/api/lists", {"text": twenty + "\nitem 20", "requester": "caps"}), 400)
    post_list(plain, "  " + "x" * 2000 + "  ", "caps2")
    post_list(plain, "- " + "y" * 2000, "caps2")
    post_list(plain, "🐦" * 2000, "caps3")
    body = assert_error(plain.post("/api/lists", {"text": "ok\n" + "z" * 2001, "requester": "caps3"}), 400)
    assert "2" in body["message"]  # names the problem (item 2)


@pytest.mark.parametrize("body", [
    {"text": "", "requester": "x"},
    {"text": "  \n \n\t", "requester": "x"},
    {"text": "- \n* \n1. ", "requester": "x"},
    {"text": None, "requester": "x"},
    {"text": 5, "requester": "x"},
    {"text": 1.5, "requester": "x"},
    {"text": True, "requester": "x"},
    {"text": ["a"], "requester": "x"},
    {"text": {"a": 1}, "requester": "x"},
    {"requester": "x"},
    {"text": "a"},
    {"text": "a", "requester": ""},
    {"text": "a", "requester": "   "},
    {"text": "a", "requester": None},
    {"text": "a", "requester": 7},
    {"text": "a", "requester": ["x"]},
    {"text": "a", "requester": {"id": "x"}},
    {"text": "a", "requester": "r" * 81},  # docs/LISTS.md: requester at most 80 characters
    {"text": "a", "requester": "x", "nest_id": 5},
    {"text": "a", "requester": "x", "nest_id": ["todo"]},
    {},
])
def test_list_400s(plain: LiveServer, body: dict) -> None:
    assert_error(plain.post("/api/lists", body), 400)


@pytest.mark.parametrize("nest_id", ["nope", "NOPE", "../todo", "dm-quill", "%00", "x" * 500])
def test_list_unknown_nest_404(plain: LiveServer, nest_id: str) -> None:
    assert_error(plain.post("/api/lists", {"text": "a", "requester": "x", "nest_id": nest_id}), 404)


def test_list_into_nest_carries_nest_id(plain: LiveServer) -> None:
    plain.post("/api/nests", {"name": "Into Nest", "crows": ["Hugin"]})
    list_id = post_list(plain, "Say hi", "nester", nest_id="into-nest")
    started = replay(plain, f"?list_id={list_id}", quiet=0.3)[0]
    assert started.event == "list.started" and started.data["nest_id"] == "into-nest"
    for default in (None, ""):
        list_id = post_list(plain, "Say hi", "nester", nest_id=default)
        assert replay(plain, f"?list_id={list_id}", quiet=0.3)[0].data["nest_id"] == "todo"


# =========================================================================================
# Hostile input: never a 500, always a 4xx with {"message"}
# =========================================================================================

SURROGATE = "the JSON string '\\ud800' (a lone surrogate, valid JSON) is stored as-is and the database encode crashes: 500"
ENDPOINTS = ["/api/lists", "/api/verdicts", "/api/nests", "/api/nests/todo/messages", "/api/nests/nope/messages"]
RAW_BODIES = [
    b"{not json", b"{", b"}", b"[]", b"null", b"5", b'"text"', b"true", b"\xff\xfe\x00",
    b'{"text": "a", "requester": ', b"[" * 50000 + b"]" * 50000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b"\x00\x00\x00", "{\"text\": \"\u00e9\"}".encode("latin-1"),
]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("raw", RAW_BODIES, ids=lambda r: repr(r[:16]))
def test_hostile_raw_bodies(plain: LiveServer, path: str, raw: bytes) -> None:
    assert_4xx_message(post_raw(plain, path, raw))


@pytest.mark.parametrize("path", ENDPOINTS)
def test_hostile_huge_body(plain: LiveServer, path: str) -> None:
    raw = json.dumps({"text": "a" * 400_000, "requester": "huge", "author": "owner", "name": "n" * 400_000}).encode()
    assert_4xx_message(post_raw(plain, path, raw))


@pytest.mark.parametrize("path", ENDPOINTS)
def test_empty_body_message_names_the_problem(plain: LiveServer, path: str) -> None:
    body = assert_4xx_message(post_raw(plain, path, b""))
    assert body["message"] != "is required" and len(body["message"].split()) > 2, body


@pytest.mark.parametrize("path,raw", [
    ("/api/lists", b'{"text": "\\ud800", "requester": "x"}'),
    ("/api/lists", b'{"text": "a", "requester": "\\udfff"}'),
    ("/api/lists", b'{"text": "a", "requester": "x", "nest_id": "\\ud800"}'),
    ("/api/verdicts", b'{"item_id": "\\ud800", "target": "triage", "approve": true}'),
    ("/api/nests/todo/messages", b'{"author": "Soot", "text": "\\ud800"}'),
    ("/api/nests/todo/messages", b'{"author": "\\ud800", "text": "hi"}'),
    ("/api/nests/todo/messages", b'{"author": "Soot", "text": "hi", "refers_to": "\\ud800"}'),
    ("/api/nests", b'{"name": "\\ud800", "crows": ["Rook"]}'),
    ("/api/nests", b'{"name": "ok", "crows": ["\\ud800"]}'),
    ("/api/verdicts", b'{"item_id": "x-1", "target": "\\ud800", "approve": true}'),
    ("/api/nests/todo/messages", b'{"author": "Soot", "text": "hi", "to": "\\ud800"}'),
    ("/api/nests/todo/messages", b'{"author": "Soot", "text": "hi", "kind": "\\ud800"}'),
])
def test_hostile_lone_surrogates(plain: LiveServer, path: str, raw: bytes) -> None:
    assert_4xx_message(post_raw(plain, path, raw))


@pytest.mark.parametrize("path,raw", [
    ("/api/lists", b'{"text": "a\\u0000b", "requester": "x"}'),
    ("/api/nests/todo/messages", b'{"author": "owner", "text": "nul \\u0000 here"}'),
])
def test_hostile_nul_characters(plain: LiveServer, path: str, raw: bytes) -> None:
    # PostgreSQL refuses NUL in text; the API refuses it everywhere with a 400.
    assert_4xx_message(post_raw(plain, path, raw))


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/lists"), ("PUT", "/api/lists"), ("DELETE", "/api/lists"), ("GET", "/api/verdicts"),
    ("PATCH", "/api/nests"), ("POST", "/api/crows"), ("POST", "/api/state"), ("PUT", "/api/trust"),
])
def test_wrong_method_is_4xx_with_message(plain: LiveServer, method: str, path: str) -> None:
    assert_4xx_message(httpx.request(method, plain.url + path, timeout=10))


@pytest.mark.parametrize("path", ["/api/nope", "/api/nests/a%2Fb/messages", "/api/nests/todo/messages/1",
                                  "/api/verdicts/x"])
def test_post_unknown_api_path_is_json_404(plain: LiveServer, path: str) -> None:
    assert_error(plain.post(path, {"author": "owner", "text": "hi"}), 404)


@pytest.mark.parametrize("path", ENDPOINTS)
def test_multipart_without_boundary_is_4xx_with_message(plain: LiveServer, path: str) -> None:
    assert_4xx_message(post_raw(plain, path, b"garbage", "multipart/form-data"))


@pytest.mark.parametrize("content_type,raw", [
    ("application/x-www-form-urlencoded", b"text=a&requester=b&author=owner"),
    ("multipart/form-data; boundary=xx", b'--xx\r\nContent-Disposition: form-data; name="text"\r\n\r\na\r\n--xx--\r\n'),
    ("application/json; charset=latin-1", b'{"text": "\xe9", "requester": "x"}'),
    ("text/plain", b"just words"),
])
@pytest.mark.parametrize("path", ENDPOINTS)
def test_hostile_content_types(plain: LiveServer, path: str, content_type: str, raw: bytes) -> None:
    assert_4xx_message(post_raw(plain, path, raw, content_type))


def test_list_body_over_256_kib_is_413(plain: LiveServer) -> None:
    # docs/LISTS.md: 413 {"message"} for a body over CROWS_MAX_BODY_BYTES (256 KiB)
    raw = json.dumps({"text": "a" * 300_000, "requester": "big"}).encode()
    assert_error(post_raw(plain, "/api/lists", raw), 413)


def test_get_unknown_api_path_is_json_404(plain: LiveServer) -> None:
    assert_error(plain.get("/api/nope"), 404)


@pytest.mark.parametrize("query,headers", [
    ("?list_id=", {}), ("?nest_id=", {}), ("?since=abc", {}), ("?since=-5", {}), ("?since=1e3", {}),
    ("?since=0x10", {}), ("", {"Last-Event-ID": "junk"}), ("", {"Last-Event-ID": "-1"}),
    ("?list_id=Lnope123", {}), ("?nest_id=nope", {}), ("?list_id=%00", {}), ("?list_id=" + "x" * 3000, {}),
    ("?list_id=todo&nest_id=todo", {}), ("?nest_id=%ED%A0%80", {}),
])
def test_event_stream_bad_queries(plain: LiveServer, query: str, headers: dict) -> None:
    response = httpx.get(plain.url + "/api/events" + query, headers=headers, timeout=5)
    assert_4xx_message(response)


@pytest.mark.parametrize("path", [
    "/api/nests/todo/messages?limit=abc", "/api/nests/todo/messages?limit=0", "/api/nests/todo/messages?limit=1.5",
    "/api/nests/todo/messages?before=zz", "/api/nests/todo/messages?before=-1",
    "/api/nests/todo/messages?before=999999999999999999999999", "/api/nests/nope", "/api/nests/%00",
    "/api/lists/Lnope123", "/api/lists/%ff%fe", "/api/nests/nope/messages",
])
def test_get_hostile_paths(plain: LiveServer, path: str) -> None:
    assert_4xx_message(plain.get(path))


# =========================================================================================
# POST /api/verdicts
# =========================================================================================


def test_verdict_status_codes(plain: LiveServer) -> None:
    list_id = post_list(plain, SOLO, "verdicts")
    item_id = f"{list_id}-1"
    client = SSEClient(f"{plain.url}/api/events?list_id={list_id}")
    client.wait_for(lambda f: f.event == "item.triaged")
    V = "/api/verdicts"
    # 404: nothing waiting (never-reached target, unknown items)
    assert_error(plain.post(V, {"item_id": item_id, "target": "output", "approve": True}), 404)
    for unknown in ("Lnope123-1", f"{list_id}-99", "garbage", "🐦"):
        assert_error(plain.post(V, {"item_id": unknown, "target": "triage", "approve": True}), 404)
    # 400: bad body; approve required, never read as a no
    for body in (
        {"item_id": item_id, "target": "triage"},
        {"item_id": item_id, "target": "triage", "approve": None},
        {"item_id": item_id, "target": "triage", "approve": "true"},
        {"item_id": item_id, "target": "triage", "approve": "false"},
        {"item_id": item_id, "target": "triage", "approve": 1},
        {"item_id": item_id, "target": "triage", "approve": 0},
        {"item_id": item_id, "target": "triage", "approve": [True]},
        {"item_id": item_id, "target": "triage", "approve": {}},
        {"item_id": item_id, "target": "bogus", "approve": True},
        {"item_id": item_id, "target": "Triage", "approve": True},
        {"item_id": item_id, "target": None, "approve": True},
        {"item_id": item_id, "target": 1, "approve": True},
        {"item_id": item_id, "approve": True},
        {"target": "triage", "approve": True},
        {"item_id": "", "target": "triage", "approve": True},
        {"item_id": 5, "target": "triage", "approve": True},
        {"item_id": None, "target": "triage", "approve": True},
        {"item_id": [item_id], "target": "triage", "approve": True},
    ):
        assert_error(plain.post(V, body), 400)
    # Nothing above decided anything: the triage still waits, one 204, then 404 for a second answer.
    assert plain.post(V, {"item_id": item_id, "target": "triage", "approve": True}).status_code == 204
    assert_error(plain.post(V, {"item_id": item_id, "target": "triage", "approve": True}), 404)
    assert_error(plain.post(V, {"item_id": item_id, "target": "triage", "approve": False}), 404)
    answered = client.wait_for(lambda f: f.event == "item.answered")
    assert answered.data["needs_approval"] is True
    assert plain.post(V, {"item_id": item_id, "target": "output", "approve": True}).status_code == 204
    assert_error(plain.post(V, {"item_id": item_id, "target": "output", "approve": False}), 404)
    client.wait_for(lambda f: f.event == "list.finished")
    client.close()
    frames = replay(plain, f"?list_id={list_id}", quiet=0.5)
    check_whole_list(frames, list_id)
    verdicts = [(f.data["target"], f.data["verdict"]) for f in frames if f.event == "verdict"]
    assert verdicts == [("triage", "approved"), ("output", "approved")]


def test_racing_verdicts_one_wins(plain: LiveServer) -> None:
    list_id = post_list(plain, "Write a limerick about ravens", "racer")
    client = SSEClient(f"{plain.url}/api/events?list_id={list_id}")
    client.wait_for(lambda f: f.event == "item.triaged")
    statuses: list[int] = []
    barrier = threading.Barrier(4)

    def answer(approve: bool) -> None:
        barrier.wait()
        statuses.append(plain.post("/api/verdicts", {"item_id": f"{list_id}-1", "target": "triage",
                                                      "approve": approve}).status_code)

    threads = [threading.Thread(target=answer, args=(n % 2 == 0,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [204, 404, 404, 404], statuses
    frames = client.drain(1.0)
    client.close()
    assert len([f for f in frames if f.event == "verdict" and f.data["target"] == "triage"]) == 1


def test_rejections_skip_items(plain: LiveServer) -> None:
    # DECISIONS: a rejected output skips the item (reason 'output rejected'); rejected triage too.
    list_id = post_list(plain, "Write a sonnet about rooks\nWrite a jingle about jackdaws", "rejecter")

    def decide(frame: Frame) -> bool:
        if frame.event == "item.triaged":
            return frame.data["item_id"].endswith("-2")  # reject item 1's triage
        return False  # reject item 2's output

    frames = run_list(plain, list_id, decide)
    check_whole_list(frames, list_id)
    skipped = {f.data["item_id"]: f.data["reason"] for f in frames if f.event == "item.skipped"}
    assert skipped == {f"{list_id}-1": "triage rejected", f"{list_id}-2": "output rejected"}
    verdicts = {(f.data["item_id"][-1], f.data["target"]): f.data["verdict"] for f in frames if f.event == "verdict"}
    assert verdicts == {("1", "triage"): "rejected", ("2", "triage"): "approved", ("2", "output"): "rejected"}
    assert not [f for f in frames if f.event == "crow.flying" and f.data["item_id"].endswith("-1")
                and f.data["crow"] != "Sentry"]


def test_pending_approvals_in_state(plain: LiveServer) -> None:
    list_id = post_list(plain, "Write a short note to the flock", "stater")
    client = SSEClient(f"{plain.url}/api/events?list_id={list_id}")
    client.wait_for(lambda f: f.event == "item.triaged")
    client.close()
    state = plain.get("/api/state").json()
    pending = [p for p in state["pending_approvals"] if p["item_id"] == f"{list_id}-1"]
    assert pending and pending[0]["target"] == "triage" and pending[0]["list_id"] == list_id
    assert any(o["list_id"] == list_id for o in state["open_lists"])
    # EVENTS: pending approvals time out after 10 minutes (CROWS_APPROVAL_TIMEOUT_S default 600)
    deadline = datetime.fromisoformat(pending[0]["deadline"].replace("Z", "+00:00"))
    left = (deadline - datetime.now(deadline.tzinfo)).total_seconds()
    assert 590 <= left <= 601, left
    plain.post("/api/verdicts", {"item_id": f"{list_id}-1", "target": "triage", "approve": False})


# =========================================================================================
# The list stream: every event and field, replay, heartbeat
# =========================================================================================


def test_owner_flow_every_field(plain: LiveServer) -> None:
    list_id = post_list(plain, f"{SOLO}\n{MURDER}\n{SPLIT}", "owner-flow")
    frames = run_list(plain, list_id)
    check_whole_list(frames, list_id)
    names = {f.event for f in frames}
    assert {"list.started", "item.triaged", "crow.flying", "crow.landed", "item.answered", "verdict",
            "list.finished"} <= names
    triaged = {f.data["item_id"]: f.data for f in frames if f.event == "item.triaged"}
    assert all(t["needs_approval"] for t in triaged.values())  # untrusted flock asks the owner
    assert {t["mode"] for t in triaged.values()} == MODES
    flying = [f.data for f in frames if f.event == "crow.flying"]
    assert all(f["borrowed"] is False for f in flying), "todo nest: nothing is ever borrowed"
    assert {"Sentry", "Elder"} <= {f["crow"] for f in flying}, "crow.flying fires for the Sentry and Elder"
    landed = {f.data["crow"] for f in frames if f.event == "crow.landed"}
    assert {"Sentry", "Elder"} <= landed
    for item_id, data in triaged.items():
        workers = [f.data["crow"] for f in frames if f.event == "crow.flying" and f.data["item_id"] == item_id
                   and f.data["crow"] not in ("Sentry", "Elder")]
        answered = next(f.data for f in frames if f.event == "item.answered" and f.data["item_id"] == item_id)
        assert len(set(workers)) == len(workers) and 1 <= len(workers) <= 3
        if data["mode"] == "solo":
            assert len(workers) == 1 and answered["crows"] == workers
        else:
            assert len(workers) >= 2 and answered["crows"][-1] == "Elder"
            assert set(answered["crows"][:-1]) == set(workers)
    finished = frames[-1].data
    assert finished["token_budget"] == 20000


def test_keyed_stream_replays_from_start_and_resumes(plain: LiveServer) -> None:
    # DECISIONS: a keyed stream opened without cursor replays from its first event;
    # Last-Event-ID / ?since= replays after that id, in order, no gap, no duplicate, then live.
    list_id = post_list(plain, f"{SOLO}\nWrite a riddle about magpies", "replayer")
    client = SSEClient(f"{plain.url}/api/events?list_id={list_id}")
    seen = [client.wait_for(lambda f: True)]
    assert seen[0].event == "list.started"
    while seen[-1].event != "item.triaged":
        seen.append(client.wait_for(lambda f: True))
    seen += client.drain(0.3)
    client.close()
    # Answer while disconnected, then resume with Last-Event-ID.
    for frame in seen:
        if frame.event == "item.triaged":
            plain.post("/api/verdicts", {"item_id": frame.data["item_id"], "target": "triage", "approve": True})
    # Collect everything from the first connection's last id on: must join without gap or duplicate.
    rest = run_list(plain, list_id, last_event_id=seen[-1].id)
    full = replay(plain, f"?list_id={list_id}")
    joined = [f.id for f in seen] + [f.id for f in rest]
    # `seen` may hold frames from before the drain; all events of the list in order:
    assert [f.id for f in full] == joined, (joined, [f.id for f in full])
    check_whole_list(full, list_id)
    # ?since= and Last-Event-ID agree from any point.
    k = len(full) // 2
    assert [f.id for f in replay(plain, f"?list_id={list_id}&since={full[k].id}")] == [f.id for f in full[k + 1:]]
    assert [f.id for f in replay(plain, f"?list_id={list_id}", last_event_id=full[k].id)] == [f.id for f in full[k + 1:]]
    assert replay(plain, f"?list_id={list_id}&since={full[-1].id}", quiet=0.4) == []


def test_sse_framing_headers_and_heartbeat(plain: LiveServer) -> None:
    list_id = post_list(plain, "Say hello", "framer")
    with httpx.stream("GET", f"{plain.url}/api/events?list_id={list_id}", timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines: list[str] = []
        start = time.monotonic()
        for line in response.iter_lines():
            lines.append(line)
            if time.monotonic() - start > 1.8:
                break
    assert any(line.startswith("id: ") for line in lines) and any(line.startswith("event: list.started") for line in lines)
    blocks = "\n".join(lines).split("\n\n")
    for block in blocks:
        if "event: " in block:
            assert re.search(r"^id: \d+$", block, re.M), block  # every SSE message carries an id: line
            assert re.search(r"^data: \{", block, re.M), block
    comments = [line for line in lines if line.startswith(":")]
    assert len(comments) >= 2, lines  # heartbeat every CROWS_HEARTBEAT_S=1 second (plus any greeting)
    plain.post("/api/verdicts", {"item_id": f"{list_id}-1", "target": "triage", "approve": False})


def test_firehose_without_cursor_starts_live(plain: LiveServer) -> None:
    before = plain.get("/api/state").json()["last_event_id"]
    assert before > 0
    client = SSEClient(f"{plain.url}/api/events")
    post = plain.post("/api/nests/todo/messages", {"author": "Munin", "text": "For the record, live."})
    assert post.status_code == 201
    frames = client.drain(0.5)
    client.close()
    assert frames and all(f.id > before for f in frames), [f.id for f in frames]
    assert any(f.event == "nest.message" and f.data["msg_id"] == post.json()["msg_id"] for f in frames)
    # ?since= on the firehose replays everything after that id, across streams.
    again = replay(plain, f"?since={before}", quiet=0.4)
    assert again and again[0].id > before and [f.id for f in again] == sorted({f.id for f in again})
    assert any(f.event == "nest.message" and f.data["msg_id"] == post.json()["msg_id"] for f in again)
    by_header = replay(plain, "", last_event_id=before, quiet=0.4)
    assert [f.id for f in by_header][:len(again)] == [f.id for f in again][:len(by_header)]
    assert by_header and by_header[0].id == again[0].id


# =========================================================================================
# Trusted flock: auto verdicts, borrowing, banter
# =========================================================================================


def test_trusted_auto_verdicts_and_borrowing(trusted: LiveServer) -> None:
    created = trusted.post("/api/nests", {"name": "Small Core", "crows": ["Rook"]})
    assert created.status_code == 201
    list_id = post_list(trusted, f"{MURDER}\n{SOLO}\n{SPLIT}", "borrower", nest_id="small-core")
    frames = run_list(trusted, list_id, decide=lambda f: pytest.fail("nothing should wait for the owner"))
    check_whole_list(frames, list_id)
    assert frames[0].data["nest_id"] == "small-core"
    verdicts = [f.data["verdict"] for f in frames if f.event == "verdict"]
    assert verdicts and set(verdicts) == {"auto"} and len(verdicts) == 6  # 3 items x (triage, output)
    assert all(not f.data["needs_approval"] for f in frames if f.event in ("item.triaged", "item.answered"))
    flying = [f.data for f in frames if f.event == "crow.flying"]
    for f in flying:
        expected = f["crow"] not in ("Rook", "Sentry", "Elder")
        assert f["borrowed"] is expected, f
    assert any(f["borrowed"] for f in flying), "a 3-crow murder in a 1-crow core borrows"
    for item_id, events in by_item(frames).items():  # core-first: the core crow flies every item
        assert "Rook" in {f.data["crow"] for f in events if f.event == "crow.flying"}, item_id
    assert {"Sentry", "Elder"} <= {f["crow"] for f in flying}
    # capabilities cover every event name this build emitted
    caps = set(trusted.get("/api/state").json()["capabilities"])
    assert {f.event for f in frames} <= caps


def test_trusted_todo_never_borrowed_and_banter(trusted: LiveServer) -> None:
    lists = [post_list(trusted, f"{MURDER}\n{SPLIT}\nWrite a poem about crows", f"banter-{n}") for n in range(2)]
    for list_id in lists:
        frames = run_list(trusted, list_id, decide=None)
        check_whole_list(frames, list_id)
        assert all(f.data["borrowed"] is False for f in frames if f.event == "crow.flying")
        banter = [f.data for f in frames if f.event == "crow.banter"]
        assert len(banter) <= 2
        for line in banter:
            assert line["crow"] in FLOCK and line["to"] in FLOCK and line["to"] != line["crow"]
    # list.finished is the last event of the list even after banter had time to land
    assert replay(trusted, f"?list_id={lists[0]}", quiet=0.5)[-1].event == "list.finished"


def test_budget_skips(trusted: LiveServer) -> None:
    # DECISIONS: a flight that would overrun a budget is not started; the item is skipped 'budget'.
    words = " ".join(f"word{n}" for n in range(250))
    text = "\n".join(f"Write a note about {words} part {n}" for n in range(20))
    list_id = post_list(trusted, text, "spender")
    frames = run_list(trusted, list_id, decide=None, timeout=60)
    check_whole_list(frames, list_id)
    assert any(f.event == "item.skipped" and f.data["reason"] == "budget" for f in frames)
    assert frames[-1].data["tokens_used"] <= frames[-1].data["token_budget"] == 20000


# =========================================================================================
# Tight limits: timeouts, pranks, trust changes
# =========================================================================================


def test_triage_and_output_timeouts(tight: LiveServer) -> None:
    # item 2 is a planning item, so approving its triage moves only the flock's planning trust
    list_id = post_list(tight, "Write a toast for the flock\nPlan the team offsite schedule", "waiter")

    def decide(frame: Frame) -> bool | None:
        if frame.event == "item.triaged" and frame.data["item_id"].endswith("-2"):
            return True
        return None  # leave item 1's triage and item 2's output waiting

    frames = run_list(tight, list_id, decide, timeout=20)
    check_whole_list(frames, list_id)
    skipped = {f.data["item_id"]: f.data["reason"] for f in frames if f.event == "item.skipped"}
    assert skipped == {f"{list_id}-1": "triage timeout", f"{list_id}-2": "output timeout"}
    verdicts = {(f.data["item_id"][-1], f.data["target"]): f.data["verdict"] for f in frames if f.event == "verdict"}
    assert verdicts == {("1", "triage"): "timeout", ("2", "triage"): "approved", ("2", "output"): "timeout"}
    assert_error(tight.post("/api/verdicts", {"item_id": f"{list_id}-1", "target": "triage", "approve": True}), 404)
    changes = [(f.data["holder"], f.data["task_type"]) for f in frames if f.event == "trust.changed"]
    assert set(changes) <= {("flock", "planning")}, "timeouts never move trust; only the approval did"


def test_prank_429_and_pranked_only_to_flying_lists(tight: LiveServer) -> None:
    fire = SSEClient(f"{tight.url}/api/events")
    mine = [post_list(tight, "Write a line", "mallory"), post_list(tight, "Write a word", "mallory")]
    other = post_list(tight, "Write a line", "bystander")
    refused = tight.post("/api/lists", {"text": "Write more", "requester": "mallory"})
    body = assert_error(refused, 429)
    assert isinstance(body["cooldown_s"], int) and body["cooldown_s"] == 1  # CROWS_PRANK_COOLDOWN_S
    # Refusals during the cooldown add no strike (and no event).
    assert_error(tight.post("/api/lists", {"text": "Write more", "requester": "mallory"}), 429)
    frames = fire.drain(1.0)
    fire.close()
    pranked = [f for f in frames if f.event == "requester.pranked"]
    for frame in pranked:
        check_list_frame(frame)
    assert sorted(f.data["list_id"] for f in pranked) == sorted(mine), [f.data for f in pranked]
    assert other not in {f.data["list_id"] for f in pranked}
    assert all(f.data["cooldown_s"] == body["cooldown_s"] and f.data["message"] for f in pranked)
    # And on the list's own stream:
    assert any(f.event == "requester.pranked" for f in replay(tight, f"?list_id={mine[0]}", quiet=0.3))


def test_prank_without_flying_lists_sends_only_429(tight: LiveServer) -> None:
    first = [post_list(tight, "Write a line", "quiet"), post_list(tight, "Write a word", "quiet")]
    for list_id in first:
        run_list(tight, list_id, decide=lambda f: False, timeout=15)
    mark = tight.get("/api/state").json()["last_event_id"]
    assert_error(tight.post("/api/lists", {"text": "Write more", "requester": "quiet"}), 429)
    time.sleep(0.5)
    after = replay(tight, f"?since={mark}", quiet=0.5)
    assert not [f for f in after if f.event == "requester.pranked" and f.data["list_id"] in first]


def test_prank_cooldown_doubles(tight: LiveServer) -> None:
    post_list(tight, "Write a line", "doubler")
    post_list(tight, "Write a word", "doubler")
    first = assert_error(tight.post("/api/lists", {"text": "x", "requester": "doubler"}), 429)
    time.sleep(first["cooldown_s"] + 0.3)
    second = assert_error(tight.post("/api/lists", {"text": "x", "requester": "doubler"}), 429)
    assert second["cooldown_s"] == 2 * first["cooldown_s"], (first, second)


def test_invalid_posts_earn_no_strike_and_keys_are_separate(tight: LiveServer) -> None:
    for _ in range(4):
        assert_error(tight.post("/api/lists", {"text": "", "requester": "careful"}), 400)
        assert_error(tight.post("/api/nests/todo/messages", {"author": "Soot", "text": "   "}), 400)
    post_list(tight, "Write a line", "careful")
    assert tight.post("/api/nests/todo/messages", {"author": "Soot", "text": "Picture this: a chimney."}).status_code == 201
    # A crow over its nest-post rate: 429 with message and cooldown_s.
    statuses = [tight.post("/api/nests/todo/messages", {"author": "Pepper", "text": f"Ooh, note {n}."})
                for n in range(4)]
    assert [r.status_code for r in statuses[:3]] == [201, 201, 201]
    body = assert_error(statuses[3], 429)
    assert isinstance(body["cooldown_s"], int) and body["cooldown_s"] > 0
    # A requester named "Pepper" never shares strikes with the crow Pepper.
    post_list(tight, "Write a line", "Pepper")


def test_trust_changes_on_owner_verdicts(tight: LiveServer) -> None:
    # streak 1: one approval promotes, one rejection demotes; each change emits trust.changed with list_id
    list_id = post_list(tight, f"{DATA}\nCount the rows in the sales table", "truster")
    order: list[str] = []

    def decide(frame: Frame) -> bool | None:
        if frame.event == "item.triaged":
            order.append(frame.data["item_id"])
            return len(order) == 1  # approve the first triaged, reject the second
        return True

    frames = run_list(tight, list_id, decide, timeout=20)
    check_whole_list(frames, list_id)
    changes = [f.data for f in frames if f.event == "trust.changed"]
    flock = [(c["from"], c["to"]) for c in changes if c["holder"] == "flock"]
    assert flock == [(0, 1), (1, 0)], changes
    assert all(c["task_type"] == "data" and c["list_id"] == list_id for c in changes)
    crows = [c for c in changes if c["holder"] != "flock"]
    answered = next(f.data for f in frames if f.event == "item.answered")
    assert {c["holder"] for c in crows} == set(answered["crows"]) and all((c["from"], c["to"]) == (0, 1) for c in crows)
    ledger = tight.get("/api/trust").json()["holders"]
    assert ledger["flock"]["data"]["level"] == 0
    assert ledger["flock"]["data"]["approvals"] >= 1 and ledger["flock"]["data"]["rejections"] >= 1
    assert all(ledger[c["holder"]]["data"]["level"] == 1 for c in crows)


# =========================================================================================
# Failing brains
# =========================================================================================


def test_failed_flights_land_with_error_and_skip(failing: LiveServer) -> None:
    list_id = post_list(failing, SOLO, "unlucky")
    frames = run_list(failing, list_id, timeout=30)
    check_whole_list(frames, list_id)
    landed = [f.data for f in frames if f.event == "crow.landed"]
    assert landed and all(d["ok"] is False and d["error"] for d in landed)
    assert any(d["crow"] == "Sentry" for d in landed)
    assert any(f.event == "item.triaged" for f in frames), "Jev triages when the Sentry's brain fails"
    skipped = [f.data["reason"] for f in frames if f.event == "item.skipped"]
    assert skipped == ["failure"]
    assert not [f for f in frames if f.event == "verdict" and f.data["target"] == "output"]


# =========================================================================================
# Nest messages
# =========================================================================================


@pytest.fixture(scope="module")
def room(plain: LiveServer) -> str:
    response = plain.post("/api/nests", {"name": "Contract Room", "crows": ["Pepper", "Inky"]})
    assert response.status_code == 201, response.text
    return response.json()["nest_id"]


def test_message_201_record_exact(plain: LiveServer, room: str) -> None:
    response = plain.post(f"/api/nests/{room}/messages", {"author": "owner", "text": "  Good morning, flock.  "})
    assert response.status_code == 201, response.text
    record = response.json()
    assert set(record) - {"nest_id"} == NEST_RECORD, sorted(record)
    assert record["msg_id"] == f"{room}-1", "numbered from 1 in nest order"
    assert record["author"] == "owner" and record["text"] == "Good morning, flock."
    assert record["to"] == "" and record["refers_to"] == ""
    check_record(record, room)


def test_message_addressing_claims_and_refers(plain: LiveServer, room: str) -> None:
    M = f"/api/nests/{room}/messages"
    mark = plain.get("/api/state").json()["last_event_id"]
    request = plain.post(M, {"author": "owner", "text": "@Inky please draft a tweet about the launch"}).json()
    assert request["to"] == "Inky", "@Name sets to"
    # The addressed crow answers: its claim and deliver go back to the requester by default and
    # refer to the request (docs/CHATROOM.md, EVENTS 'to'/'refers_to').
    client = SSEClient(f"{plain.url}/api/events?nest_id={room}&since={mark}")
    claim = client.wait_for(lambda f: f.data["kind"] == "claim" and f.data["refers_to"] == request["msg_id"]).data
    deliver = client.wait_for(lambda f: f.data["kind"] == "deliver" and f.data["refers_to"] == request["msg_id"]).data
    client.close()
    assert claim["author"] == "Inky" and claim["to"] == "owner"
    assert deliver["author"] == "Inky" and deliver["to"] == "owner"
    explicit = plain.post(M, {"author": "owner", "text": "psst", "to": "Pepper"}).json()
    assert explicit["to"] == "Pepper"
    outside = plain.post(M, {"author": "Pepper", "text": "hey @Rook look"}).json()
    assert outside["to"] == "", "an @Name that is not a member addresses no one"
    refer = plain.post(M, {"author": "Pepper", "text": "Re that.", "refers_to": request["msg_id"]})
    assert refer.status_code == 201 and refer.json()["refers_to"] == request["msg_id"]
    # Quill and Boss serve every room (DECISIONS 'Who may post where').
    assert plain.post(M, {"author": "Quill", "text": "Noted."}).status_code == 201
    assert plain.post(M, {"author": "Boss", "text": "Right then."}).status_code == 201


def test_message_tagging_consistent(plain: LiveServer, room: str) -> None:
    M = f"/api/nests/{room}/messages"
    for text, header in [("hmm", "deliver"), ("see the file notes.md", "refer"), ("ok then", "say"), ("Why?", "refer"),
                         ("I can't take this, sorry", "decline"), ("zq blorf", None)]:
        body = {"author": "Inky", "text": text} | ({"kind": header} if header else {})
        record = plain.post(M, body).json()
        check_record(record, room)
        assert record["kind"] in CROW_KINDS
        if header is None:
            assert record["tagged_by"] in {"jev", "default"}
        elif record["tagged_by"] == "header":
            assert record["kind"] == header
        elif record["tagged_by"] == "disagreement":
            assert record["kind"] != header
        elif record["tagged_by"] == "jev":
            assert record["kind"] == header


@pytest.mark.parametrize("body", [
    {"author": "owner", "text": ""},
    {"author": "owner", "text": "   \n\t "},
    {"author": "owner", "text": "x" * 2001},
    {"author": "owner", "text": "  " + "x" * 2001 + " "},
    {"author": "owner", "text": None},
    {"author": "owner", "text": 5},
    {"author": "owner", "text": ["hi"]},
    {"author": "owner"},
    {"text": "hi"},
    {"author": "", "text": "hi"},
    {"author": None, "text": "hi"},
    {"author": 5, "text": "hi"},
    {"author": {"name": "owner"}, "text": "hi"},
    {"author": "Rook", "text": "not a member"},
    {"author": "Nobody", "text": "hi"},
    {"author": "harness", "text": "hi"},
    {"author": "harness", "text": "hi", "kind": "nudge"},
    {"author": "Sentry", "text": "hi", "kind": "flag"},
    {"author": "Elder", "text": "hi"},
    {"author": "Pepper", "text": "hi", "kind": "nudge"},
    {"author": "Pepper", "text": "hi", "kind": "flag"},
    {"author": "owner", "text": "hi", "kind": "nudge"},
    {"author": "Inky", "text": "hi", "kind": "ask_owner"},
    {"author": "Inky", "text": "hi", "kind": "bogus"},
    {"author": "Inky", "text": "hi", "kind": 5},
    {"author": "Inky", "text": "hi", "kind": ["say"]},
    {"author": "Inky", "text": "hi", "refers_to": "nope-1"},
    {"author": "Inky", "text": "hi", "refers_to": "todo-1"},
    {"author": "Inky", "text": "hi", "refers_to": "contract-room-9999"},
    {"author": "Inky", "text": "hi", "refers_to": 1},
    {"author": "Inky", "text": "hi", "to": "Rook"},
    {"author": "Inky", "text": "hi", "to": 5},
])
def test_message_400s(plain: LiveServer, room: str, body: dict) -> None:
    assert_error(plain.post(f"/api/nests/{room}/messages", body), 400)


def test_message_unknown_nest_404(plain: LiveServer) -> None:
    assert_error(plain.post("/api/nests/no-such-nest/messages", {"author": "owner", "text": "hi"}), 404)
    assert_error(plain.post("/api/nests/dm-nobody/messages", {"author": "owner", "text": "hi"}), 404)


def test_message_edge_lengths_accepted(plain: LiveServer, room: str) -> None:
    for text in ("x" * 2000, "   " + "y" * 2000 + "   ", "🐦" * 2000, "é"):
        response = plain.post(f"/api/nests/{room}/messages", {"author": "Pepper", "text": text})
        assert response.status_code == 201, response.text
        assert response.json()["text"] == text.strip()


def test_nest_stream_flat_records_and_replay(plain: LiveServer, room: str) -> None:
    M = f"/api/nests/{room}/messages"
    plain.post(M, {"author": "Pepper", "text": "Ooh, stream check."})
    frames = replay(plain, f"?nest_id={room}", quiet=0.8)
    assert frames, "keyed nest stream without cursor replays from its first event"
    for frame in frames:
        check_nest_frame(frame, room)
    numbers = [int(f.data["msg_id"].rsplit("-", 1)[1]) for f in frames]
    assert numbers == list(range(1, len(numbers) + 1)), "msg_id order, from 1, no gap"
    assert [f.id for f in frames] == sorted(f.id for f in frames)
    k = len(frames) // 2
    assert [f.id for f in replay(plain, f"?nest_id={room}", last_event_id=frames[k].id, quiet=0.3)] == \
        [f.id for f in frames[k + 1:]]
    assert [f.id for f in replay(plain, f"?nest_id={room}&since={frames[k].id}", quiet=0.3)] == \
        [f.id for f in frames[k + 1:]]
    # the GET answer and the stream agree on the record
    listed = plain.get(f"/api/nests/{room}/messages?limit=200").json()["messages"]
    stream_records = {f.data["msg_id"]: {k2: v for k2, v in f.data.items() if k2 != "ts"} for f in frames}
    for record in listed:
        if record["msg_id"] in stream_records:
            assert {k2: record[k2] for k2 in NEST_RECORD} == {
                k2: stream_records[record["msg_id"]][k2] for k2 in NEST_RECORD}


def test_direct_chat_membership(plain: LiveServer) -> None:
    assert plain.post("/api/nests/dm-hugin/messages", {"author": "owner", "text": "Hi Hugin"}).status_code == 201
    assert plain.post("/api/nests/dm-hugin/messages", {"author": "Hugin", "text": "Interesting — hi."}).status_code == 201
    assert_error(plain.post("/api/nests/dm-hugin/messages", {"author": "Rook", "text": "let me in"}), 400)


def test_racing_claims_first_wins(plain: LiveServer, room: str) -> None:
    # DECISIONS: first claim wins for solo/split requests, a later claim is 409, even when two race.
    M = f"/api/nests/{room}/messages"
    request = plain.post(M, {"author": "Quill", "text": "Can someone draft the launch tweet for the Pepper account?",
                             "kind": "request", "to": "owner"}).json()
    if request["kind"] != "request":
        pytest.skip("Jev did not read this as a request")
    # Speaking rights (docs/CHATROOM.md): a regular may claim an open request; a stranger
    # only one it was given.
    seeded = plain.manage("shell", "-c", "from trust.actions import seed_trust; from flock.personas import TASK_TYPES; "
        "[seed_trust(c, task_type=t, level=1) for c in ('Inky', 'Pepper') for t in TASK_TYPES]")
    assert seeded.returncode == 0, seeded.stderr
    results: list[httpx.Response] = []
    barrier = threading.Barrier(2)

    def claim(author: str) -> None:
        barrier.wait()
        results.append(plain.post(M, {"author": author, "text": "I'll take this one.", "kind": "claim",
                                      "refers_to": request["msg_id"]}))

    threads = [threading.Thread(target=claim, args=(a,)) for a in ("Inky", "Pepper")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r.status_code for r in results)
    assert statuses == [201, 409], [r.text for r in results]
    won = next(r.json() for r in results if r.status_code == 201)
    assert won["kind"] == "claim" and won["to"] == "Quill" and won["refers_to"] == request["msg_id"]
    assert_error(next(r for r in results if r.status_code == 409), 409)


def test_auto_only_when_every_holder_trusted(tight: LiveServer) -> None:
    # DECISIONS: approval is skipped (auto) only when the holder is trusted (2); for an output every
    # contributing crow must be. streak 1: two triage approvals make the flock trusted for code.
    first = post_list(tight, "Fix the bug in the login function\nDebug the parser script", "coder-1")
    frames = run_list(tight, first, lambda f: f.event == "item.triaged" or False, timeout=20)
    check_whole_list(frames, first)
    flock = [(f.data["from"], f.data["to"]) for f in frames if f.event == "trust.changed" and f.data["holder"] == "flock"]
    assert flock == [(0, 1), (1, 2)], flock
    second = post_list(tight, "Fix the bug in the signup function", "coder-2")
    frames = run_list(tight, second, timeout=20)
    check_whole_list(frames, second)
    triaged = next(f.data for f in frames if f.event == "item.triaged")
    answered = next(f.data for f in frames if f.event == "item.answered")
    assert triaged["task_type"] == "code" and triaged["needs_approval"] is False
    assert answered["needs_approval"] is True
    verdicts = [(f.data["target"], f.data["verdict"]) for f in frames if f.event == "verdict"]
    assert verdicts == [("triage", "auto"), ("output", "approved")]


def test_the_owner_over_the_requester_rate_is_not_pranked(tight: LiveServer) -> None:
    # The owner's lists go by the owner's own key and limit (docs/LISTS.md), never a
    # requester's prank: a third list in a minute, over the requesters' rate of 2, is taken.
    for text in ("Write a line", "Write a word", "Write a verse"):
        post_list(tight, text, "owner")
    assert tight.post("/api/nests/todo/messages", {"author": "owner", "text": "Still here."}).status_code == 201


def test_verdict_racing_the_deadline_is_one_verdict(tight: LiveServer) -> None:
    # DECISIONS: every target gets exactly one verdict, even when an owner answer races the timeout;
    # the answer's 204/404 agrees with the recorded verdict.
    text = "\n".join(f"Write a note number {n} for the flock" for n in range(6))
    list_id = post_list(tight, text, "deadline-racer")
    client = SSEClient(f"{tight.url}/api/events?list_id={list_id}")
    answers: dict[str, int] = {}
    threads: list[threading.Thread] = []
    frames: list[Frame] = []

    def answer_later(item_id: str, delay: float) -> None:
        time.sleep(delay)
        answers[item_id] = tight.post("/api/verdicts", {"item_id": item_id, "target": "triage",
                                                        "approve": True}).status_code

    try:
        while True:
            frame = client.wait_for(lambda f: True, timeout=20)
            frames.append(frame)
            if frame.event == "item.triaged":
                thread = threading.Thread(target=answer_later,
                                          args=(frame.data["item_id"], 1.85 + 0.05 * len(threads)))
                thread.start()
                threads.append(thread)
            elif frame.event == "item.answered":
                tight.post("/api/verdicts", {"item_id": frame.data["item_id"], "target": "output", "approve": False})
            elif frame.event == "list.finished":
                break
    finally:
        client.close()
        for thread in threads:
            thread.join()
    check_whole_list(frames, list_id)
    recorded = {f.data["item_id"]: f.data["verdict"] for f in frames if f.event == "verdict" and f.data["target"] == "triage"}
    assert set(recorded) == set(answers)
    for item_id, status in answers.items():
        assert (status, recorded[item_id]) in ((204, "approved"), (404, "timeout")), (item_id, status, recorded[item_id])


def test_default_list_rate_is_ten_a_minute(plain: LiveServer) -> None:
    # DECISIONS: more than CROWS_LIST_RATE_PER_MIN=10 lists in a rolling minute -> 429, cooldown 60 s
    for n in range(10):
        post_list(plain, f"Say hi {n}", "tenner")
    body = assert_error(plain.post("/api/lists", {"text": "Say hi again", "requester": "tenner"}), 429)
    assert body["cooldown_s"] == 60


def test_replay_to_live_handoff_has_no_gap(trusted: LiveServer) -> None:
    # DECISIONS: replay every stored event after the cursor, in order, then continue live, with no gap
    # and no duplicate. Clients join a busy list at staggered moments; each must see the whole list.
    text = "\n".join([MURDER, SPLIT, SOLO, "Write a limerick about jackdaws", "Plan the team offsite schedule"])
    mark = trusted.get("/api/state").json()["last_event_id"]
    list_id = post_list(trusted, text, "handoff")
    clients: list[SSEClient] = []
    for _ in range(6):
        clients.append(SSEClient(f"{trusted.url}/api/events?list_id={list_id}"))
        time.sleep(0.1)
    firehose = SSEClient(f"{trusted.url}/api/events?since={mark}")
    results = []
    for client in clients + [firehose]:
        got: list[Frame] = []
        deadline = time.monotonic() + 30
        while not (got and got[-1].event == "list.finished" and got[-1].data["list_id"] == list_id):
            frame = client.wait_for(lambda f: True, timeout=max(0.1, deadline - time.monotonic()))
            if client is firehose and frame.data.get("list_id") != list_id:
                continue
            got.append(frame)
        client.close()
        results.append([f.id for f in got])
    full = replay(trusted, f"?list_id={list_id}", quiet=0.3)
    check_whole_list(full, list_id)
    for ids in results:
        assert ids == [f.id for f in full]


def test_core_first_rotation(trusted: LiveServer) -> None:
    # EVENTS 'Nests': crows are picked core-first (rotating within the core), then borrowed.
    assert trusted.post("/api/nests", {"name": "Duo", "crows": ["Pepper", "Inky"]}).status_code == 201
    text = "\n".join(["Write a haiku about crows", "Write a limerick about ravens", "Write a toast for the flock",
                      "Write a riddle about magpies", MURDER])
    list_id = post_list(trusted, text, "rotator", nest_id="duo")
    frames = run_list(trusted, list_id, decide=None)
    check_whole_list(frames, list_id)
    triaged = {f.data["item_id"]: f.data["mode"] for f in frames if f.event == "item.triaged"}
    workers = [(f.data["item_id"], f.data["crow"], f.data["borrowed"]) for f in frames
               if f.event == "crow.flying" and f.data["crow"] not in ("Sentry", "Elder")]
    solos = Counter(crow for item, crow, _ in workers if triaged[item] == "solo")
    assert solos == Counter({"Pepper": 2, "Inky": 2}), solos
    murder = [(crow, borrowed) for item, crow, borrowed in workers if triaged[item] == "murder"]
    assert {c for c, b in murder if not b} == {"Pepper", "Inky"} and len([1 for c, b in murder if b]) == 1
    assert all(b == (c not in ("Pepper", "Inky")) for _, c, b in workers)


def test_every_event_on_the_firehose_matches_its_payload_typeddict(plain: LiveServer) -> None:
    # Whatever this module's tests made the plain server emit (lists, verdicts, nests,
    # messages, expectations, decisions...), each stored event's payload has the fields
    # and value types of its registered TypedDict, nothing more. Its own list (answered)
    # and message first: pytest-xdist may have run the module's others on another server.
    list_id = post_list(plain, "Write a haiku about jackdaws", "firehose")
    check_whole_list(run_list(plain, list_id), list_id)
    said = plain.post("/api/nests/dm-hugin/messages", {"author": "owner", "text": "Hello, Hugin"})
    assert said.status_code == 201, said.text
    frames = replay(plain, "?since=0&replay=1")  # the backlog, then the response ends
    names = Counter(f.event for f in frames if f.event != "stream.replayed")
    assert {"list.started", "nest.message", "verdict"} <= set(names), names
    for frame in frames:
        if frame.event != "stream.replayed":
            assert_payload(frame.event, frame.data)
