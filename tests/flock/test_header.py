"""The structured header on a crow's first line (AGENT_PROTOCOL bracket grammar, docs/CHATROOM.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flock.brains.header import (
    MSG_ID_VERBS,
    VERB_KINDS,
    Header,
    contract_footer,
    format_header,
    parse_header,
    strip_header,
)

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "AGENT_PROTOCOL.json"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[CLAIM todo-3] On it, @owner.", Header("claim", "todo-3", "On it, @owner.", "CLAIM")),
        (
            "[RESULT todo-3] @owner, here it is.\nStep one.",
            Header("deliver", "todo-3", "@owner, here it is.", "RESULT"),
        ),
        (
            "[DECLINE launch-copy-12] Out of my depth.",
            Header("decline", "launch-copy-12", "Out of my depth.", "DECLINE"),
        ),
        ("[ACK todo-7]", Header("say", "todo-7", "", "ACK")),
        (
            "[NO-ACTION dm-hugin-2] Already done by Munin.",
            Header("say", "dm-hugin-2", "Already done by Munin.", "NO-ACTION"),
        ),
        (
            "[REFER research/2026-10-27-watchlist.md] see the list",
            Header("refer", "", "research/2026-10-27-watchlist.md", "REFER"),
        ),
        ("  [CLAIM todo-3] indented by spaces", Header("claim", "todo-3", "indented by spaces", "CLAIM")),
        ("[CLAIM todo-3]\r\nWindows line ends", Header("claim", "todo-3", "", "CLAIM")),
    ],
)
def test_each_verb_maps_to_its_kind_and_the_id_becomes_refers_to(text, expected):
    assert parse_header(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "On it! [CLAIM todo-3]",  # not at the start of the line
        "Sure thing.\n[CLAIM todo-3]",  # not on the first line
        "[claim todo-3] lower-case verb",
        "[CLAIM Todo-3] capitals in the id",
        "[CLAIM todo] no number",
        "[CLAIM 7fce46e0] a bare hex id",
        "[CLAIM todo-3 ] space before the bracket",
        "[CLAIM  todo-3] two spaces",
        "[CLAIM:todo-3] the colon form",
        "[ACK:7fce46e0] [from 646]",  # the protocol's example: a bare hex id is no msg_id
        "[WO:7fce46e0] [from super] a work order",
        "[NUDGE todo-3] [nudge 1/3] the harness's verb",
        "[TOOL followup.create {}]",
        "[REFER ] empty name",
        "[REFER two words]",
        "[CLAIM todo-٣] Arabic-Indic digit",
        "\n[CLAIM todo-3] after an empty first line",
        "[CLAIM todo-3",
    ],
)
def test_anything_else_is_not_a_header(text):
    assert parse_header(text) is None
    assert strip_header(text) == text


def test_contract_footer_is_agent_protocols_template_exactly():
    template = (
        json.loads(SPEC.read_text())["structures"]["contract_footer"]["template"]
        if SPEC.exists()
        else (
            "Reply: [ACK {id}] seen | [CLAIM {id}] mine | [RESULT {id}] done | [DECLINE {id}] | [NO-ACTION {id}]."
        )
    )
    assert contract_footer("todo-3") == template.format(id="todo-3")
    assert contract_footer("todo-3") == (
        "Reply: [ACK todo-3] seen | [CLAIM todo-3] mine | [RESULT todo-3] done | [DECLINE todo-3] | "
        "[NO-ACTION todo-3]."
    )


def test_every_verb_in_the_footer_parses_back_to_the_same_id():
    footer = contract_footer("launch-12")
    verbs = [
        chunk.split("]")[0].lstrip("[").split()[0] for chunk in footer.removeprefix("Reply: ").split(" | ")
    ]
    assert set(verbs) == set(MSG_ID_VERBS)
    for verb in verbs:
        assert parse_header(f"[{verb} launch-12] x").refers_to == "launch-12"


def test_strip_header_keeps_the_words_and_drops_the_bracket():
    assert strip_header("[CLAIM todo-3] On it, @owner.") == "On it, @owner."
    assert strip_header("[RESULT todo-3]\nHere is the plan.\n1. Go.") == "Here is the plan.\n1. Go."
    assert strip_header("[DECLINE todo-3] busy\nsorry") == "busy\nsorry"
    # A refer without its name would point nowhere, so the name stays in the text.
    assert strip_header("[REFER notes/plan.md] see section 2") == "notes/plan.md: see section 2"
    assert strip_header("[REFER notes/plan.md]") == "notes/plan.md"


def test_format_header_refuses_what_the_parser_would_not_accept():
    assert format_header("CLAIM", "todo-3", "  On   it  ") == "[CLAIM todo-3] On it"
    with pytest.raises(ValueError):
        format_header("CLAIM", "Todo-3")
    with pytest.raises(ValueError):
        format_header("SHOUT", "todo-3")
    with pytest.raises(ValueError):
        format_header("REFER", "two words")


# Property tests -------------------------------------------------------------------------

msg_ids = st.from_regex(r"[a-z0-9-]{1,20}-[0-9]{1,6}", fullmatch=True)
refer_names = st.from_regex(r"[A-Za-z0-9_./:-]{1,40}", fullmatch=True)
# A reason is anything on one line; the parser trims it.
reasons = st.text(st.characters(blacklist_characters="\n"), max_size=80)
bodies = st.text(max_size=200)


@settings(max_examples=250, deadline=None, database=None)
@given(st.text(max_size=300))
@example("[CLAIM todo-3]")
@example("[\n")
@example("[REFER ]]")
@example("\ud800")
def test_the_parser_never_raises_on_any_text(text):
    header = parse_header(text)
    assert header is None or header.kind in set(VERB_KINDS.values())
    stripped = strip_header(text)
    assert isinstance(stripped, str)
    if header is None:
        assert stripped == text


@settings(max_examples=150, deadline=None, database=None)
@given(st.sampled_from(MSG_ID_VERBS), msg_ids, reasons, st.one_of(st.none(), bodies))
def test_generated_valid_headers_round_trip(verb, msg_id, reason, body):
    text = f"[{verb} {msg_id}] {reason}" + ("" if body is None else f"\n{body}")
    header = parse_header(text)
    assert header == Header(kind=VERB_KINDS[verb], refers_to=msg_id, reason=reason.strip(), verb=verb)
    # What format_header writes, parse_header reads back.
    assert parse_header(format_header(verb, msg_id, reason)).refers_to == msg_id
    head = reason.strip()
    expected = head if body is None else (f"{head}\n{body}" if head else body)
    assert strip_header(text) == expected


@settings(max_examples=100, deadline=None, database=None)
@given(refer_names, reasons)
def test_generated_refer_headers_round_trip(name, rest):
    header = parse_header(f"[REFER {name}] {rest}")
    assert header == Header(kind="refer", refers_to="", reason=name, verb="REFER")
    assert strip_header(f"[REFER {name}] {rest}").startswith(name)


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.sampled_from(MSG_ID_VERBS),
    msg_ids,
    st.text(st.characters(blacklist_characters="\n"), max_size=40).filter(lambda s: parse_header(s) is None),
)
def test_a_header_after_the_first_line_never_counts(verb, msg_id, first_line):
    assert parse_header(f"{first_line}\n[{verb} {msg_id}] hi") is None


@pytest.mark.parametrize(
    "text, header, body",
    [
        ("[ACK:todo-3] seen", Header("say", "todo-3", "seen", "ACK"), "seen"),
        ("[ACK:todo-3] [from Hugin]", Header("say", "todo-3", "", "ACK", sender="Hugin"), ""),
        ("[CLAIM todo-3] [from Hugin] mine", Header("claim", "todo-3", "mine", "CLAIM", sender="Hugin"), "mine"),
        ("[REFER notes.md] [from Munin] see it", Header("refer", "", "notes.md", "REFER", sender="Munin"), "notes.md: see it"),
    ],
)
def test_the_protocols_ack_colon_and_from_sender_forms_are_read(text, header, body):
    assert parse_header(text) == header
    assert strip_header(text) == body
