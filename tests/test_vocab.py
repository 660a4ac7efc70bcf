"""One source per vocabulary (flock/vocab.py): the model's choices, the actions' names,
the trust ledger's levels and the pages' data all read the same lists."""

from __future__ import annotations

import json
import re

from flock import vocab
from nests.actions import messages
from nests.models import NestMessage
from trust import models as trust_models


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
