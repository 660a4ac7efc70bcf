"""Brains: the mock brain (the offline default) and the real providers against local fakes.

The real providers are tested against HTTP servers on 127.0.0.1 that speak each
provider's wire format (tests/fakes/providers.py); the SDKs themselves are not mocked.
None of these tests touch the database.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from flock.brains import (
    BrainReply,
    BrainRequest,
    ErrorBrain,
    MockBrain,
    Persona,
    get_brain,
    parse_header,
    providers,
    system_prompt,
)
from flock.brains.prompts import conversation, estimate_tokens
from tests.fakes.providers import (  # noqa: F401
    FakeAnthropic,
    FakeOpenAI,
    anthropic_fake,
    openai_fake,
    unused_port,
)

ROOT = Path(__file__).resolve().parents[2]

PEPPER = Persona(
    name="Pepper",
    epithet="the Quick-Beak",
    strength="code: writing, debugging and testing scripts",
    backstory="Pepper once fixed a bug mid-flight.",
    persona="You are Pepper, the flock's coder.",
    voice="Fast and punchy: short sentences, the odd exclamation.",
    relationships={"Hugin": "Fetches docs for Pepper at speed; Pepper never reads past the first example."},
)
ELDER = Persona(
    name="Elder",
    epithet="the Grey-Wing",
    strength="synthesis: merging answers and reconciling views",
    backstory="Elder has seen every nest built twice.",
    persona="You are Elder, who merges the flock's work.",
    voice="Unhurried, warm, a touch old-fashioned; long sentences that land on a short verdict.",
    relationships={"Boss": "Lets Boss count; keeps the judgement for itself."},
)
HUGIN = Persona(
    name="Hugin",
    epithet="the Far-Flyer",
    strength="research: finding sources and comparing options",
    backstory="Hugin flies out at dawn.",
    persona="You are Hugin, the researcher.",
    voice="Quick, curious, a little breathless.",
    relationships={
        "Munin": "Its twin: Hugin flies, Munin remembers, and they bicker the way only siblings can."
    },
    openers=("Back from the far field.",),
    closers=("Sources on request.",),
)
SPLIT_ITEM = "Draft the launch post, email the beta list, and book the venue for Friday"
JUDGMENT_ITEM = "Should we use Postgres or SQLite for the crow tracker?"
SIMPLE_ITEM = "Fix the login bug on Safari"


def ask(
    persona: Persona = HUGIN,
    task: str = "answer",
    *,
    messages: list | None = None,
    max_tokens: int = 400,
    system: str = "",
    **context,
) -> BrainRequest:
    return BrainRequest(
        persona=persona,
        task=task,
        messages=messages or [],
        max_tokens=max_tokens,
        context=context,
        system=system,
    )


def think(request: BrainRequest) -> BrainReply:
    reply = MockBrain().think(request)
    assert isinstance(reply, BrainReply)
    return reply


# The mock brain ----------------------------------------------------------------------------


def test_the_mock_is_deterministic_for_the_same_request():
    request = ask(item_text=SIMPLE_ITEM)
    first, second = think(request), get_brain("mock").think(request)
    assert first.ok and first.text == second.text
    assert (first.tokens_in, first.tokens_out) == (second.tokens_in, second.tokens_out)
    assert think(ask(item_text=SIMPLE_ITEM + " today")).text != first.text


def test_the_mock_is_deterministic_across_processes():
    # Python's hash() is salted per process; the mock must not depend on it.
    code = (
        "from flock.brains import MockBrain, BrainRequest, Persona\n"
        "p = Persona('Hugin', 'the Far-Flyer', 'research', 'b', 'p', 'quick, curious', {})\n"
        "print(MockBrain().think(BrainRequest(p, 'answer', [], 300, {'item_text': 'Plan the trip'})).text)"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONHASHSEED": seed, "DJANGO_SETTINGS_MODULE": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1 and "Plan the trip" in outputs.pop()


def test_two_personas_answer_the_same_item_in_different_voices():
    pepper, elder = think(ask(PEPPER, item_text=SIMPLE_ITEM)), think(ask(ELDER, item_text=SIMPLE_ITEM))
    assert pepper.ok and elder.ok
    assert pepper.text != elder.text
    # Both still answer the item itself.
    assert "login bug" in pepper.text and "login bug" in elder.text


def test_a_personas_own_openers_and_closers_colour_its_text():
    text = think(ask(HUGIN, item_text=SIMPLE_ITEM)).text
    lines = text.splitlines()
    assert lines[0] == "Back from the far field."
    assert lines[-1] == "Sources on request."


def test_every_built_in_crow_answers_in_its_own_words():
    personas = pytest.importorskip("flock.personas")
    texts = set()
    for crow in personas.FLOCK:
        persona = Persona(
            crow["name"],
            crow["epithet"],
            crow["strength"],
            crow["backstory"],
            crow["persona"],
            crow["voice"],
            crow["relationships"],
            tuple(crow.get("openers", ())),
            tuple(crow.get("closers", ())),
        )
        reply = think(ask(persona, item_text=SIMPLE_ITEM))
        assert reply.ok
        texts.add(reply.text)
    assert len(texts) == len(personas.FLOCK)


def triage(item: str) -> dict:
    reply = think(ask(ELDER, "triage", item_text=item, max_tokens=300))
    assert reply.ok
    return json.loads(reply.text)


def test_triage_splits_an_item_with_several_parts_into_its_own_words():
    call = triage(SPLIT_ITEM)
    assert call["mode"] == "split"
    assert call["subtasks"] == ["Draft the launch post", "email the beta list", "book the venue for Friday"]
    assert call["task_type"] == "writing"
    assert "three" in call["reason"].lower()


def test_triage_sends_a_judgment_call_to_a_murder():
    call = triage(JUDGMENT_ITEM)
    assert call["mode"] == "murder" and call["subtasks"] == []
    assert "should" in call["reason"]


def test_triage_keeps_a_simple_item_solo():
    call = triage(SIMPLE_ITEM)
    assert call == {"mode": "solo", "task_type": "code", "subtasks": [], "reason": call["reason"]}
    assert call["reason"].endswith(".")


@pytest.mark.parametrize(
    "item, mode",
    [
        ("Launch prep: write the announcement; schedule the tweets; clean the signup csv", "split"),
        ("Fix the flaky test and write a changelog entry for it", "split"),
        ("Buy milk, eggs and bread", "solo"),
        ("Compare Postgres and MySQL", "murder"),
        ("Which hiking trail is best near Oslo, given we have 3 hours?", "murder"),
        ("Tabs vs spaces for the new repo", "murder"),
        ("Decide on a venue", "murder"),
        ("Say hello to the flock", "solo"),
    ],
)
def test_triage_mode_follows_the_shape_of_the_item(item, mode):
    assert triage(item)["mode"] == mode


@pytest.mark.parametrize(
    "item, task_type",
    [
        ("Fix the crash in the export script", "code"),
        ("Write a unit test for the parser", "code"),
        ("Research how crows recognise faces", "research"),
        ("Find three good sources on corvid memory", "research"),
        ("Plan the offsite schedule", "planning"),
        ("Organise the team calendar", "planning"),
        ("Total the numbers in the expenses spreadsheet", "data"),
        ("Clean up the signup csv data", "data"),
        ("Draft a thank-you email to the volunteers", "writing"),
        ("Write a blog post about the launch", "writing"),
        ("Say hello to the flock", "chat"),
    ],
)
def test_triage_task_type_comes_from_the_items_words(item, task_type):
    assert triage(item)["task_type"] == task_type


@hsettings(max_examples=150, deadline=None, database=None)
@given(st.text(max_size=300))
def test_triage_is_always_valid_json_in_the_contract(item):
    reply = think(ask(ELDER, "triage", item_text=item, max_tokens=300))
    assert reply.ok
    call = json.loads(reply.text)
    assert set(call) == {"mode", "task_type", "subtasks", "reason"}
    assert call["mode"] in ("solo", "split", "murder")
    assert call["task_type"] in ("writing", "research", "code", "planning", "data", "chat")
    assert isinstance(call["reason"], str) and call["reason"]
    if call["mode"] == "split":
        assert 2 <= len(call["subtasks"]) <= 4
        flat = " ".join(item.split())
        for subtask in call["subtasks"]:
            for piece in subtask.split("; "):
                assert piece in flat
    else:
        assert call["subtasks"] == []


def test_an_answer_restates_the_goal_and_gives_two_to_four_steps():
    text = think(ask(PEPPER, item_text="Please fix the login bug on Safari.")).text
    assert "Goal: Fix the login bug on Safari." in text
    steps = [line for line in text.splitlines() if line[:2] in ("1.", "2.", "3.", "4.", "5.")]
    assert 2 <= len(steps) <= 4
    assert any("login bug" in s for s in steps)


def test_a_split_items_answer_walks_through_its_parts():
    text = think(ask(PEPPER, item_text=SPLIT_ITEM)).text
    for part in ("Draft the launch post", "Email the beta list", "Book the venue for Friday"):
        assert part in text


def test_a_subtask_answers_its_part_and_knows_the_whole():
    text = think(ask(PEPPER, "subtask", item_text=SPLIT_ITEM, subtask="email the beta list")).text
    assert "Goal: Email the beta list." in text
    assert "My part of" in text


def test_merge_combines_the_parts_naming_the_crows():
    parts = [
        {"crow": "Pepper", "text": "Drafted the post: short, with the launch date up front."},
        {"crow": "Inky", "text": "Emailed the beta list with the invite link."},
    ]
    text = think(ask(ELDER, "merge", item_text=SPLIT_ITEM, parts=parts)).text
    assert "Pepper" in text and "Inky" in text
    assert "launch date up front" in text and "invite link" in text


def test_synthesise_weighs_the_readings_and_makes_a_call():
    parts = [
        {"crow": "Hugin", "text": "Postgres: it scales and the team knows it."},
        {"crow": "Munin", "text": "SQLite: one file, zero ops, enough for three users."},
        "Rook would start with SQLite and plan a migration path.",
    ]
    text = think(ask(ELDER, "synthesise", item_text=JUDGMENT_ITEM, parts=parts)).text
    assert "Hugin" in text and "Munin" in text
    assert "My call: go with" in text


def test_banter_is_one_line_to_the_listener_drawing_on_a_recent_event():
    events = [{"event": "crow.landed", "crow": "Munin", "ok": False, "error": "timeout"}]
    reply = think(ask(HUGIN, "banter", listener="Munin", recent_events=events, max_tokens=60))
    assert reply.ok and "\n" not in reply.text
    assert reply.text.startswith("@Munin,")
    assert "Munin came back empty-clawed" in reply.text
    # The twin line ("bicker") reads as rivalry; a different listener and tone read differently.
    assert reply.text != think(ask(PEPPER, "banter", listener="Hugin", max_tokens=60)).text


def test_a_banter_line_does_not_speak_of_its_own_crow_in_the_third_person():
    took_off = {"event": "crow.flying", "crow": "Munin"}
    answered = {"event": "item.answered", "crows": ["Hugin"]}
    reply = think(ask(HUGIN, "banter", listener="Munin", recent_events=[took_off, answered], max_tokens=60))
    assert "Munin took off" in reply.text and "Hugin" not in reply.text
    alone = think(ask(HUGIN, "banter", listener="Munin", recent_events=[answered], max_tokens=60))
    assert "I turned in an answer" in alone.text and "Hugin" not in alone.text


REQUEST = [{"role": "user", "content": "@Pepper can you write a script that dedupes the signup csv?"}]


@pytest.mark.parametrize(
    "expect, kind",
    [
        ("claim", "claim"),
        ("deliver", "deliver"),
        ("decline", "decline"),
        ("say", "say"),
        ("answer", "deliver"),
    ],
)
def test_a_chat_turn_obeys_the_header_grammar(expect, kind):
    reply = think(ask(PEPPER, "chat", messages=REQUEST, msg_id="todo-3", requester="owner", expect=expect))
    header = parse_header(reply.text)
    assert header is not None and header.kind == kind and header.refers_to == "todo-3"
    assert "@owner" in reply.text.splitlines()[0]
    if kind in ("claim", "deliver"):
        assert "dedupes the signup csv" in reply.text


def test_a_chat_turn_claims_a_request_addressed_to_it_then_delivers_it():
    claim = think(ask(PEPPER, "chat", messages=REQUEST, msg_id="todo-3", requester="owner"))
    assert parse_header(claim.text).kind == "claim"
    follow_up = REQUEST + [{"role": "assistant", "content": claim.text}]
    deliver = think(ask(PEPPER, "chat", messages=follow_up, requester="owner"))
    header = parse_header(deliver.text)
    assert header.kind == "deliver" and header.refers_to == "todo-3"
    assert deliver.text.split("\n", 1)[0].startswith("[RESULT todo-3] @owner")


def test_a_nudge_on_a_claimed_request_gets_the_delivery():
    claim = think(ask(PEPPER, "chat", messages=REQUEST, msg_id="todo-3", requester="owner"))
    nudged = REQUEST + [
        {"role": "assistant", "content": claim.text},
        {"role": "user", "content": "[NUDGE todo-3] [nudge 1/3] You said you would dedupe it."},
    ]
    reply = think(ask(PEPPER, "chat", messages=nudged, requester="owner"))
    header = parse_header(reply.text)
    assert header.kind == "deliver" and header.refers_to == "todo-3"
    # The delivery answers the request, not the nudge.
    assert "dedupes the signup csv" in reply.text


def test_a_chat_turn_not_addressed_to_the_crow_is_just_talk():
    chatter = [{"role": "user", "content": "@Inky please tighten the launch copy"}]
    reply = think(ask(PEPPER, "chat", messages=chatter, msg_id="todo-4", requester="owner"))
    assert parse_header(reply.text).kind == "say"
    no_id = think(ask(PEPPER, "chat", messages=[{"role": "user", "content": "nice weather"}]))
    assert no_id.ok and parse_header(no_id.text) is None


def test_the_fail_rate_fails_a_stable_share_of_requests(settings):
    settings.CROWS_MOCK_FAIL_RATE = 0.3
    replies = [think(ask(item_text=f"Plan the trip number {n}")) for n in range(400)]
    failed = [r for r in replies if not r.ok]
    assert 0.2 < len(failed) / len(replies) < 0.4
    assert all("simulated failure" in r.error and "CROWS_MOCK_FAIL_RATE" in r.error for r in failed)
    assert all(r.text == "" and r.tokens_out == 0 for r in failed)
    # The same request fails (or not) every time: runs are reproducible.
    again = [think(ask(item_text=f"Plan the trip number {n}")).ok for n in range(400)]
    assert again == [r.ok for r in replies]
    settings.CROWS_MOCK_FAIL_RATE = 1.0
    assert not think(ask(item_text="anything")).ok
    settings.CROWS_MOCK_FAIL_RATE = 0.0
    assert all(think(ask(item_text=f"Plan the trip number {n}")).ok for n in range(50))


def test_the_mock_latency_is_honoured(settings):
    settings.CROWS_MOCK_LATENCY_MS = 40
    started = time.perf_counter()
    reply = think(ask(item_text=SIMPLE_ITEM))
    assert reply.ok and reply.latency_ms >= 40
    assert time.perf_counter() - started >= 0.04


def test_token_counts_are_plausible_and_respect_max_tokens():
    request = ask(item_text=SPLIT_ITEM)
    reply = think(request)
    assert reply.tokens_out == estimate_tokens(reply.text)
    assert abs(reply.tokens_out - len(reply.text.split()) * 1.3) <= 1
    prompt = system_prompt(request) + " ".join(t["content"] for t in conversation(request))
    assert reply.tokens_in == pytest.approx(len(prompt.split()) * 1.3, abs=3)
    small = think(ask(PEPPER, "chat", messages=REQUEST, msg_id="todo-3", expect="deliver", max_tokens=12))
    assert small.tokens_out <= 12
    assert parse_header(small.text).kind == "deliver"


def test_the_mock_never_raises_on_odd_input():
    odd = BrainRequest(
        persona=HUGIN,
        task="chat",
        messages=[None, {"role": "tool"}, {"content": 5}, "hi"],
        max_tokens=50,
        context={"msg_id": "NOT AN ID", "parts": object(), "expect": "shout"},
    )
    assert think(odd).ok
    assert not think(ask(task="dance")).ok
    assert "max_tokens" in think(ask(max_tokens=0)).error


def test_the_mock_flies_in_well_under_five_milliseconds():
    brain = get_brain("mock")
    samples = []
    for n in range(200):
        started = time.perf_counter()
        brain.think(ask(item_text=f"{SPLIT_ITEM} {n}"))
        samples.append((time.perf_counter() - started) * 1000)
    assert statistics.median(samples) < 5


# Choosing a brain -------------------------------------------------------------------------


def test_get_brain_reads_the_spec(settings):
    assert isinstance(get_brain("mock"), MockBrain)
    assert get_brain("mock:fast").think(ask(item_text="x")).model == "fast"
    settings.CROWS_BRAIN = "mock"
    assert isinstance(get_brain(""), MockBrain)
    assert (get_brain("openai:gpt-4o-mini").provider, get_brain("openai:gpt-4o-mini").model) == (
        "openai",
        "gpt-4o-mini",
    )
    # Ollama tags have colons of their own.
    assert get_brain("openai:llama3.1:8b").model == "llama3.1:8b"
    assert get_brain("anthropic:claude-sonnet-4-6").provider == "anthropic"


@pytest.mark.parametrize(
    "spec, words",
    [
        ("gemini:pro", "Unknown brain provider 'gemini'"),
        ("openai:", "names no model"),
        ("anthropic", "names no model"),
    ],
)
def test_an_unusable_spec_gives_a_brain_that_says_why(spec, words):
    brain = get_brain(spec)
    assert isinstance(brain, ErrorBrain)
    reply = brain.think(ask(item_text="x"))
    assert not reply.ok and words in reply.error


@pytest.mark.parametrize("spec, words", [("bogus", "Unknown brain provider 'bogus'"), ("openai:", "names no model"),
                                         ("anthropic", "names no model"), ("script:", "needs a path")])
def test_the_start_up_check_refuses_a_spec_that_names_no_brain(spec, words):
    from flock.brains import BrainSpecError, check_brain_spec

    with pytest.raises(BrainSpecError, match=words):
        check_brain_spec(spec)
    check_brain_spec("mock")
    check_brain_spec("openai:gpt-4o-mini")  # named, not called: no key is needed to start


def test_the_system_prompt_carries_persona_voice_rules_and_footer():
    prompt = system_prompt(
        ask(
            PEPPER,
            "chat",
            messages=REQUEST,
            msg_id="todo-3",
            requester="owner",
            system="Budget: 3 exchanges left.",
        )
    )
    assert "You are Pepper the Quick-Beak" in prompt
    assert "Fast and punchy" in prompt
    assert "Budget: 3 exchanges left." in prompt
    assert "Never invent sources" in prompt
    assert prompt.endswith("[DECLINE todo-3] | [NO-ACTION todo-3].")


def test_the_conversation_alternates_and_ends_on_the_users_turn():
    turns = conversation(
        ask(
            messages=[
                {"role": "assistant", "content": "[CLAIM todo-3] mine"},
                {"role": "user", "content": "a"},
                {"role": "user", "content": "b"},
                {"role": "assistant", "content": "c"},
                {"role": "user", "content": ""},
            ],
            item_text="x",
        )
    )
    roles = [t["role"] for t in turns]
    assert roles[0] == "user" and roles[-1] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert {"role": "user", "content": "a\n\nb"} in turns


# Real providers, against local fakes ------------------------------------------------------

WIRES = {
    "openai": (FakeOpenAI, "openai:gpt-4o-mini", "CROWS_OPENAI"),
    "anthropic": (FakeAnthropic, "anthropic:claude-sonnet-4-6", "CROWS_ANTHROPIC"),
}


@pytest.fixture(params=sorted(WIRES))
def wire(request, settings, monkeypatch):
    """(fake server, brain spec) with settings pointing the provider at the fake."""
    name = request.param
    fake = request.getfixturevalue(f"{name}_fake")
    _, spec, prefix = WIRES[name]
    setattr(settings, f"{prefix}_BASE_URL", fake.base_url)
    setattr(settings, f"{prefix}_API_KEY", fake.api_key)
    settings.CROWS_BRAIN_TIMEOUT_S = 2.0
    settings.CROWS_BRAIN_RETRIES = 1
    monkeypatch.setattr(providers, "_BACKOFF_S", 0.02)
    yield fake, spec
    providers.reset_clients()


def test_a_provider_call_has_the_real_wire_shape_and_reads_usage(wire):
    fake, spec = wire
    fake.reply_text = "[CLAIM todo-3] On it, @owner — deduping the signup csv."
    request = ask(PEPPER, "chat", messages=REQUEST, msg_id="todo-3", requester="owner", max_tokens=300)
    reply = get_brain(spec).think(request)
    assert reply.ok, reply.error
    assert reply.text == fake.reply_text
    assert (reply.tokens_in, reply.tokens_out) == fake.last_usage
    assert (reply.provider, reply.model) == tuple(spec.split(":", 1))
    assert fake.problems == []
    (sent,) = fake.requests
    assert sent.body["model"] == spec.split(":", 1)[1]
    if fake.name == "openai":
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {fake.api_key}"
        assert sent.body["messages"][0] == {"role": "system", "content": system_prompt(request)}
        assert sent.body["messages"][1:] == REQUEST
        assert sent.body["max_tokens"] == 300
    else:
        assert sent.path == "/v1/messages"
        assert sent.headers["x-api-key"] == fake.api_key
        assert sent.headers["anthropic-version"]
        assert sent.body["system"] == system_prompt(request)
        assert sent.body["messages"] == REQUEST
        assert sent.body["max_tokens"] == 300


def test_a_server_error_is_retried_a_bounded_number_of_times(wire, settings):
    fake, spec = wire
    settings.CROWS_BRAIN_RETRIES = 2
    fake.behaviour = "error"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok
    assert len(fake.requests) == 3
    assert f"{fake.name} brain" in reply.error and "HTTP 500" in reply.error and "3 attempts" in reply.error


def test_a_retry_after_a_server_error_can_succeed(wire):
    fake, spec = wire
    fake.script = ["error"]
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert reply.ok and len(fake.requests) == 2


def test_a_rejected_key_is_not_retried(wire):
    fake, spec = wire
    fake.behaviour = "unauthorized"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok and "API key was rejected" in reply.error
    assert len(fake.requests) == 1


def test_a_slow_server_times_out_within_the_bound(wire, settings):
    fake, spec = wire
    settings.CROWS_BRAIN_TIMEOUT_S = 0.4
    settings.CROWS_BRAIN_RETRIES = 1
    # A first, quick call pays the one-off SDK import, which is not network time.
    assert get_brain(spec).think(ask(item_text="warm up")).ok
    fake.behaviour, fake.delay_s = "slow", 5.0
    started = time.perf_counter()
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    elapsed = time.perf_counter() - started
    assert not reply.ok
    assert "timed out" in reply.error or "no answer within" in reply.error
    # Never beyond timeout x (retries + 1) = 0.8 s, give or take scheduling.
    assert elapsed < 0.8 + 0.3
    assert 1 <= len(fake.requests) - 1 <= 2


def test_an_unreachable_host_fails_quickly_and_clearly(wire, settings, unused_port):  # noqa: F811
    fake, spec = wire
    prefix = WIRES[fake.name][2]
    base = f"http://127.0.0.1:{unused_port}" + ("/v1" if fake.name == "openai" else "")
    setattr(settings, f"{prefix}_BASE_URL", base)
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok
    assert "could not connect" in reply.error and f"127.0.0.1:{unused_port}" in reply.error


def test_a_missing_key_fails_before_any_request(wire, settings, monkeypatch):
    fake, spec = wire
    prefix = WIRES[fake.name][2]
    setattr(settings, f"{prefix}_API_KEY", "")
    monkeypatch.delenv(f"{fake.name.upper()}_API_KEY", raising=False)
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok
    assert "no API key" in reply.error and f"{prefix}_API_KEY" in reply.error
    assert fake.requests == []


def test_the_key_falls_back_to_the_sdks_environment_variable(wire, settings, monkeypatch):
    fake, spec = wire
    setattr(settings, f"{WIRES[fake.name][2]}_API_KEY", "")
    monkeypatch.setenv(f"{fake.name.upper()}_API_KEY", fake.api_key)
    assert get_brain(spec).think(ask(item_text=SIMPLE_ITEM)).ok


def test_a_rate_limit_is_waited_out_as_the_providers_retry_after_asks(wire):
    # CROWS_BRAIN_RETRIES is 1, but a 429 is retried for as long as the deadline allows
    # (timeout 2 s x 2 attempts), each time after the Retry-After the provider asked for.
    fake, spec = wire
    fake.retry_after = "0.6"
    fake.script = ["rate_limited", "rate_limited", "rate_limited"]
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert reply.ok, reply.error
    assert len(fake.requests) == 4
    gaps = [b.received_at - a.received_at for a, b in itertools.pairwise(fake.requests)]
    # The backoff alone is 0.02 s here, doubling: only the provider's Retry-After makes each
    # pause 0.6 s (time.sleep never wakes early).
    assert min(gaps) >= 0.59


def test_a_rate_limit_longer_than_the_time_left_is_not_waited_for_and_says_what_helps(wire):
    fake, spec = wire
    fake.behaviour, fake.retry_after = "rate_limited", "30"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok and len(fake.requests) == 1
    assert "HTTP 429" in reply.error and "asked to wait 30 s" in reply.error
    assert "CROWS_MAX_IN_FLIGHT" in reply.error


def test_a_rejected_key_names_the_variable_it_came_from(wire, settings, monkeypatch):
    fake, spec = wire
    prefix = WIRES[fake.name][2]
    fake.behaviour = "unauthorized"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert f"the key came from {prefix}_API_KEY" in reply.error
    setattr(settings, f"{prefix}_API_KEY", "")
    monkeypatch.setenv(f"{fake.name.upper()}_API_KEY", fake.api_key)
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert f"the key came from {fake.name.upper()}_API_KEY" in reply.error


def test_an_unknown_model_names_the_url_called_and_how_the_base_url_should_look(wire):
    fake, spec = wire
    fake.behaviour = "not_found"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok and "HTTP 404 at http://127.0.0.1:" in reply.error and fake.path in reply.error
    assert "check the model's name" in reply.error
    assert ("ending in /v1" if fake.name == "openai" else "without /v1") in reply.error


def test_a_model_that_spent_its_tokens_thinking_says_so(wire):
    fake, spec = wire
    fake.behaviour = "thinking"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM, max_tokens=60))
    assert not reply.ok and providers.OUT_OF_TOKENS in reply.error and "(60;" in reply.error
    assert "reasoning model" in reply.error and len(fake.requests) == 1


def test_a_web_page_instead_of_the_api_is_named_as_such(wire):
    fake, spec = wire
    fake.behaviour = "html"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok and "not the API's JSON" in reply.error and "web page" in reply.error


@pytest.mark.parametrize("behaviour, words", [("malformed", "odd response"), ("odd", "no"), ("empty", "")])
def test_a_broken_response_is_an_error_not_an_exception(wire, behaviour, words):
    fake, spec = wire
    fake.behaviour = behaviour
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert not reply.ok and reply.text == ""
    assert reply.error.startswith(f"{fake.name} brain") and words in reply.error
    assert len(fake.requests) == 1  # a broken body is not retried


def test_a_response_without_usage_gets_estimated_tokens(wire):
    fake, spec = wire
    fake.behaviour = "no_usage"
    reply = get_brain(spec).think(ask(item_text=SIMPLE_ITEM))
    assert reply.ok and reply.tokens_in > 0 and reply.tokens_out == estimate_tokens(reply.text)


def test_one_client_is_shared_per_endpoint_and_key(wire):
    fake, spec = wire
    brain = get_brain(spec)
    assert brain.think(ask(item_text="one")).ok and brain.think(ask(item_text="two")).ok
    assert len([k for k in providers._clients if k[0] == fake.name]) == 1


def test_mock_triage_splits_a_colon_list_of_nouns_under_one_job():
    from flock.brains.mock_text import triage

    mode, task_type, subtasks, _ = triage("plan the offsite: venue, agenda, budget")
    assert (mode, task_type) == ("split", "planning")
    assert subtasks == ["plan the offsite: venue", "plan the offsite: agenda", "plan the offsite: budget"]
    assert triage("buy milk, eggs and bread")[0] == "solo"


def test_the_mock_brains_claim_lines_ask_no_question():
    # Jev reads a question as a request and wins over the CLAIM header when sure: a
    # claim line with a question would lose the claim and leave the request open.
    from flock.brains.mock_voice import _CLAIMS

    assert [line for lines in _CLAIMS.values() for line in lines if "?" in line] == []
