"""The offline mock answers in the form the task asks for, from the request's own words:
a haiku is three lines, a tweet at most 280 characters, a tagline one line, a code fix a
fenced block, a list a list, a summary one paragraph. A multi-part request is a split
whose reason names the mode; a debate turn argues its stance and answers the other side."""

from __future__ import annotations

import json
import random
import re

import pytest

from flock.brains import mock_shapes
from flock.brains.mock_debate import debate_turn
from tests.flock.test_brains import HUGIN, PEPPER, ask, think


def answer(text: str, persona=HUGIN) -> str:
    reply = think(ask(persona, item_text=text))
    assert reply.ok, reply.error
    return reply.text


def test_a_haiku_is_three_short_lines_about_the_topic():
    text = answer("Write a haiku about autumn rain")
    lines = text.splitlines()
    assert len(lines) == 3
    assert "autumn rain" in lines[0].lower()
    counts = [mock_shapes.line_syllables(line) for line in lines]
    assert all(abs(c - want) <= 2 for c, want in zip(counts, (5, 7, 5), strict=True)), counts


def test_a_tweet_fits_in_280_characters_and_names_its_subject():
    text = answer("Draft a launch tweet for the crow café")
    assert len(text) <= mock_shapes.TWEET_MAX and "\n" not in text
    assert "crow café" in text.lower()
    long = answer("Write a tweet about " + "the extraordinarily long-winded announcement " * 12)
    assert len(long) <= mock_shapes.TWEET_MAX


def test_a_tagline_is_one_line():
    text = answer("Write a tagline for our bakery")
    assert "\n" not in text and "bakery" in text.lower()


def test_a_code_fix_is_a_fenced_code_block_naming_the_function():
    text = answer("Fix this Python function parse_date() that crashes on None", PEPPER)
    assert re.search(r"```python\n.*def parse_date\(.*\n```$", text, re.S)


def test_a_list_is_a_numbered_list_of_the_asked_count():
    text = answer("Find three facts about corvid memory")
    lines = text.splitlines()
    assert [line[:2] for line in lines] == ["1.", "2.", "3."]
    assert any("corvid" in line.lower() for line in lines)


def test_a_summary_is_one_paragraph():
    text = answer("Summarize the quarterly report on crow migration")
    assert "\n" not in text and "crow migration" in text and text.count(".") >= 3


def test_anything_else_is_still_a_plan_of_steps():
    assert mock_shapes.shape_of("Fix the login bug on Safari") is None
    assert "1. " in answer("Fix the login bug on Safari")


def test_a_chat_delivery_has_the_shape_too():
    reply = think(ask(PEPPER, "chat", messages=[{"role": "user", "content": "@Pepper write a haiku about moonlit wires"}],
                      expect="deliver", msg_id="todo-1"))
    body = reply.text.split("\n", 1)[1]
    assert len(body.splitlines()) == 3 and "moonlit wires" in body.lower()


def test_a_multi_part_request_is_a_split_whose_reason_names_the_mode():
    call = json.loads(think(ask(HUGIN, "triage", item_text="Plan a launch: blog post, tweet, email")).text)
    assert call["mode"] == "split" and len(call["subtasks"]) == 3
    assert "split" in call["reason"].lower()
    # And every part then answers in its own form: the tweet part is a tweet.
    tweet = answer(call["subtasks"][1])
    assert len(tweet) <= mock_shapes.TWEET_MAX and "launch" in tweet.lower()


@pytest.mark.parametrize("item, mode", [("Should we use Postgres or SQLite?", "murder"), ("Fix the login bug on Safari", "solo")])
def test_every_triage_reason_names_its_mode(item, mode):
    call = json.loads(think(ask(HUGIN, "triage", item_text=item)).text)
    assert call["mode"] == mode and mode in call["reason"].lower()


def test_a_debate_turn_argues_its_stance_and_answers_the_other_sides_last_point():
    debate = {
        "phase": "argue", "round": 2, "question": "Should the crow tracker use Postgres or SQLite?",
        "stance": "for Postgres",
        "turns": [{"crow": "Munin", "text": "Round 1, for SQLite: one file is simpler to back up and to move."}],
    }
    turn = debate_turn(debate, name="Hugin", strength="research: finding sources", rng=random.Random(3))
    assert "for Postgres" in turn
    assert "one file is simpler to back up" in turn
    assert any(word in turn.lower() for word in ("postgres", "sqlite", "crow tracker"))
