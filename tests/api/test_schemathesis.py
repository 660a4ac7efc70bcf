"""schemathesis against a real daphne, from the server's own OpenAPI document (docs/API.md):
requests generated valid by the schema never get a 500, every answer matches the schema
(status listed, content type, body shape), and no valid request is refused for its shape.

A few refusals depend on state no schema can express (who is a member of a nest, whether a
referenced message exists, the nest cap, how many lines a list's text makes, the prank
rate limit): those 400s are listed in STATEFUL_400 with the rule they stand for; any other
400, 413 or 415 to schema-valid data fails the test, and so does a message of a rule the
document states (STATED_IN_THE_SCHEMA), whatever STATEFUL_400 says. Bounded: MAX_EXAMPLES
per operation."""

from __future__ import annotations

import re

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed (requirements.lock)")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.live

MAX_EXAMPLES = 30

# 400s a schema-valid request may still get, because the rule depends on the flock's state
# or is beyond JSON Schema. Each names its rule (docs/API.md, "Rules no schema states").
STATEFUL_400 = [
    r"is not a member of",  # an author must be a member of the nest
    r"^to must be the owner or a member",  # likewise the addressee
    r"^refers_to .* is not a message of",  # the referenced message must exist
    r"not in the roster",  # core crows come from the living roster
    r"the flock already has \d+ nests",  # the nest cap (20)
    r"^name must contain at least one Latin letter or digit",  # its slug must not be empty
    r"^text has no items",  # every line only a bullet
    r"^the list has \d+ items",  # at most 20 items
    r"^item \d+ is .* characters long",  # each item at most 2,000 characters
    r"after trimming",  # a message's text less its [KIND …] header must not be empty
    r"speaks only in flags",  # Sentry posts through the harness
    r"is quarantined",  # a quarantined crow may not speak
    r"^kind .* is posted by the harness only",
    r"^before must be|^before ",  # the page cursor must be a message of this nest
    r"the brain script",  # a script: brain's file must exist and hold rules
    r"^script: (brains are refused here|must name a regular file)",  # only from CROWS_SCRIPT_DIR
]

# Refusals this list once allowed, whose rules the document now states (tests/api/
# test_api_bounds.py): a schema-valid request that still gets one fails the test, even
# should a STATEFUL_400 pattern grow to match it.
STATED_IN_THE_SCHEMA = [
    "give exchanges and/or tokens to add",  # BudgetIn: one of the two, not null, each from 1
    "script: needs a path to a JSON file",  # the brain spec pattern asks for script:<path>
    "name a crow or a model, not both",  # BrainTestIn: not both
    "edited_text is approved text",  # VerdictIn: if edited_text then approve true
    "edited_text corrects an answer",  # ... and target output
    "only an answer (target output) can be overruled",  # if overrule then target output
    "an overrule is a rejection",  # ... and approve false
    "an overrule carries no edited_text",  # ... and no edited_text
    "limit must be a whole number",  # every limit documents its range
    "requester must not be empty",  # TEXT_PATTERN: something besides spaces, as str.strip sees them
    "text is empty",  # likewise
]


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


def refused_for_its_shape(response) -> str:
    if response.status_code not in (400, 413, 415, 422):
        return ""
    try:
        message = response.json()["message"]
    except Exception:
        return f"{response.status_code} without a JSON message"
    if response.status_code == 400 and not any(m in message for m in STATED_IN_THE_SCHEMA) and any(
        re.search(p, message) for p in STATEFUL_400
    ):
        return ""
    return f"{response.status_code}: {message}"


def test_schema_valid_requests_never_fail_and_answers_match_the_schema(server):
    schema = schemathesis.openapi.from_url(f"{server.url}/api/openapi.json")
    failures: list[str] = []
    checked = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        # The event stream never ends; tests/stream covers it over a real socket.
        if operation.path == "/api/events":
            continue
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE)

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
        @given(case=strategy)
        def run(case) -> None:
            response = case.call(base_url=server.url, timeout=30)
            label = f"{case.method} {case.formatted_path} {case.body!r:.200}"
            if response.status_code >= 500:
                failures.append(f"{label} -> {response.status_code} {response.text[:200]}")
                return
            refused = refused_for_its_shape(response)
            if refused:
                failures.append(f"{label} -> refused: {refused}")
                return
            try:
                case.validate_response(
                    response,
                    checks=[status_code_conformance, content_type_conformance, response_schema_conformance],
                )
            except Exception as exc:  # schemathesis raises a group of failures
                failures.append(f"{label} -> {str(exc)[:400]}")

        run()
        checked += 1
    assert checked >= 12
    assert failures == [], "\n".join(failures[:20])


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
