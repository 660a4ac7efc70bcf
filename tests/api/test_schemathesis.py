"""schemathesis against a real daphne, from the server's own OpenAPI document (docs/API.md),
with every check it has (`--checks all`) and every phase (examples, coverage, fuzzing and
stateful sequences that feed one answer's ids into the next request): no server error,
every answer as the document states it (status, content type, headers, body), every
request the document allows taken (a 2xx, or a 404/409 about the flock's state; a 400 only
for the contract's few state rules, tests/api/schemathesis_hooks.py), every request it
does not allow refused, and no unknown field let through.

Bounded and deterministic: MAX_EXAMPLES per operation and phase, generated in
schemathesis's deterministic mode (Hypothesis derandomized, no example database), so a
run sends the same cases every time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("schemathesis", reason="schemathesis is not installed (requirements.lock)")

pytestmark = pytest.mark.live

MAX_EXAMPLES = 25
SCHEMATHESIS = str(Path(sys.executable).with_name("schemathesis"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(sqlite_template, tmp_path_factory):
    from tests.support.server import LiveServer

    live = LiveServer(
        sqlite_template.fresh_dir(tmp_path_factory.mktemp("schemathesis").name),
        env={"CROWS_EMBEDDED_WORKER": "0", "CROWS_LIST_RATE_PER_MIN": "100000",
             "CROWS_NEST_POST_RATE_PER_MIN": "100000", "CROWS_EXCHANGES_PER_TURN": "0"},
    ).start()
    yield live
    live.stop()


def test_schemathesis_with_every_check_finds_nothing(server, tmp_path):
    run = subprocess.run(
        [
            SCHEMATHESIS, "run", f"{server.url}/api/openapi.json",
            "--checks", "all",
            # schemathesis_hooks.schema_valid_data_taken runs in its place, with the
            # contract's state-dependent 400s as its only exception.
            "--exclude-checks", "positive_data_acceptance",
            "--phases", "examples,coverage,fuzzing,stateful",
            # The event stream never ends; tests/stream covers it over a real socket.
            "--exclude-path", "/api/events",
            "--max-examples", str(MAX_EXAMPLES),
            "--generation-deterministic",
            "--workers", "1",
            "--continue-on-failure",
            "--request-timeout", "30",
            "--no-color",
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks", "PYTHONPATH": str(ROOT)},
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-6000:]
    # Every operation but the stream was reached, and every phase ran.
    tested = re.search(r"Tested: (\d+)", report)
    assert tested is not None and int(tested.group(1)) >= 25, report[-3000:]
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in report, report[-3000:]


def test_the_longest_request_the_document_allows_gets_an_answer(server):
    """daphne drops a request line (with its headers) over 16 KiB without a word, so every
    path and query string at its documented maxLength in 4-byte characters, percent-encoded
    into 12 bytes each, must still be answered; the memory query, the longest, is taken."""
    import httpx

    wide = "\U00010000"
    document = httpx.get(f"{server.url}/api/openapi.json").json()
    asked = 0
    for path, item in document["paths"].items():
        operation = item.get("get")
        if operation is None:
            continue
        params: dict[str, str] = {}
        for parameter in operation.get("parameters", []):
            schema = next((s for s in parameter["schema"].get("anyOf", []) if s.get("type") != "null"),
                          parameter["schema"])
            value = wide * schema["maxLength"] if "maxLength" in schema else str(schema.get("maximum", ""))
            if parameter["in"] == "path":
                path = path.replace("{" + parameter["name"] + "}", value)
            elif parameter["in"] == "query" and "enum" not in schema and "pattern" not in schema:
                params[parameter["name"]] = value
        response = httpx.get(f"{server.url}{path}", params=params, timeout=30)
        assert response.status_code < 500 and "message" in response.json() or response.status_code == 200, path
        asked += 1
    assert asked >= 10
    memory = httpx.get(f"{server.url}/api/crows/Rook/memory", params={"q": wide * 500, "limit": "200"}, timeout=30)
    assert memory.status_code == 200 and memory.json()["query"] == wide * 500


@pytest.mark.django_db
def test_the_state_rules_the_check_lets_through_are_the_actions_own_words(client):
    """schemathesis_hooks matches the state-dependent 400s by their words: each pattern must
    match what the server says today, and a refusal for a request's shape must not."""
    import json

    from tests.api.schemathesis_hooks import refused_for_the_flocks_state

    def post(body: dict):
        return client.post("/api/nests/todo/messages", data=json.dumps(body), content_type="application/json")

    for state in [
        {"author": "Nobody", "text": "hi"},
        {"author": "owner", "text": "hi", "to": "Nobody"},
        {"author": "owner", "text": "hi", "refers_to": "todo-999"},
    ]:
        response = post(state)
        assert response.status_code == 400 and refused_for_the_flocks_state(response), response.content
    for shape in [{"author": "owner", "text": "hi", "colour": 1}, {"author": "owner", "text": " "}]:
        response = post(shape)
        assert response.status_code == 400 and not refused_for_the_flocks_state(response), response.content
