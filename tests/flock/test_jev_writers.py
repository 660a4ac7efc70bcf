"""Jev's corpus in many voices: writers' files, their import, out-of-writer calibration,
the leave-one-writer-out figures of jev_eval, and artifacts that prepare() recognises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from flock.jev import Jev, JevDataError, questions
from flock.jev.evaluate import format_writer_report, writer_report
from flock.jev.questions import ORIGINAL_WRITER
from flock.jev.text import prepare
from flock.jev.writers import import_writers, read_manifest
from tests.support.jev_tone import COOL, WARM

# Another writer's voice on the same rules.
WARM_B = [
    "lava from the volcano",
    "the hot oven",
    "a fire in the hearth",
    "sun-baked bricks",
    "red chili peppers",
    "a heat wave in August",
]
COOL_B = [
    "a block of ice",
    "the frozen pond",
    "cold rain in November",
    "a snowy owl",
    "an ice cube tray",
    "a blizzard in the north",
]


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def tone_rows(warm: list[str], cool: list[str], *, hard: tuple[str, ...] = ()) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [{"text": t, "tone": "warm"} for t in warm]
    rows += [{"text": t, "tone": "cool"} for t in cool]
    for row in rows:
        if row["text"] in hard:
            row["hard"] = True
    return rows


@pytest.fixture
def colour_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_jsonl(data / "colour.jsonl", tone_rows(WARM, COOL))
    (data / "colour.json").write_text(json.dumps({"label_field": "tone", "high_threshold": 0.6}))
    return data


def test_writers_files_join_the_training_data_with_their_writer_recorded(colour_dir: Path) -> None:
    write_jsonl(
        colour_dir / "writers" / "writer-b" / "colour.jsonl",
        tone_rows(WARM_B, COOL_B, hard=("the hot oven",)),
    )
    jev = Jev(data_dir=colour_dir, cache_dir=colour_dir.parent / "cache")
    question = jev.question("colour")
    assert question.writers() == (ORIGINAL_WRITER, "writer-b")
    examples = question.train_examples()
    assert len(examples) == len(WARM) + len(COOL) + len(WARM_B) + len(COOL_B)
    oven = next(e for e in examples if e.text == "the hot oven")
    assert (oven.writer, oven.label, oven.hard) == ("writer-b", "warm", True)
    assert next(e for e in examples if e.text == "a silver moon").writer == ORIGINAL_WRITER

    # Two writers: the temperature comes from out-of-writer predictions.
    model = jev.trained("colour")
    assert model.calibrated_on == "out-of-writer"
    held = model.out_of_writer
    assert held is not None and held.logits.shape == (len(examples), 2)
    assert set(held.writer_temperatures) == {ORIGINAL_WRITER, "writer-b"}


def test_a_writers_file_changes_the_data_hash(colour_dir: Path) -> None:
    jev = Jev(data_dir=colour_dir, cache_dir=colour_dir.parent / "cache")
    before = jev.question("colour").data_hash()
    write_jsonl(colour_dir / "writers" / "writer-b" / "colour.jsonl", tone_rows(WARM_B, COOL_B))
    after = Jev(data_dir=colour_dir).question("colour").data_hash()
    assert after != before


def test_a_writer_may_not_bring_labels_the_question_does_not_have(colour_dir: Path) -> None:
    write_jsonl(
        colour_dir / "writers" / "writer-b" / "colour.jsonl", [{"text": "beige walls", "tone": "tepid"}]
    )
    jev = Jev(data_dir=colour_dir, cache_dir=colour_dir.parent / "cache")
    with pytest.raises(JevDataError, match="tepid"):
        jev.ask("colour", "a glowing ember")


def test_the_leave_one_writer_out_report_holds_each_writer_out(colour_dir: Path) -> None:
    write_jsonl(
        colour_dir / "writers" / "writer-b" / "colour.jsonl",
        tone_rows(WARM_B, COOL_B, hard=("the hot oven",)),
    )
    jev = Jev(data_dir=colour_dir, cache_dir=colour_dir.parent / "cache")
    report = writer_report("colour", jev=jev)
    assert report is not None
    assert [f.writer for f in report.writers] == [ORIGINAL_WRITER, "writer-b"]
    by_writer = {f.writer: f for f in report.writers}
    assert by_writer["writer-b"].n == len(WARM_B) + len(COOL_B)
    assert by_writer["writer-b"].hard_n == 1
    assert report.pooled.n == sum(f.n for f in report.writers)
    assert report.pooled.confusion.sum() == report.pooled.n
    for figures in [*report.writers, report.pooled]:
        assert 0.0 <= figures.accuracy <= 1.0 and 0.0 <= figures.ece <= 1.0 and 0.0 <= figures.ece_raw <= 1.0
    text = format_writer_report(report, show_mistakes=3)
    for needle in (
        "lowo accuracy",
        "lowo macro-F1",
        "lowo ECE",
        "lowo hard",
        "writer-b held out",
        "confusion",
    ):
        assert needle in text


def test_one_writer_has_no_leave_one_writer_out_report(colour_dir: Path) -> None:
    jev = Jev(data_dir=colour_dir, cache_dir=colour_dir.parent / "cache")
    assert writer_report("colour", jev=jev) is None
    assert jev.loaded("colour").model.calibrated_on == "held-out slice"


def test_the_built_in_kind_corpus_has_independent_writers() -> None:
    kind = questions()["kind"]
    writers = kind.writers()
    assert writers[0] == ORIGINAL_WRITER and len(writers) >= 4
    counts: dict[str, dict[str, int]] = {w: {c: 0 for c in kind.choices} for w in writers}
    for example in kind.train_examples():
        counts[example.writer][example.label] += 1
    for writer in writers[1:]:
        assert min(counts[writer].values()) >= 100, (writer, counts[writer])
    manifest = read_manifest()
    assert set(writers[1:]) <= set(manifest["writers"])
    # No text of the dev split or of the unseen test file is trained on, whoever wrote it.
    trained = {" ".join(e.text.casefold().split()) for e in kind.train_examples()}
    unseen = Path(__file__).parent / "data" / "kind_unseen.jsonl"
    held = [json.loads(line)["text"] for line in unseen.read_text().splitlines() if line.strip()]
    held += [e.text for e in kind.dev_examples()]
    assert not trained & {" ".join(t.casefold().split()) for t in held}


def test_import_validates_dedupes_and_reports_every_drop(colour_dir: Path, tmp_path: Path) -> None:
    write_jsonl(
        colour_dir / "colour.dev.jsonl",
        [{"text": "a pale blue sky", "tone": "cool"}, {"text": "embers", "tone": "warm"}],
    )
    a = tmp_path / "raw" / "writer-a"
    b = tmp_path / "raw" / "writer-b"
    write_jsonl(
        a / "colour.jsonl",
        [
            {"text": "molten gold", "tone": "warm", "hard": True},
            {"text": "  ", "tone": "warm"},  # empty text
            {"text": "grey slate", "tone": "grey"},  # not a choice
            {"text": "a silver moon", "tone": "cool"},  # already in the original corpus
            {"text": "A pale  blue sky", "tone": "cool"},  # a dev line (case and spaces folded)
            {"text": "iced tea", "tone": "cool"},
            {"text": "tepid bath", "tone": "warm"},  # writers disagree on it: dropped from both
            {"text": "molten gold", "tone": "warm"},  # duplicate within the writer
            {"text": "bonfire night", "tone": "warm", "hard": "yes"},  # hard not a boolean
        ],
    )
    (a / "colour.jsonl").write_text((a / "colour.jsonl").read_text() + '{"text": "half a li\n')
    write_jsonl(
        b / "colour.jsonl",
        [
            {"text": "tepid bath", "tone": "cool"},
            {"text": "iced tea", "tone": "cool"},  # writer-a has it already
            {"text": "a hot stove", "tone": "warm"},
        ],
    )
    report = import_writers({"writer-a": a, "writer-b": b}, data_dir=colour_dir, styles={"writer-a": "terse"})
    rows_a = [
        json.loads(x) for x in (colour_dir / "writers" / "writer-a" / "colour.jsonl").read_text().splitlines()
    ]
    rows_b = [
        json.loads(x) for x in (colour_dir / "writers" / "writer-b" / "colour.jsonl").read_text().splitlines()
    ]
    assert rows_a == [
        {"text": "molten gold", "tone": "warm", "hard": True},
        {"text": "iced tea", "tone": "cool"},
    ]
    assert rows_b == [{"text": "a hot stove", "tone": "warm"}]
    reasons = sorted((d.writer, d.reason.split(":")[0]) for d in report.dropped)
    assert reasons == sorted(
        [
            ("writer-a", "empty or missing text"),
            ("writer-a", "label not a choice of colour"),
            ("writer-a", "duplicate"),
            ("writer-a", "text of a held-out dev or test line"),
            ("writer-a", "conflict"),
            ("writer-a", "duplicate"),
            ("writer-a", '"hard" is not true or false'),
            ("writer-a", "not valid JSON"),
            ("writer-b", "conflict"),
            ("writer-b", "duplicate"),
        ]
    )
    manifest = read_manifest(colour_dir)["writers"]
    assert manifest["writer-a"]["style"] == "terse"
    assert manifest["writer-a"]["lines"] == {"colour": 2} and manifest["writer-b"]["lines"] == {"colour": 1}
    assert "dropped" in report.summary()

    # Re-importing replaces the writers' files rather than appending to them.
    import_writers({"writer-a": a, "writer-b": b}, data_dir=colour_dir)
    again = (colour_dir / "writers" / "writer-a" / "colour.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in again] == rows_a
    jev = Jev(data_dir=colour_dir, cache_dir=colour_dir.parent / "cache")
    assert jev.question("colour").writers() == (ORIGINAL_WRITER, "writer-a", "writer-b")


def test_the_import_command_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not a folder"):
        call_command("jev_import_writers", str(tmp_path / "nope"))


def test_jev_eval_prints_leave_one_writer_out_beside_the_file_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(
        tmp_path / "ok.jsonl", [{"text": "Mine.", "kind": "claim"}, {"text": "lol", "kind": "say"}]
    )
    call_command("jev_eval", str(path), "--question", "kind", "--passes", "1")
    out = capsys.readouterr().out
    # The lines other tools parse come first, unchanged.
    lines = out.splitlines()
    assert lines[2:5] == ["messages   2", "accuracy   1.000", "macro-F1   1.000"]
    assert lines[5].startswith("ECE        ") and lines[7].startswith("latency    p50 ")
    for needle in ("leave-one-writer-out", "lowo accuracy", "lowo ECE", "original held out", "hard lines"):
        assert needle in out
    call_command("jev_eval", str(path), "--question", "kind", "--passes", "1", "--no-lowo")
    assert "lowo accuracy" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "prepared"),
    [
        ("Full results are in launch-notes-v2.md", "full results are in _file_"),
        ("it's all in the q3-export.parquet", "it's all in the _file_"),
        ("deck is at ~/decks/launch.key", "deck is at _file_"),
        ("see backup-2026.tar.gz and IMG_0042.HEIC", "see _file_ and _file_"),
        ("everything is in drafts/", "everything is in _folder_"),
        ("dumped it under /srv/exports/q3", "dumped it under _folder_"),
        ("look in shared/reports/2026 for it", "look in _folder_ for it"),
        ("put it in ./out/", "put it in _folder_"),
        ("exported to s3://acme-exports/2026/q3/ last night", "exported to _url_ last night"),
        ("mirror is at gs://crows-backup/db", "mirror is at _url_"),
    ],
)
def test_prepare_recognises_any_extension_and_folders_as_artifacts(text: str, prepared: str) -> None:
    assert prepare(text) == prepared


@pytest.mark.parametrize(
    "text",
    [
        "and/or",
        "24/7 support",
        "w/ the team",
        "e.g. pricing",
        "i.e. tomorrow",
        "v2.1 is 3.5x faster",
        "done.Then",
        "Mr. Smith",
        "client/server",
        "wait...and then it worked",
        "hmm..not sure",
    ],
)
def test_prepare_leaves_words_that_only_look_like_paths_alone(text: str) -> None:
    assert "_file_" not in prepare(text) and "_folder_" not in prepare(text)


def test_out_of_writer_scores_equal_fitting_the_pipeline_without_the_writer(colour_dir: Path) -> None:
    import numpy as np

    from flock.jev.model import _fit, ordered_logits, out_of_writer

    write_jsonl(colour_dir / "writers" / "writer-b" / "colour.jsonl", tone_rows(WARM_B, COOL_B))
    question = Jev(data_dir=colour_dir).question("colour")
    examples = question.train_examples()
    held = out_of_writer(examples, question.choices)
    assert held is not None
    for writer in question.writers():
        rest = [e for e in examples if e.writer != writer]
        rows = [i for i, e in enumerate(examples) if e.writer == writer]
        pipeline = _fit([e.text for e in rest], [e.label for e in rest])
        expected = ordered_logits(pipeline, [examples[i].text for i in rows], question.choices)
        np.testing.assert_allclose(held.logits[rows], expected, rtol=1e-9, atol=1e-9)
