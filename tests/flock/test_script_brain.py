"""The scripted brain `script:<path>` (docs/BRAINS.md): rules answer in order, with the
triggering message's fields filled in; no rule, the mock answers; a bad file is refused
with a message naming it, and stops start-up when it is CROWS_BRAIN."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flock.brains import BrainRequest, BrainSpecError, Persona, ScriptError, check_brain_spec, get_brain
from flock.brains.script import load_rules

ROOT = Path(__file__).resolve().parents[2]


def persona(name: str = "Rook") -> Persona:
    return Persona(name=name, epithet="the Bold", strength="code", backstory="", persona="", voice="")


def chat(text: str, *, crow: str = "Rook", msg_id: str = "todo-3", refers_to: str = "todo-1",
         author: str = "owner", task: str = "chat") -> BrainRequest:
    return BrainRequest(
        persona=persona(crow), task=task, messages=[{"role": "user", "content": text}], max_tokens=100,
        context={"trigger_msg_id": msg_id, "trigger_refers_to": refers_to, "trigger_author": author,
                 "trigger_text": text, "msg_id": msg_id},
    )


def write(tmp_path: Path, rules: object, name: str = "rules.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(rules) if not isinstance(rules, str) else rules)
    return str(path)


def test_the_first_matching_rule_answers_with_the_triggers_fields(tmp_path):
    path = write(tmp_path, [
        {"crow": "Hugin", "reply": "not me"},
        {"crow": "rook", "task": "chat", "match": "SHINY", "reply": "[CLAIM {msg_id}] for {author}, re {refers_to}"},
        {"crow": "*", "reply": "anyone {x}"},
    ])
    brain = get_brain(f"script:{path}")
    reply = brain.think(chat("count the shiny things"))
    assert reply.ok and reply.text == "[CLAIM todo-3] for owner, re todo-1"
    assert (reply.provider, reply.model) == ("script", path)
    assert reply.tokens_out > 0
    assert brain.think(chat("something else")).text == "anyone {x}"
    assert brain.think(chat("shiny", task="answer")).text == "anyone {x}"


def test_a_once_rule_answers_once_then_the_next_rule(tmp_path):
    brain = get_brain("script:" + write(tmp_path, [
        {"crow": "*", "reply": "first", "once": True},
        {"crow": "*", "reply": "after"},
    ]))
    assert [brain.think(chat("hi")).text for _ in range(3)] == ["first", "after", "after"]


def test_no_matching_rule_lets_the_mock_brain_answer(tmp_path):
    brain = get_brain("script:" + write(tmp_path, [{"crow": "Hugin", "reply": "only Hugin"}]))
    reply = brain.think(chat("hello there"))
    assert reply.ok and reply.provider == "mock" and reply.text


def test_a_list_task_matches_on_its_item_text(tmp_path):
    brain = get_brain("script:" + write(tmp_path, [{"crow": "*", "task": "answer", "match": "milk", "reply": "2 pints"}]))
    request = BrainRequest(persona=persona(), task="answer", messages=[], max_tokens=50,
                           context={"item_text": "buy milk", "item_id": "L1-1"})
    assert brain.think(request).text == "2 pints"


@pytest.mark.parametrize(
    "content, words",
    [
        ("{nope", "not valid JSON"),
        (json.dumps({"crow": "*"}), "must be a JSON list"),
        (json.dumps([{"reply": "x"}]), 'needs "crow"'),
        (json.dumps([{"crow": "*"}]), 'needs "reply"'),
        (json.dumps([{"crow": "*", "reply": "x", "match": "(["}]), "not a valid regular expression"),
        (json.dumps([{"crow": "*", "reply": "x", "task": "dance"}]), '"task" must be one of'),
        (json.dumps([{"crow": "*", "reply": "x", "once": "yes"}]), '"once" must be true or false'),
        (json.dumps([{"crow": "*", "reply": "x", "colour": "red"}]), "unknown keys"),
        (json.dumps(["x"]), "must be a JSON object"),
    ],
)
def test_a_bad_file_is_refused_naming_it(tmp_path, content, words):
    path = write(tmp_path, content)
    with pytest.raises(ScriptError) as caught:
        load_rules(path)
    assert path in str(caught.value) and words in str(caught.value)
    reply = get_brain(f"script:{path}").think(chat("hi"))
    assert not reply.ok and path in reply.error


def test_a_missing_file_is_refused():
    with pytest.raises(BrainSpecError, match="does not exist"):
        check_brain_spec("script:/nonexistent/rules.json")
    check_brain_spec("mock")


def test_a_bad_script_as_crows_brain_stops_start_up(tmp_path):
    path = write(tmp_path, "[{]")
    env = {**os.environ, "CROWS_BRAIN": f"script:{path}", "CROWS_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "CROWS_BRAIN" in done.stderr and path in done.stderr


def test_a_crow_can_be_hatched_with_a_script_brain(db, tmp_path):
    from flock.actions import hatch_crow
    from flock.errors import BadInput

    path = write(tmp_path, [{"crow": "*", "reply": "caw"}])
    assert hatch_crow("Wren", strength="data", hatched_by="Boss", model=f"script:{path}").brain_spec == f"script:{path}"
    with pytest.raises(BadInput, match="does not exist"):
        hatch_crow("Wren2", strength="data", hatched_by="Boss", model="script:/nope.json")


def test_the_example_in_the_docs_claims_then_delivers(db, tmp_path, settings, monkeypatch):
    """docs/BRAINS.md's example, run in a room: Rook claims the owner's request about notes,
    then its claim invokes it to deliver with the request's id."""
    import re as _re

    from nests.actions import post_message
    from nests.models import NestMessage
    from tests.support.scripted_brain import FakeJev, run_crows

    fake = FakeJev()
    monkeypatch.setattr("flock.jev.ask", fake.ask)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: 0.0)
    doc = (ROOT / "docs" / "BRAINS.md").read_text()
    example = _re.search(r"## The scripted brain.*?```json\n(.*?)```", doc, _re.DOTALL).group(1)
    settings.CROWS_BRAIN = "script:" + write(tmp_path, example)
    post_message("todo", author="owner", text="@Rook please summarise the launch notes", kind="request")
    run_crows()
    said = [(m.author, m.kind, m.refers_to, m.text) for m in NestMessage.objects.order_by("n")][1:3]
    assert said == [("Rook", "claim", "todo-1", "Mine, boss."),
                    ("Rook", "deliver", "todo-1", "The notes, summarised.")]
