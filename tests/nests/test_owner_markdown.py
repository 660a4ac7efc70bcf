"""The owner's own messages render as Markdown with the answers' safe renderer, and bare
http(s) URLs become links (rel="noopener noreferrer"); code keeps its text."""

from __future__ import annotations

import pytest

from nests.actions import create_nest
from nests.queries_review import deliveries_rendered_in
from nests.render import linkify, render_markdown
from tests.nests.test_messages import post


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def test_a_bare_url_becomes_a_safe_link_and_code_keeps_its_text():
    html = render_markdown("see https://example.com/a?x=1. and `https://in.code`")
    assert '<a href="https://example.com/a?x=1" target="_blank" rel="noopener noreferrer">https://example.com/a?x=1</a>.' in html
    assert "<code>https://in.code</code>" in html
    assert linkify("[docs](https://x.y) and <https://a.b>") == "[docs](https://x.y) and <https://a.b>"
    assert "href=\"javascript" not in render_markdown("[x](javascript:alert(1))")


def test_the_owners_message_carries_its_rendered_markdown(client, launch):
    r = post(client, "launch", {"author": "owner", "text": "**Ship it** today: https://example.com/plan"})
    assert r.status_code == 201, r.json()
    page = client.get("/api/nests/launch/messages").json()
    (mine,) = [m for m in page["messages"] if m["author"] == "owner"]
    assert "<strong>Ship it</strong>" in mine["html"] and 'href="https://example.com/plan"' in mine["html"]
    assert deliveries_rendered_in("launch")[mine["msg_id"]] == mine["html"]
