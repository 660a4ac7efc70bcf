"""The review queue's reads, Markdown rendering, the archive, the report as Markdown and
the owner's new pages (docs/REVIEW.md)."""

from __future__ import annotations

import pytest
from django.test import Client

from nests.queries_lists import archive, report_markdown
from nests.queries_review import review_cards
from nests.render import render_markdown
from tests.nests.test_lists_support import approve, run_list
from trust.actions import open_decision, record_owner_verdict

pytestmark = pytest.mark.django_db


def test_markdown_renders_code_tables_and_links_and_drops_anything_unsafe():
    html = render_markdown(
        "# Plan\n\n```python\nprint(1 < 2)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "[docs](https://example.org) [bad](javascript:alert(1)) <script>alert(1)</script> "
        "<img src=x onerror=alert(1)>"
    )
    assert '<pre><code class="language-python">print(1 &lt; 2)' in html
    assert "<table>" in html and "<td>1</td>" in html
    assert '<a href="https://example.org" target="_blank" rel="noopener noreferrer">docs</a>' in html
    assert "javascript:" not in html.replace("[bad](javascript:alert(1))", "")
    assert "<script>" not in html and "<img" not in html and "onerror=" not in html.replace("onerror=alert(1)&gt;", "")
    assert render_markdown("") == "" and render_markdown("   ") == ""


def test_the_queue_lists_every_waiting_card_oldest_deadline_first_with_what_to_judge():
    todo = run_list("write a haiku about crows\nname a crow")
    first, second = f"{todo.list_id}-1", f"{todo.list_id}-2"
    approve(first, "triage")
    open_decision(subject="pick", question="Which colour for the café sign?", options=["red", "blue"])
    cards = review_cards()
    kinds = [(c["item_id"], c["kind"]) for c in cards]
    assert (second, "triage") in kinds and (first, "output") in kinds and cards[-1]["kind"] == "decision"
    assert [c["deadline"] for c in cards] == sorted(c["deadline"] for c in cards)
    triage = next(c for c in cards if c["kind"] == "triage")
    assert triage["text"] == "name a crow" and triage["plan"]["mode"] in ("solo", "split", "murder")
    output = next(c for c in cards if c["kind"] == "output")
    assert output["text"] == "write a haiku about crows" and output["answer"] and output["answer_html"]
    assert output["crows"] and output["mock"] is True
    assert [c["item_id"] for c in review_cards(list_id=todo.list_id)] == [c["item_id"] for c in cards[:-1]]

    body = Client().get("/api/review").json()
    assert body["count"] == 3 and [c["key"] for c in body["cards"]] == [c["key"] for c in cards]
    record_owner_verdict(second, target="triage", approve=False, reason="not now")
    assert (second, "triage") not in [(c["item_id"], c["kind"]) for c in review_cards()]


def test_the_archive_pages_and_searches_every_list():
    ids = [run_list(f"item number {n}\nsecond line").list_id for n in range(3)]
    page = archive("", 1, per_page=2)
    assert page["total"] == 3 and page["pages"] == 2 and [row["list_id"] for row in page["lists"]] == ids[::-1][:2]
    assert archive("", 2, per_page=2)["lists"][0]["list_id"] == ids[0]
    assert archive("", 99, per_page=2)["page"] == 2
    found = archive("number 1")
    assert [row["list_id"] for row in found["lists"]] == [ids[1]]
    assert found["lists"][0]["first_items"] == ["item number 1", "second line"]
    # A search that matches one item still counts the whole list's items.
    assert found["lists"][0]["items"] == 2 and page["lists"][0]["items"] == 2
    html = Client().get("/lists?q=number+1").content.decode()
    assert ids[1] in html and ids[0] not in html
    # The date and the time apart: "2026-12-01 11:57", not "2026-12-0111:57".
    started = found["lists"][0]["started_at"]
    assert f">{started[:10]} {started[11:16]}</time>" in html


def test_the_report_downloads_as_markdown_with_reasons_and_edits():
    todo = run_list("write a haiku about crows\nname a crow")
    approve(f"{todo.list_id}-1", "triage")
    record_owner_verdict(f"{todo.list_id}-1", target="output", approve=True, edited_text="My *own* haiku")
    record_owner_verdict(f"{todo.list_id}-2", target="triage", approve=False, reason="Not this week.")
    from flock import worker

    worker.run_pending()
    text = report_markdown(todo.list_id)
    assert text.startswith(f"# List {todo.list_id}")
    assert "**Answer (edited by the owner):**" in text and "My *own* haiku" in text
    assert "Reason: Not this week." in text and "offline mock brain" in text.lower()
    response = Client().get(f"/lists/{todo.list_id}/report.md")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    assert response["Content-Disposition"] == f'attachment; filename="{todo.list_id}.md"'
    assert Client().get("/lists/Lnope/report.md").status_code == 404


@pytest.mark.parametrize("path", ["/review", "/settings", "/lists", "/glossary"])
def test_the_owners_pages_load_with_the_nav_count_and_the_mock_notice(path):
    html = Client().get(path).content.decode()
    assert 'id="nav-count"' in html and 'href="/review"' in html and 'href="/glossary"' in html
    assert "offline mock brain" in html and 'href="/settings"' in html


def test_the_glossary_defines_every_term_the_pages_link_to():
    html = Client().get("/glossary").content.decode()
    for anchor in ("murder", "elder", "jev", "trust-levels", "auto", "overrule", "fail-safe", "mock-brain",
                   "solo", "split", "triage", "flock"):
        assert f'id="{anchor}"' in html


def test_brains_lists_the_default_and_each_crow():
    body = Client().get("/api/brains").json()
    assert body["default"] == "mock" and body["default_is_mock"] is True
    assert {c["name"] for c in body["crows"]} >= {"Pepper", "Sentry", "Elder"}


def test_the_banner_names_the_crows_that_cannot_call_a_model_and_goes_when_all_can(settings):
    from flock.actions import update_crow
    from flock.queries import living_crows

    settings.CROWS_OPENAI_API_KEY = "sk-test"
    settings.CROWS_ANTHROPIC_API_KEY = ""
    settings.CROWS_ANTHROPIC_BASE_URL = ""
    page = Client().get("/review").content.decode()
    assert 'id="mock-banner"' in page and "The crows think with the <strong>offline mock brain</strong>" in page
    crows = list(living_crows().values_list("name", flat=True))
    for name in crows[2:]:
        update_crow(name, by="owner", model="openai:gpt-test")
    page = Client().get("/review").content.decode()
    assert f"{len(crows) - 2} of {len(crows)} crows can really call a model" in page
    assert f"2 of {len(crows)} cannot: {crows[0]}, {crows[1]} (the offline mock: no model is called)" in page
    # A provider with no key is no real model either: the banner says what to set.
    update_crow(crows[0], by="owner", model="anthropic:claude-test")
    page = Client().get("/review").content.decode()
    assert f"{crows[0]} (no Anthropic key: set CROWS_ANTHROPIC_API_KEY or ANTHROPIC_API_KEY" in page
    settings.CROWS_ANTHROPIC_API_KEY = "sk-ant-test"
    update_crow(crows[1], by="owner", model="anthropic:claude-test")
    assert 'id="mock-banner"' not in Client().get("/review").content.decode()


def test_a_tables_column_alignment_is_a_class_not_an_inline_style():
    # The pages' Content-Security-Policy refuses inline styles (docs/SECURITY.md).
    html = render_markdown("| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n\n<td style=\"color:red\">x</td>")
    assert '<th class="align-left">a</th>' in html and '<td class="align-center">2</td>' in html
    assert '<td class="align-right">3</td>' in html
    assert "style=" not in html.replace('&lt;td style="color:red"&gt;', "")
