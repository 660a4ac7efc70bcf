"""The chat core on PostgreSQL, in process: the same posts the in-process tests make on
SQLite, where row locks are real. PostgreSQL refuses some queries SQLite accepts (FOR UPDATE
on the nullable side of an outer join, for one), so a rule's query is checked on both."""

from __future__ import annotations

import pytest

from tests.support.services import missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

SCRIPT = """
import json
from flock import worker
from nests.actions import post_message
from nests.models import Expectation, NestMessage

# A request opens an expectation; the next posts score the room's open ones against them.
post_message("todo", author="owner", text="@Hugin please summarise the three notes by noon")
worker.run_pending()
post_message("todo", author="owner", text="thanks, all")
worker.run_pending()
print(json.dumps({
    "messages": NestMessage.objects.filter(nest__nest_id="todo").count(),
    "expectations": Expectation.objects.count(),
    "authors": sorted(set(NestMessage.objects.values_list("author", flat=True))),
}))
"""


def test_owner_posts_with_open_expectations_work_on_postgresql(tmp_path):
    report = run_on_fresh_postgres(SCRIPT, tmp_path)
    assert report["messages"] >= 3  # two owner posts and at least Hugin's answer
    assert report["expectations"] >= 1
    assert "Hugin" in report["authors"]
