"""Jev, the local classifier: answers, bands, the cache, custom questions, jev_eval, fit_score.

No test here times anything: latency targets are measured by ``jev_eval`` and
``bench/jev.py``, where a slow CI machine cannot turn them into flaky failures.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flock.jev import Jev, JevDataError, UnknownQuestionError, ask, fit, fit_score, questions
from flock.jev.answers import BAND_HIGH, BAND_UNSURE, band_for
from flock.jev.evaluate import EvalInputError, evaluate_file, format_report
from flock.jev.model import pipeline_logits
from flock.jev.service import default_cache_dir, default_jev
from flock.jev.text import MAX_TEXT_CHARS, prepare
from tests.support import jev_tone as tone

REPO = Path(__file__).resolve().parents[2]

# A tiny custom question, written as a user would add one: data plus metadata, no code.
# Its label field is "tone", not the question's name, to exercise the metadata.
WARM = [*tone.WARM, "the midday sun", "amber honey"]
COOL = [*tone.COOL, "a glass of iced water", "teal and turquoise waves"]


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def colour_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"text": t, "tone": "warm"} for t in WARM] + [{"text": t, "tone": "cool"} for t in COOL]
    write_jsonl(data / "colour.jsonl", rows)
    (data / "colour.json").write_text(json.dumps({"label_field": "tone", "high_threshold": 0.6}))
    return data


def colour_jev(data_dir: Path) -> Jev:
    return Jev(data_dir=data_dir, cache_dir=data_dir.parent / "cache")


def test_every_answer_carries_a_probability_for_each_choice_summing_to_one() -> None:
    for name, question in questions().items():
        for text in ("Taking it, @Hugin.", "plan the offsite: venue, agenda, budget", ""):
            answer = ask(name, text)
            assert answer.question == name
            assert list(answer.probs) == list(question.choices)
            assert sum(answer.probs.values()) == pytest.approx(1.0, abs=1e-9)
            assert all(0.0 <= p <= 1.0 for p in answer.probs.values())
            assert answer.choice == max(answer.probs, key=answer.probs.__getitem__)
            assert answer.impl == "sklearn"
            assert re.fullmatch(rf"{name}-[0-9a-f]{{8}}-v\d+", answer.version)
            assert answer.latency_ms >= 0.0


def test_band_is_high_exactly_from_the_questions_threshold() -> None:
    assert band_for(0.8, 0.8) == BAND_HIGH
    assert band_for(0.7999, 0.8) == BAND_UNSURE
    assert band_for(1.0, 0.8) == BAND_HIGH
    threshold = questions()["kind"].high_threshold
    for text in ("Mine.", "hmm, maybe", "Done: the tweet is 'Caw more.'", "x"):
        answer = ask("kind", text)
        expected = BAND_HIGH if answer.probs[answer.choice] >= threshold else BAND_UNSURE
        assert answer.band == expected


def test_built_in_questions_ship_the_promised_data() -> None:
    minimum = {"kind": 100, "task_type": 60, "mode": 60, "expectation": 50}
    found = questions()
    assert set(minimum) <= set(found)
    assert set(found["kind"].choices) == {"say", "request", "claim", "deliver", "refer", "decline"}
    assert set(found["task_type"].choices) == {"writing", "research", "code", "planning", "data", "chat"}
    assert set(found["mode"].choices) == {"solo", "split", "murder"}
    for name, least in minimum.items():
        question = found[name]
        counts = {choice: 0 for choice in question.choices}
        for example_ in question.train_examples():
            counts[example_.label] += 1
        assert min(counts.values()) >= least, (name, counts)
        # The dev split is held back: none of its texts may be trained on.
        train_texts = {e.text for e in question.train_examples()}
        assert question.dev_examples()
        assert not train_texts & {e.text for e in question.dev_examples()}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Taking it, @Hugin.", "claim"),
        ("[CLAIM todo-3] on it", "claim"),
        ("@Signals, classify these drops.", "request"),
        ("Thanks for waiting — here is the summary: we ship Friday, Pepper owns pricing.", "deliver"),
        ("[RESULT todo-4] OK three venues, all under budget.", "deliver"),
        ("See research/2026-10-27-watchlist.md", "refer"),
        ("I'm not the right crow for this, Pepper knows pricing better", "decline"),
        ("[DECLINE todo-3] out of budget today.", "decline"),
        ("Good find, @Lab.", "say"),
        ("", "say"),
    ],
)
def test_kind_answers_the_protocols_own_examples(text: str, kind: str) -> None:
    assert ask("kind", text).choice == kind


def test_fast_scorer_agrees_with_the_sklearn_pipeline() -> None:
    loaded = default_jev().loaded("kind")
    pipeline = default_jev().trained("kind").pipeline
    texts = [e.text for e in loaded.question.dev_examples()] + ["", "x" * 10_000, "@Hugin [CLAIM nest-2] ok"]
    prepared = [prepare(t) for t in texts]
    expected = pipeline_logits(pipeline, prepared)
    # The pipeline's columns are sorted labels; the scorer's follow the question's choices.
    order = [list(pipeline.classes_).index(c) for c in loaded.model.choices]
    got = np.array([loaded.scorer.logits(p) for p in prepared])
    np.testing.assert_allclose(got, expected[:, order], rtol=1e-9, atol=1e-9)


def test_long_text_is_truncated_before_scoring() -> None:
    head = "Taking it, @Hugin. " * 300
    assert len(head) > MAX_TEXT_CHARS
    assert prepare(head + "and a long tail nobody reads") == prepare(head[:MAX_TEXT_CHARS])


def test_cache_is_reused_and_rebuilt_when_the_data_changes(colour_dir: Path) -> None:
    cache = colour_dir.parent / "cache"
    first = colour_jev(colour_dir).loaded("colour")
    assert not first.from_cache
    # The trained model and, beside it, what serving it needs (serving.py).
    [cached, served] = sorted(cache.glob("colour-*.pickle"))
    assert served.name.endswith(".served.pickle") and cached.name == served.name.replace(".served", "")

    again = colour_jev(colour_dir).loaded("colour")
    assert again.from_cache
    assert again.model.version == first.model.version

    with (colour_dir / "colour.jsonl").open("a", encoding="utf-8") as data:
        data.write(json.dumps({"text": "embers in the stove", "tone": "warm"}) + "\n")
    changed = colour_jev(colour_dir).loaded("colour")
    assert not changed.from_cache
    assert changed.model.version != first.model.version
    # The stale model is removed, so the cache holds one version per question.
    [rebuilt, _] = sorted(cache.glob("colour-*.pickle"))
    assert rebuilt != cached


def test_one_process_loads_a_question_once_even_when_threads_race(colour_dir: Path) -> None:
    jev = colour_jev(colour_dir)
    start = threading.Barrier(6)
    seen: list[object] = []

    def first_ask() -> None:
        start.wait()
        seen.append(jev.loaded("colour"))

    threads = [threading.Thread(target=first_ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 6
    assert all(loaded is seen[0] for loaded in seen)


def test_a_custom_question_is_just_data(colour_dir: Path) -> None:
    jev = colour_jev(colour_dir)
    question = jev.questions()["colour"]
    assert question.choices == ("cool", "warm")
    assert question.label_field == "tone"
    assert question.high_threshold == 0.6

    assert jev.ask("colour", "a blazing orange campfire in summer").choice == "warm"
    assert jev.ask("colour", "cold blue ice on the lake").choice == "cool"
    answer = jev.ask("colour", "")
    assert set(answer.probs) == {"cool", "warm"}
    # No dev file: the temperature comes from a held-out slice of the training data.
    assert jev.loaded("colour").model.calibrated_on == "held-out slice"


def test_a_question_too_small_to_hold_out_is_left_uncalibrated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(
        data / "yesno.jsonl", [{"text": "yes please", "yesno": "yes"}, {"text": "no thanks", "yesno": "no"}]
    )
    jev = Jev(data_dir=data, cache_dir=tmp_path / "cache")
    model = jev.loaded("yesno").model
    assert (model.calibrated_on, model.temperature) == ("none", 1.0)
    assert jev.ask("yesno", "yes please").choice == "yes"


def test_broken_question_data_names_the_file_and_line_and_spares_the_rest(colour_dir: Path) -> None:
    (colour_dir / "broken.jsonl").write_text(
        '{"text": "a", "broken": "x"}\n{"text": "b", "broken": "y"}\nnot json\n'
    )
    jev = colour_jev(colour_dir)
    assert set(jev.questions()) == {"colour"}
    with pytest.raises(JevDataError, match=r"broken\.jsonl:3:"):
        jev.ask("broken", "a")
    assert jev.ask("colour", "a glowing ember").choice == "warm"


def test_asking_an_unknown_question_says_which_exist() -> None:
    with pytest.raises(UnknownQuestionError, match="kind"):
        ask("no_such_question", "hello")


def test_jev_eval_scores_a_small_file(tmp_path: Path) -> None:
    rows = [
        {"text": "Mine.", "kind": "claim"},
        {"text": "@Pepper can you price the three plans?", "kind": "request"},
        {"text": "Full results are in launch-notes-v2.md", "kind": "refer"},
        {"text": "Done: HubSpot is cheapest, Pipedrive easiest.", "kind": "deliver"},
    ]
    path = write_jsonl(tmp_path / "small.jsonl", rows)
    report = evaluate_file(path, "kind", latency_passes=2)
    assert report.n == 4
    assert 0.0 <= report.accuracy <= 1.0 and 0.0 <= report.macro_f1 <= 1.0 and 0.0 <= report.ece <= 1.0
    assert report.confusion.sum() == 4
    assert report.latency_calls == 8
    assert 0.0 < report.latency_p50_ms <= report.latency_p99_ms
    assert not report.unknown_labels
    text = format_report(report)
    for needle in ("accuracy", "macro-F1", "ECE", "p50", "p99", "confusion"):
        assert needle in text


def test_jev_eval_reads_a_file_that_starts_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"text": "Mine.", "kind": "claim"}\n')
    assert evaluate_file(path, "kind", latency_passes=1).n == 1


def test_jev_eval_counts_unknown_labels_as_errors(tmp_path: Path) -> None:
    rows = [{"text": "Mine.", "kind": "claim"}, {"text": "Caw caw caw", "kind": "banana"}]
    report = evaluate_file(write_jsonl(tmp_path / "odd.jsonl", rows), "kind", latency_passes=1)
    assert report.unknown_labels == {"banana": 1}
    assert report.rows[-1] == "banana"
    assert report.confusion[-1].sum() == 1
    assert report.accuracy <= 0.5
    assert "counted as errors" in format_report(report)


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ('{"text": "Mine.", "kind": "claim"}\n{"text": "oops"\n', 2),
        ('{"text": "Mine.", "kind": "claim"}\n\n{"text": "no label"}\n', 3),
        ('["Mine.", "claim"]\n', 1),
    ],
)
def test_jev_eval_stops_at_a_bad_line_and_names_it(tmp_path: Path, content: str, line: int) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(EvalInputError, match=rf"bad\.jsonl:{line}:"):
        evaluate_file(path, "kind")
    with pytest.raises(CommandError, match=rf"bad\.jsonl:{line}:"):
        call_command("jev_eval", str(path), "--question", "kind")


def test_jev_eval_refuses_an_unknown_question_or_a_missing_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ok.jsonl", [{"text": "Mine.", "kind": "claim"}])
    with pytest.raises(CommandError, match="unknown Jev question 'colour'"):
        call_command("jev_eval", str(path), "--question", "colour")
    with pytest.raises(CommandError, match="no such file"):
        call_command("jev_eval", str(tmp_path / "missing.jsonl"))


def test_jev_eval_command_fails_cleanly_from_the_shell(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "Mine.", "kind": "claim"}\nnot json at all\n')
    result = subprocess.run(
        [sys.executable, "manage.py", "jev_eval", str(bad), "--question", "kind"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "bad.jsonl:2:" in result.stderr
    assert "Traceback" not in result.stderr


def test_jev_eval_command_prints_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "ok.jsonl", [{"text": "Mine.", "kind": "claim"}])
    call_command("jev_eval", str(path), "--passes", "1")
    out = capsys.readouterr().out
    assert "accuracy   1.000" in out
    assert "claim" in out


def test_fit_score_prefers_the_crow_whose_strengths_match_the_task() -> None:
    coder = "code: writing, debugging, reviewing and testing scripts, functions and programs"
    poet = "creative writing and ideas: brainstorming, naming, stories, slogans and lively chat"
    ledger = "data and records: tables, numbers, spreadsheets, statistics, data analysis"
    assert fit_score("fix the flaky login test", coder) > fit_score("fix the flaky login test", poet)
    assert fit_score("come up with a slogan for the launch", poet) > fit_score(
        "come up with a slogan for the launch", coder
    )
    assert fit_score("chart weekly signups since March", ledger) > fit_score(
        "chart weekly signups since March", poet
    )
    for score in (fit_score("fix the test", coder), fit_score("", coder), fit_score("fix it", "")):
        assert 0.0 <= score <= 1.0
    assert fit_score("", coder) == 0.0


# No example database: it would write .hypothesis/ into the working tree, and a property
# this cheap is better re-explored from scratch each run than replayed.
@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
@example("")
@example(" \n\t ")
@example("x" * 100_000)
@example("[CLAIM ] [RESULT] [REFER] @ @@ [[]] todo- nest-- .md https://")
@example("\x00\ud7ff\ufffe\U0010ffff")
def test_asking_kind_about_any_text_never_fails(text: str) -> None:
    answer = ask("kind", text)
    assert answer.choice in answer.probs
    assert sum(answer.probs.values()) == pytest.approx(1.0, abs=1e-9)
    assert answer.band in (BAND_HIGH, BAND_UNSURE)


def test_warming_in_the_background_loads_the_models_and_the_fit_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    # Servers and db_workers call this at start, so a first post is not the one to pay.
    from flock.jev import fit, service, warming

    warmed: list[str] = []
    monkeypatch.setattr(service.Jev, "warm", lambda self: warmed.append("models") or {})
    monkeypatch.setattr(fit, "warm_fit_score", lambda: warmed.append("fit"))

    warming.warm_in_background().join(10)

    assert warmed == ["models", "fit"]


def test_a_failed_warm_up_is_logged_and_left_to_first_use(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from flock.jev import service, warming

    def broken(self: object) -> dict[str, str]:
        raise OSError("cache dir not writable")

    monkeypatch.setattr(service.Jev, "warm", broken)

    warming.warm_in_background().join(10)

    assert "warming Jev failed" in caplog.text


def test_every_answer_jev_gives_the_chatroom_is_logged_with_its_probabilities(db) -> None:
    from flock.models import JevTag
    from nests.actions import post_message

    message = post_message("todo", author="owner", text="Hugin, I will send you the brief by 3pm today.")
    tags = {t.question: t for t in JevTag.objects.filter(subject=message.msg_id)}
    assert {"kind", "expectation"} <= set(tags)
    expectation = tags["expectation"]
    assert expectation.impl and expectation.version and expectation.band in ("high", "unsure")
    assert abs(sum(expectation.probs.values()) - 1.0) < 1e-3 and expectation.choice in expectation.probs


def test_jev_warm_trains_what_is_missing_then_only_loads_it(colour_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flock.management.commands import jev_warm

    monkeypatch.setattr(jev_warm, "default_jev", lambda: colour_jev(colour_dir))
    vocabulary = colour_dir.parent / "cache" / "fit-vocab.pickle"
    monkeypatch.setattr(jev_warm, "vocabulary_cache_path", lambda: vocabulary)
    # Stands in for the real fit (the built-in questions' texts, seconds): cached once written.
    monkeypatch.setattr(jev_warm, "warm_fit_score", lambda: vocabulary.exists() or (vocabulary.write_bytes(b"v") < 0))
    out = StringIO()
    call_command("jev_warm", stdout=out)
    first = out.getvalue()
    # The long step is announced before it starts, then timed.
    assert first.index("jev: training colour") < first.index("jev: colour trained in")
    assert first.index("jev: fitting the crow-fit vocabulary") < first.index("jev: crow-fit vocabulary fitted in")
    assert "2 model(s) trained into" in first
    assert list((colour_dir.parent / "cache").glob("colour-*.pickle"))

    out = StringIO()
    call_command("jev_warm", stdout=out)
    again = out.getvalue()
    assert "training" not in again
    assert "jev: colour loaded from the cache" in again
    assert "jev: crow-fit vocabulary loaded from the cache" in again
    assert "every model was cached" in again


def test_jev_warm_names_broken_question_data_and_warms_the_rest(colour_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flock.management.commands import jev_warm

    write_jsonl(colour_dir / "shade.jsonl", [{"text": t, "tone": "warm"} for t in WARM] + [{"text": t, "tone": "cool"} for t in COOL])
    (colour_dir / "shade.json").write_text(json.dumps({"label_field": "tone"}))
    (colour_dir / "colour.jsonl").write_text('{"text": "ember", "tone": "warm"}\nnot json\n', encoding="utf-8")
    monkeypatch.setattr(jev_warm, "default_jev", lambda: colour_jev(colour_dir))
    monkeypatch.setattr(jev_warm, "warm_fit_score", lambda: True)
    out, err = StringIO(), StringIO()
    call_command("jev_warm", stdout=out, stderr=err)
    # As a server would: the broken question is named with its file and line, the rest is served.
    assert re.search(r"jev: question colour\S* was not trained: .*colour\.jsonl:2", err.getvalue())
    assert "jev: shade trained in" in out.getvalue()


def test_run_sh_warms_jev_before_the_server_starts() -> None:
    # The owner's first message must not wait for a training run in the server's warm-up
    # thread: run.sh trains the cache first (docs/JEV.md, "Training time").
    steps = [line.split()[:3] for line in (REPO / "scripts" / "run.sh").read_text().splitlines() if line.startswith((".venv", "exec"))]
    assert steps.index([".venv/bin/python", "manage.py", "jev_warm"]) < steps.index(["exec", ".venv/bin/daphne", "-b"])


def test_the_fit_vocabulary_is_cached_beside_the_models_and_refitted_when_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings, caplog: pytest.LogCaptureFixture
) -> None:
    from flock.jev import fit

    settings.CROWS_JEV_CACHE_DIR = str(tmp_path)
    monkeypatch.setattr(fit, "_vectorizer", None)
    assert fit.warm_fit_score() is False  # fitted here, and written
    [cached] = tmp_path.glob("fit-vocab-*.pickle")
    assert cached == fit.vocabulary_cache_path()
    fitted = fit._fitted()
    assert fit.warm_fit_score() is False  # this process has it already: nothing to do

    monkeypatch.setattr(fit, "_vectorizer", None)
    assert fit.warm_fit_score() is True  # the next process loads it
    text = "chart the weekly signups in a spreadsheet"

    def same(a, b) -> bool:
        return a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()

    assert same(fit._fitted().unit_vector(text), fitted.unit_vector(text))

    cached.write_bytes(b"not a pickle")
    monkeypatch.setattr(fit, "_vectorizer", None)
    assert fit.warm_fit_score() is False
    assert "unreadable fit vocabulary" in caplog.text
    assert same(fit._fitted().unit_vector(text), fitted.unit_vector(text))


SERVING_PROCESS = """
import sys
import django
django.setup()
import crows_site.urls, flock.management.commands.db_worker  # every view, API and task module
from flock.jev import ask, fit_score, warm
from flock.jev.pairs import pair_text
warm()
ask("kind", "Taking it, @Hugin.")
ask("expectation_met", pair_text("owner: @Hugin summarise the report", "Hugin: here it is: revenue up 4%"))
fit_score("chart the weekly signups", "data and records: tables, numbers, spreadsheets")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("sklearn", "scipy")))
"""


def test_a_serving_process_answers_every_question_without_importing_scikit_learn_or_scipy(tmp_path: Path) -> None:
    # Importing them costs a process start about 2.4 s of CPU, and every daphne, worker and
    # command start would pay it (docs/TESTING.md, "Where the CPU goes"): serving reads the
    # served models that training cached (flock/jev/serving.py).
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "crows_site.settings",
        "CROWS_DATA_DIR": str(tmp_path),
        "CROWS_JEV_CACHE_DIR": str(default_cache_dir()),
        "PYTHONPATH": str(REPO),
    }
    default_jev().warm()  # the served models cached, as jev_warm leaves them
    fit.warm_fit_score()
    ran = subprocess.run([sys.executable, "-c", SERVING_PROCESS], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]", ran.stdout


def test_an_unreadable_served_model_is_written_again_from_the_trained_one(colour_dir: Path) -> None:
    from flock.jev.serving import read_served

    first = colour_jev(colour_dir).loaded("colour")
    cache = colour_dir.parent / "cache"
    [served] = cache.glob("colour-*.served.pickle")
    served.write_bytes(b"half a pickle")
    # The trained model is still cached: it is read (not trained again), and the served
    # model taken from it replaces the broken file, so the next process reads numpy only.
    again = colour_jev(colour_dir).loaded("colour")
    assert again.from_cache and again.model.version == first.model.version
    question = colour_jev(colour_dir).question("colour")
    assert read_served(cache, "colour", question.data_hash()) is not None
