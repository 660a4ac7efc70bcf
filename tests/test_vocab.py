"""One source per vocabulary (flock/vocab.py): the model's choices, the actions' names,
the trust ledger's levels and the pages' data all read the same lists."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from flock import vocab
from nests.actions import messages
from nests.models import NestMessage
from trust import models as trust_models

ROOT = Path(__file__).resolve().parents[1]


def test_message_kinds_are_the_models_choices_and_the_actions_lists():
    field = NestMessage._meta.get_field("kind")
    assert [value for value, _ in field.choices] == list(vocab.KINDS)
    assert messages.CROW_KINDS == vocab.CROW_KINDS
    assert set(vocab.CROW_KINDS) | set(vocab.HARNESS_KINDS) == set(vocab.KINDS)


def test_trust_levels_come_from_the_vocabulary():
    assert (trust_models.STRANGER, trust_models.REGULAR, trust_models.TRUSTED) == (0, 1, 2)
    assert trust_models.LEVEL_NAMES == {0: "stranger", 1: "regular", 2: "trusted"}


def test_every_page_carries_the_vocabularies(client, db):
    page = client.get("/").content.decode()
    data = json.loads(re.search(r'<script[^>]*id="ui-config"[^>]*>(.*?)</script>', page, re.DOTALL).group(1))
    assert data["vocab"] == vocab.page_vocab()
    assert data["vocab"]["owner"] == "owner" and data["vocab"]["sentry"] == "Sentry"


# --- no vocabulary spelled out beside flock/vocab.py --------------------------------------

VOCAB_WORDS = frozenset(
    [*vocab.KINDS, *vocab.LEVEL_NAMES.values(), vocab.OWNER, vocab.HARNESS, vocab.SENTRY]
)
# Names under which code holds a kind, an author or addressee, or a trust level: a literal
# compared with one of them, or passed as one of these keywords, is the vocabulary spelled out.
VOCAB_SUBJECTS = frozenset(
    {"kind", "kinds", "author", "to", "by", "decider", "requester", "addressed", "header", "level",
     "poster", "sender", "holder", "crow", "name", "who"}
)
VOCAB_KEYWORDS = frozenset({"kind", "author", "to", "by", "decider", "requester", "on_behalf_of", "level", "expect"})


def _ident(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, (ast.Subscript, ast.Call)):
        return _ident(node.value if isinstance(node, ast.Subscript) else node.func)
    return ""


def _literals(node: ast.AST) -> list[ast.Constant]:
    if isinstance(node, ast.Constant):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant)]
    return []


def vocabulary_literals(path: Path, root: Path = ROOT) -> list[str]:
    """Kinds, trust levels and the owner/harness/Sentry names spelled as string literals in
    comparisons and keyword arguments (`kind == "claim"`, `author="owner"`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        spelled: list[ast.Constant] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_ident(o) in VOCAB_SUBJECTS for o in operands):
                spelled += [c for o in operands for c in _literals(o)]
        elif isinstance(node, ast.Call):
            spelled += [c for k in node.keywords if k.arg in VOCAB_KEYWORDS for c in _literals(k.value)]
        found += [f"{path.relative_to(root)}:{c.lineno} {c.value!r}" for c in spelled if c.value in VOCAB_WORDS]
    return found


def test_the_scan_sees_a_kind_spelled_out(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('if message.kind == "claim" or post(author="owner"):\n    pass\n')
    assert vocabulary_literals(sample, tmp_path) == ["sample.py:1 'claim'", "sample.py:1 'owner'"]


def test_no_kind_level_or_speaker_name_is_spelled_out_in_the_apps():
    spelled = [
        hit
        for app in ("nests", "trust", "crows_site")
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts
        for hit in vocabulary_literals(path)
    ]
    assert spelled == [], "use flock.vocab's names: " + ", ".join(spelled)
