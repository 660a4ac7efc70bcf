"""Jev's optional LLM second opinion, against local fake providers speaking the real wire formats.

An answer in the unsure band is put to the configured brain with the question's choices and
rules when CROWS_JEV_LLM is on and the brain is real; its answer is logged as source ``llm``
beside the local probabilities. Offline, or with the switch off, nothing changes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flock.actions import log_jev_tag
from flock.brains import providers
from flock.jev import Jev, llm
from flock.jev.answers import BAND_HIGH, BAND_UNSURE
from flock.models import JevTag
from tests.fakes.providers import FakeAnthropic, FakeOpenAI, anthropic_fake, openai_fake  # noqa: F401
from tests.support.jev_tone import COOL, WARM

WIRES = {
    "openai": ("openai:gpt-test", "CROWS_OPENAI"),
    "anthropic": ("anthropic:claude-test", "CROWS_ANTHROPIC"),
}



@pytest.fixture
def colour(tmp_path: Path) -> Jev:
    """A question whose high band no answer reaches, so every answer is unsure."""
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"text": t, "tone": "warm"} for t in WARM] + [{"text": t, "tone": "cool"} for t in COOL]
    (data / "colour.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "colour.json").write_text(
        json.dumps(
            {
                "label_field": "tone",
                "high_threshold": 1.0,
                "choices": ["warm", "cool"],
                "description": "The temperature a colour or scene evokes.",
                "rules": ["warm: reds, oranges, fire, sun.", "cool: blues, ice, night, water."],
            }
        )
    )
    llm.forget()
    yield Jev(data_dir=data, cache_dir=tmp_path / "cache")
    llm.forget()


@pytest.fixture(params=sorted(WIRES))
def wire(request, settings, monkeypatch):
    """(fake server, spec) with CROWS_BRAIN pointing at the fake and the switch on."""
    name = request.param
    fake = request.getfixturevalue(f"{name}_fake")
    spec, prefix = WIRES[name]
    setattr(settings, f"{prefix}_BASE_URL", fake.base_url)
    setattr(settings, f"{prefix}_API_KEY", fake.api_key)
    settings.CROWS_BRAIN = spec
    settings.CROWS_BRAIN_TIMEOUT_S = 2.0
    settings.CROWS_BRAIN_RETRIES = 0
    settings.CROWS_JEV_LLM = True
    monkeypatch.setattr(providers, "_BACKOFF_S", 0.02)
    yield fake, spec
    providers.reset_clients()


def sent_text(fake) -> str:
    """Everything the fake was sent (system and messages) as one string."""
    (recorded,) = fake.requests
    return json.dumps(recorded.body)


def test_an_unsure_answer_is_settled_by_the_model_with_the_choices_and_rules(colour: Jev, wire) -> None:
    fake, _ = wire
    fake.reply_text = "cool"
    answer = colour.ask("colour", "a red sunset over the desert")
    assert answer.source == "llm"
    assert answer.choice == "cool" and answer.band == BAND_HIGH
    # The local model's view stays beside it.
    assert answer.local_choice == "warm"
    assert set(answer.probs) == {"warm", "cool"} and answer.probs["warm"] > answer.probs["cool"]
    # The tag log can tell which model decided.
    _, spec = wire
    assert answer.version.endswith(f"+{spec}")
    assert fake.problems == []
    sent = sent_text(fake)
    for needle in ("warm, cool", "reds, oranges, fire, sun", "a red sunset over the desert", "colour"):
        assert needle in sent
    # Jev is no crow, and its prompt does not call it one before saying so.
    assert "a crow in the flock" not in sent and "You are not a crow" in sent


@pytest.mark.django_db(transaction=True)
def test_a_second_opinion_is_a_row_in_the_flight_log(colour: Jev, wire) -> None:
    import time

    from flock.models import Flight

    fake, spec = wire
    fake.reply_text = "cool"
    assert colour.ask("colour", "a red sunset over the sea").source == "llm"
    # Written by the call's own thread just after the reply: wait for it.
    deadline = time.monotonic() + 5
    while not Flight.objects.filter(crow="Jev").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    flight = Flight.objects.get(crow="Jev")
    assert (f"{flight.provider}:{flight.model}", flight.task, flight.ok) == (spec, "classify (colour)", True)
    assert "a red sunset over the sea" in flight.prompt


def test_the_same_text_is_not_asked_twice(colour: Jev, wire) -> None:
    fake, _ = wire
    fake.reply_text = "Warm."
    first = colour.ask("colour", "a glowing ember")
    second = colour.ask("colour", "a glowing ember")
    assert first.choice == second.choice == "warm" and first.source == second.source == "llm"
    assert len(fake.requests) == 1


@pytest.mark.parametrize("behaviour", ["error", "unauthorized", "malformed", "empty", "odd"])
def test_a_failed_call_leaves_the_local_answer(colour: Jev, wire, behaviour: str) -> None:
    fake, _ = wire
    fake.behaviour = behaviour
    answer = colour.ask("colour", "snow on pine trees")
    assert (answer.source, answer.choice, answer.band) == ("local", "cool", BAND_UNSURE)


@pytest.mark.parametrize("reply", ["I am not sure", "warm or cool, hard to say", "lukewarm"])
def test_a_reply_naming_no_single_choice_leaves_the_local_answer(colour: Jev, wire, reply: str) -> None:
    fake, _ = wire
    fake.reply_text = reply
    answer = colour.ask("colour", "snow on pine trees")
    assert (answer.source, answer.choice) == ("local", "cool")


def test_the_wait_is_bounded_by_the_brain_timeout(colour: Jev, wire, settings) -> None:
    fake, _ = wire
    fake.behaviour = "slow"
    fake.delay_s = 5.0
    # Long enough for the request to reach the fake on a busy CI machine (0.3 s once timed
    # out before it was even sent), far short of the model's late answer.
    settings.CROWS_BRAIN_TIMEOUT_S = 1.0
    answer = colour.ask("colour", "a silver moon")
    # The model's late answer is not waited for: the local answer stands.
    assert (answer.source, answer.choice, answer.band) == ("local", "cool", BAND_UNSURE)
    assert len(fake.requests) == 1


def test_a_second_opinion_is_one_attempt_whatever_the_retries_allow(colour: Jev, wire, settings) -> None:
    """A failed second opinion is not retried: the tag waits for one attempt, so a retry
    would be a billed call whose answer nobody reads."""
    fake, _ = wire
    fake.behaviour = "error"  # a 500, which a crow's flight would retry
    settings.CROWS_BRAIN_RETRIES = 2
    answer = colour.ask("colour", "a silver moon")
    assert (answer.source, answer.choice) == ("local", "cool")
    time.sleep(0.3)  # room for a retry's backoff, had there been one
    assert len(fake.requests) == 1


def test_a_sure_answer_is_never_sent(colour: Jev, wire, tmp_path: Path) -> None:
    fake, _ = wire
    question_file = colour.data_dir / "colour.json"
    meta = json.loads(question_file.read_text())
    meta["high_threshold"] = 0.01
    question_file.write_text(json.dumps(meta))
    sure = Jev(data_dir=colour.data_dir, cache_dir=tmp_path / "cache2")
    answer = sure.ask("colour", "a red sunset over the desert")
    assert (answer.source, answer.band) == ("local", BAND_HIGH)
    assert fake.requests == []


def test_switched_off_or_offline_nothing_changes(colour: Jev, openai_fake, settings) -> None:  # noqa: F811
    settings.CROWS_OPENAI_BASE_URL = openai_fake.base_url
    settings.CROWS_OPENAI_API_KEY = openai_fake.api_key
    settings.CROWS_BRAIN = "openai:gpt-test"
    settings.CROWS_JEV_LLM = False
    assert colour.ask("colour", "a silver moon").source == "local"
    # On, but the default brain is the offline mock: still local, nothing imported or sent.
    settings.CROWS_JEV_LLM = True
    settings.CROWS_BRAIN = "mock"
    assert colour.ask("colour", "a silver moon").source == "local"
    assert openai_fake.requests == []


def test_the_switch_reads_the_environment_when_no_setting_is_made(settings, monkeypatch) -> None:
    if hasattr(settings, "CROWS_JEV_LLM"):
        del settings.CROWS_JEV_LLM
    settings.CROWS_BRAIN = "anthropic:claude-test"
    monkeypatch.setenv("CROWS_JEV_LLM", "1")
    assert llm.brain_spec() == "anthropic:claude-test"
    monkeypatch.setenv("CROWS_JEV_LLM", "0")
    assert llm.brain_spec() is None
    monkeypatch.setenv("CROWS_JEV_LLM", "perhaps")
    assert llm.brain_spec() is None  # an unreadable value keeps it off, and is logged


def test_jev_eval_measures_the_local_model_alone(colour: Jev, wire, tmp_path: Path) -> None:
    from flock.jev.evaluate import evaluate_file

    fake, _ = wire
    fake.reply_text = "cool"
    path = tmp_path / "eval.jsonl"
    path.write_text(json.dumps({"text": "a glowing ember", "tone": "warm"}) + "\n")
    report = evaluate_file(path, "colour", jev=colour, latency_passes=1)
    assert report.accuracy == 1.0
    assert fake.requests == []


@pytest.mark.django_db
def test_the_tag_log_records_the_source_beside_the_local_probabilities(colour: Jev, wire) -> None:
    fake, _ = wire
    fake.reply_text = "cool"
    answer = colour.ask("colour", "hot summer sand")
    tag = log_jev_tag(answer, subject="nest-1-1", text="hot summer sand")
    stored = JevTag.objects.get(pk=tag.pk)
    assert (stored.source, stored.choice, stored.local_choice, stored.band) == ("llm", "cool", "warm", "high")
    assert stored.probs["warm"] > stored.probs["cool"]

    fake.behaviour = "error"
    local = colour.ask("colour", "frost on the window")
    stored = JevTag.objects.get(pk=log_jev_tag(local).pk)
    assert (stored.source, stored.local_choice) == ("local", stored.choice)
