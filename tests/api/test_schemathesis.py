"""schemathesis against a real daphne, from the server's own OpenAPI document (docs/API.md):
requests generated valid by the schema never get a 500, every answer matches the schema
(status listed, content type, body shape), and no valid request is refused for its shape.

A few refusals depend on state no schema can express (who is a member of a nest, whether a
referenced message exists, the nest cap, how many lines a list's text makes, the prank
rate limit): those 400s are listed in STATEFUL_400 with the rule they stand for; any other
400, 413 or 415 to schema-valid data fails the test. Bounded: MAX_EXAMPLES per operation."""

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
    r"^name must contain at least one letter or digit",  # its slug must not be empty
    r"^text has no items",  # every line only a bullet
    r"^the list has \d+ items",  # at most 20 items
    r"^item \d+ is .* characters long",  # each item at most 2,000 characters
    r"after trimming",  # surrounding spaces do not count towards lengths
    r"^requester must not be empty",  # likewise
    r"^text is empty",  # likewise
    r"^give exchanges and/or tokens",  # a top-up needs one of the two
    r"speaks only in flags",  # Sentry posts through the harness
    r"is quarantined",  # a quarantined crow may not speak
    r"^kind .* is posted by the harness only",
    r"^limit must be|^before must be|^before ",  # page cursors of the messages page
    r"the brain script|^script: needs a path",  # a script: brain's file must exist and hold rules
    r"^name a crow or a model, not both",  # Test connection tests one brain
    # How a verdict's extensions go together (docs/REVIEW.md): an edit is an approved answer,
    # an overrule is a rejection of an answer.
    r"^edited_text |^only an answer \(target output\) can be overruled|^an overrule ",
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
    if response.status_code == 400 and any(re.search(p, message) for p in STATEFUL_400):
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
