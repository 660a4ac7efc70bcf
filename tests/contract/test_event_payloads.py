"""Each event's payload has one statement, its TypedDict (registered beside its name in the
app's `payloads` module), and docs/API.md's event table (which restates EVENTS.md and
marks its events "spec") agrees with it field for field. In-process: no server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flock.events import ENVELOPE_FIELDS, EVENT_NAMES, EVENT_TYPES
from nests.payloads import DebateRecord, ExpectationRecord, MessageRecord, OrchestrationRecord
from nests.schemas import MessageOut
from nests.schemas_ledger import DebateOut, ExpectationOut, OrchestrationDecisionOut
from tests.support.payloads import assert_payload, fields
from trust.payloads import DecisionRecord
from trust.schemas import DecisionOut

API_MD = Path(__file__).resolve().parents[2] / "docs" / "API.md"
APPS = ("flock.payloads", "trust.payloads", "nests.payloads")
# Events whose payload docs/API.md gives as a record "as GET …" returns it: the record's
# fields are those of the endpoint's schema, checked below instead of the table's words.
RECORDS = {
    "decision.opened": (DecisionRecord, DecisionOut),
    "expectation.opened": (ExpectationRecord, ExpectationOut),
    "expectation.closed": (ExpectationRecord, ExpectationOut),
    "debate.started": (DebateRecord, DebateOut),
    "orchestration.decided": (OrchestrationRecord, OrchestrationDecisionOut),
}
FIELD = re.compile(r"[a-z_]+")


def documented_events() -> dict[str, tuple[set[str], set[str]]]:
    """docs/API.md "Events": for each event, (the fields its payload cell names outside
    parentheses, which the payload must declare; every name the cell mentions, within
    parentheses too, which is all the payload may declare)."""
    text = API_MD.read_text()
    section = text[text.index("### Events"):]
    events: dict[str, tuple[set[str], set[str]]] = {}
    previous: tuple[set[str], set[str]] = (set(), set())
    for line in section.splitlines():
        m = re.match(r"\| `([a-z_.]+)`( spec)? \|", line)
        if not m:
            continue
        cell = re.split(r"(?<!\\)\|", line)[4]
        outside = cell
        while re.search(r"\([^()]*\)", outside):
            outside = re.sub(r"\([^()]*\)", "", outside)

        def names(words: str) -> set[str]:
            found = (t.split(":")[0].removesuffix("[]").strip() for t in re.findall(r"`([^`]+)`", words))
            return {f for f in found if FIELD.fullmatch(f)}

        must, may = names(outside), names(cell)
        if cell.strip().startswith("the same"):  # "the same, plus …": the row above's fields
            must |= previous[0]
            may |= previous[1]
        events[m.group(1)] = previous = (must, may)
    return events


def test_every_registered_event_has_a_typeddict_payload():
    ours = {name: e for name, e in EVENT_TYPES.items() if e.payload.__module__ in APPS}
    assert set(ours) <= set(EVENT_NAMES)
    # docs/API.md: "capabilities lists all 31 names this build emits".
    assert len(ours) == 31, sorted(ours)
    for name, event in ours.items():
        assert event.required | event.optional, f"{name}: its payload declares no field"


def test_docs_name_every_registered_event_and_no_other():
    documented = documented_events()
    ours = {name for name, e in EVENT_TYPES.items() if e.payload.__module__ in APPS}
    assert set(documented) == ours, sorted(set(documented) ^ ours)


@pytest.mark.parametrize("name", sorted(documented_events()))
def test_documented_fields_match_the_payload_typeddict(name):
    named, may = documented_events()[name]
    must = named - ENVELOPE_FIELDS  # `list_id`/`nest_id` "on a keyed stream": what emit adds
    event = EVENT_TYPES[name]
    declared = event.required | event.optional
    assert must <= declared, f"{name}: documented but not in {event.payload.__qualname__}: {sorted(must - declared)}"
    if name in RECORDS:
        record, schema = RECORDS[name]
        assert fields(record) <= declared
        assert declared - fields(record) <= named, f"{name}: fields beside the record must be documented"
    else:
        assert declared <= may, f"{name}: in {event.payload.__qualname__} but not documented: {sorted(declared - may)}"


@pytest.mark.parametrize("record,schema", RECORDS.values())
def test_each_record_typeddict_is_its_endpoint_schema(record, schema):
    # The API returns the record its event carries: the schema is the TypedDict itself,
    # so the two cannot drift.
    assert schema is record


def test_a_message_the_api_returns_is_its_event_record_and_its_room():
    assert fields(MessageOut) == fields(MessageRecord) | {"nest_id"}


def test_the_payload_check_refuses_a_wrong_shape_or_type():
    good = {"list_id": "L1", "ts": "2026-01-01T00:00:00.000Z", "item_id": "L1-1", "crow": "Rook", "ok": False,
            "tokens": 0, "error": "down"}
    assert_payload("crow.landed", good)
    for bad in ({**good, "tokens": True}, {**good, "extra": 1}, {k: v for k, v in good.items() if k != "ok"}):
        with pytest.raises(AssertionError):
            assert_payload("crow.landed", bad)
