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
from flock.brains.script import load_rules, script_rule

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def script_dir(settings, tmp_path):
    """The operator lets script: brains be read from this test's own directory
    (CROWS_SCRIPT_DIR, docs/SECURITY.md)."""
    settings.CROWS_SCRIPT_DIR = str(tmp_path)
    return tmp_path


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


def test_a_missing_file_is_refused(settings):
    # Outside CROWS_SCRIPT_DIR, missing or not, a spec gets the rule's one sentence ...
    with pytest.raises(BrainSpecError) as caught:
        check_brain_spec("script:/nonexistent/rules.json")
    assert str(caught.value) == script_rule()
    # ... and the operator's own CROWS_BRAIN is told in detail.
    settings.CROWS_BRAIN = "script:/nonexistent/rules.json"
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
    with pytest.raises(BadInput) as caught:
        hatch_crow("Wren2", strength="data", hatched_by="Boss", model="script:/nope.json")
    assert str(caught.value) == script_rule()


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


# --- Where a script may come from (docs/SECURITY.md "Scripted brains") ---------------------


def _refusals(tmp_path: Path) -> list[str]:
    """Specs that break the rule in every way: a device, a secret, a FIFO, a file too large,
    a path outside the directory (absolute, `..`, a link out of it), a missing file."""
    scripts = tmp_path
    os.mkfifo(scripts / "fifo.json")
    (scripts / "big.json").write_bytes(b"[" + b" " * (2 * 1024 * 1024) + b"]")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text(json.dumps([{"crow": "*", "reply": "from outside"}]))
    (scripts / "link.json").symlink_to(outside)
    return [
        "script:/dev/zero", "script:/etc/shadow", "script:fifo.json", f"script:{scripts / 'fifo.json'}",
        "script:big.json", f"script:{outside}", f"script:../{outside.name}", "script:link.json",
        "script:missing.json", "script:.",
    ]


def test_every_way_out_of_the_script_dir_gets_the_same_sentence(tmp_path):
    for spec in _refusals(tmp_path):
        with pytest.raises(BrainSpecError) as caught:
            check_brain_spec(spec)
        assert str(caught.value) == script_rule(), spec
        reply = get_brain(spec).think(chat("hi"))
        assert not reply.ok and reply.error == script_rule(), spec


def test_a_file_inside_the_script_dir_by_name_or_by_path_is_read(tmp_path):
    path = write(tmp_path, [{"crow": "*", "reply": "inside"}], name="rook.json")
    assert get_brain("script:rook.json").think(chat("hi")).text == "inside"
    assert get_brain(f"script:{path}").think(chat("hi")).text == "inside"
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", [{"crow": "*", "reply": "deeper"}], name="wren.json")
    assert get_brain("script:sub/wren.json").think(chat("hi")).text == "deeper"


def test_without_a_script_dir_only_crows_brain_may_name_a_script(settings, tmp_path):
    settings.CROWS_SCRIPT_DIR = ""
    path = write(tmp_path, [{"crow": "*", "reply": "operator's"}])
    with pytest.raises(BrainSpecError) as caught:
        check_brain_spec(f"script:{path}")
    assert "CROWS_SCRIPT_DIR is not set" in str(caught.value) == script_rule()
    settings.CROWS_BRAIN = f"script:{path}"
    check_brain_spec(f"script:{path}")
    assert get_brain("").think(chat("hi")).text == "operator's"


def test_crows_brain_itself_may_not_be_a_device_or_a_huge_file(settings, tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b" " * (2 * 1024 * 1024) + b"]")
    os.mkfifo(tmp_path / "fifo.json")
    for path, words in [("/dev/zero", "not a regular file"), (str(tmp_path / "fifo.json"), "not a regular file"),
                        (str(big), "larger than 1 MiB")]:
        settings.CROWS_BRAIN = f"script:{path}"
        with pytest.raises(BrainSpecError, match=words):
            check_brain_spec(f"script:{path}")


def test_a_brain_test_is_bounded_in_time(settings):
    from flock.brains.probe import test_connection

    settings.CROWS_MOCK_LATENCY_MS = 30_000
    settings.CROWS_BRAIN_TEST_TIMEOUT_S = 0.3
    result = test_connection("mock:slow")
    assert not result["ok"] and "no answer within 0.3 s (CROWS_BRAIN_TEST_TIMEOUT_S)" in result["error"]
    assert result["provider"] == "mock" and result["latency_ms"] < 30_000


def test_a_provider_gets_no_more_than_the_brain_tests_time(settings):
    from flock.brains.providers import OpenAIBrain

    settings.CROWS_BRAIN_TIMEOUT_S = 30.0
    settings.CROWS_OPENAI_API_KEY = "sk-test"
    # A host that takes the connection and never answers: the call ends at the request's cap.
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        settings.CROWS_OPENAI_BASE_URL = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        request = BrainRequest(persona=persona(), task="chat", messages=[{"role": "user", "content": "hi"}],
                               max_tokens=16, context={}, single_attempt=True, timeout_s=0.5)
        reply = OpenAIBrain("gpt-test").think(request)
    finally:
        silent.close()
    assert not reply.ok and "0.5 s" in reply.error
