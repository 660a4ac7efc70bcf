"""Jev questions about a pair of texts (docs/JEV.md, "expectation_met"): lines holding two
fields joined by one function in training and at ask time, a question only its writers
write, their import (fields kept as written, malformed lines dropped with the reason),
and jev_eval's leave-one-writer-out figures without a file."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from flock.jev import Jev, JevDataError
from flock.jev.evaluate import writer_report
from flock.jev.model import ordered_logits
from flock.jev.pair_views import split_pair
from flock.jev.pairs import PAIR_SEPARATOR, pair_text, speaker_line, who_speaks
from flock.jev.questions import FEATURES_PAIR, discover
from flock.jev.service import default_jev
from flock.jev.text import prepare
from flock.jev.writers import import_writers, read_manifest

META = {"label_field": "done", "input_fields": ["ask", "reply"], "choices": ["yes", "no"], "high_threshold": 0.6}
YES = ["Here it is: the report, three pages.", "Done, the file is attached.", "Sent it to you just now.",
       "Finished: totals are 4, 5 and 9.", "All done, see the summary below.", "Delivered, thanks for waiting."]
NO = ["I won't be doing that.", "Can't, sorry, not my job.", "Forgot all about it, too late now.",
      "Not doing that today.", "Gave up on it.", "Nope, skipping this one."]


def rows(asker: str, replies: list[str], label: str) -> list[dict[str, object]]:
    return [{"ask": f"owner: @{asker} please do the thing {i}", "reply": f"{asker}: {r}", "done": label}
            for i, r in enumerate(replies)]


def write(path: Path, lines: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def done_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "done.json").write_text(json.dumps(META))
    return data


def test_the_pair_text_leads_with_who_speaks_and_the_later_message():
    opening, later = speaker_line("owner", "@Hugin summarise the Q3 report by 5pm please"), speaker_line("Hugin", "Here: revenue up 4%.")
    assert pair_text(opening, later) == f"_by_asked_ Here: revenue up 4%.{PAIR_SEPARATOR}@Hugin summarise the Q3 report by 5pm please"
    assert who_speaks(opening, speaker_line("owner", "never mind")) == "_by_owner_"
    assert who_speaks("Munin: I'll have it by noon", "Munin: done") == "_by_asker_"
    assert who_speaks("owner: quill can u review it", "Quill: approved") == "_by_asked_"
    assert who_speaks(opening, "Munin: Hugin is on it") == "_by_other_"


def test_a_question_only_its_writers_write_is_found_before_and_after_their_import(done_dir, tmp_path):
    found, broken = discover(done_dir)
    assert "done" in found and not broken  # the import can find it with no lines yet
    with pytest.raises(JevDataError, match="no lines of two choices yet"):
        Jev(data_dir=done_dir, cache_dir=tmp_path / "cache").ask("done", "x")
    a = write(tmp_path / "in" / "writer-a" / "done.jsonl", rows("Hugin", YES[:3], "yes") + rows("Hugin", NO[:3], "no") + [
        "{not json", {"ask": "owner: do it", "done": "yes"}, {"ask": "owner: x", "reply": "Hugin: y", "done": "maybe"},
    ])
    b = write(tmp_path / "in" / "writer-b" / "done.jsonl", rows("Munin", YES[3:], "yes") + rows("Munin", NO[3:], "no"))
    report = import_writers({"writer-a": a.parent, "writer-b": b.parent}, data_dir=done_dir, styles={"writer-a": "terse"})
    assert report.kept["writer-a", "done"] == 6 and report.kept["writer-b", "done"] == 6
    reasons = sorted(d.reason for d in report.dropped)
    assert reasons == ["empty or missing ask or reply", "label not a choice of done: 'maybe'", "not valid JSON"]
    # The writers' fields are kept as written, not joined: the join is the code's.
    first = json.loads((done_dir / "writers" / "writer-a" / "done.jsonl").read_text().splitlines()[0])
    assert first == {"ask": "owner: @Hugin please do the thing 0", "reply": "Hugin: Here it is: the report, three pages.", "done": "yes"}
    assert read_manifest(done_dir)["writers"]["writer-a"]["lines"] == {"done": 6}
    jev = Jev(data_dir=done_dir, cache_dir=tmp_path / "cache")
    question = jev.question("done")
    assert question.writers() == ("writer-a", "writer-b") and question.input_fields == ("ask", "reply")
    assert question.train_examples()[0].text == pair_text(first["ask"], first["reply"])
    answer = jev.ask("done", pair_text("owner: @Pepper please do it", "Pepper: Done, the file is attached."))
    assert answer.choice == "yes" and set(answer.probs) == {"yes", "no"}
    report_ = writer_report("done", jev=jev)
    assert report_ is not None and [w.writer for w in report_.writers] == ["writer-a", "writer-b"]


def test_a_writers_label_outside_the_choices_breaks_only_that_question(done_dir):
    write(done_dir / "writers" / "writer-a" / "done.jsonl", [{"ask": "owner: a", "reply": "Hugin: b", "done": "maybe"}])
    found, broken = discover(done_dir)
    assert "done" not in found and "not among the choices in done.json" in broken["done"].message


def test_jev_eval_without_a_file_reports_the_writers_held_out(db):
    out = StringIO()
    call_command("jev_eval", "--question", "expectation_met", stdout=out)
    text = out.getvalue()
    # Every writer of its corpus held out in turn (docs/JEV.md, Writers: h-q).
    assert "leave-one-writer-out: question 'expectation_met', 10 writers" in text
    assert all(f"writer-{w}" in text for w in "hijklmnopq")
    with pytest.raises(CommandError, match="nothing to report"):
        call_command("jev_eval", "--question", "expectation_met", "--no-lowo")


def test_the_pair_features_read_the_prepared_pair_text_back_into_its_parts():
    text = prepare(pair_text("owner: @Hugin translate the update into German", "Hugin: done, translated\nto Dutch"))
    assert split_pair(text) == ("_by_asked_", "done, translated to dutch", "_crow_ translate the update into german")


def test_expectation_met_is_scored_by_its_pair_pipeline_and_answers(db):
    jev = default_jev()
    question = jev.question("expectation_met")
    assert question.features == FEATURES_PAIR
    loaded = jev.loaded("expectation_met")
    assert loaded.scorer.coded is None  # the coded fast path is the standard union's
    pairs = [
        ("owner: @Hugin pull p99 latency for checkout-api", "Hugin: p99 checkout-api last 24h: 480ms, 1.9s at the spike"),
        ("owner: @Hugin pull p99 latency for checkout-api", "Hugin: grafana keeps timing out, I give up on this one"),
        ("Munin: I'll write the migration by noon", "Soot: anyone for lunch?"),
    ]
    texts = [pair_text(first, second) for first, second in pairs] + [e.text for e in question.train_examples()[::25]]
    # The scorer's own sums (its plain path through each block's view) against scikit-learn's.
    expected = ordered_logits(jev.trained("expectation_met").pipeline, texts, question.choices)
    for text, row in zip(texts, expected, strict=True):
        assert loaded.scorer.logits(prepare(text)).tolist() == pytest.approx(row.tolist(), abs=1e-9)
    for text, row in zip(texts[:3], expected[:3], strict=True):
        answer = jev.ask("expectation_met", text, second_opinion=False)
        assert set(answer.probs) == {"met", "missed", "pending"}
        assert answer.choice == question.choices[int(row.argmax())]


def test_the_pair_features_need_a_pair_question(done_dir):
    (done_dir / "done.json").write_text(json.dumps({**META, "input_fields": [], "features": FEATURES_PAIR}))
    _, broken = discover(done_dir)
    assert "needs two input_fields" in broken["done"].message
    (done_dir / "done.json").write_text(json.dumps({**META, "features": "fancy"}))
    _, broken = discover(done_dir)
    assert "features must be" in broken["done"].message
