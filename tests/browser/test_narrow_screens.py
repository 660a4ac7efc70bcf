"""Wide content on narrow screens (docs/UI.md, laptop and phone widths): answers holding a
code block with one long line, a Markdown table and a long URL, list items that are (or
hold) one 120-character word, and a crow with an orchestration decision. On a phone no
page scrolls sideways (code and tables scroll inside their own boxes, which the keyboard
can reach; long words wrap), and axe finds no serious or critical violation at phone or
laptop width with that content showing.

One server for the module: the content takes a while to make (two lists flown by the
scripted brain, verdicts, a model change), and every test only reads it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.waiting import wait_until

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import Page, expect

from tests.browser.support import LAPTOP, PHONE, screenshot
from tests.browser.test_desk_pages import _axe
from tests.support.server import LiveServer, SqliteTemplate

LONG_URL = "https://example.org/corvids/" + "memory-and-tool-use-" * 8 + "in-new-caledonian-crows"
LONG_CODE_LINE = "crows = [" + ", ".join(f'"crow-{n:03d}"' for n in range(40)) + "]"
WIDE_ANSWER = (
    "Here is the census:\n\n"
    f"```python\n{LONG_CODE_LINE}\nprint(len(crows))\n```\n\n"
    "| Crow | Roost | Tools used | Favourite snack | Notes from the field |\n"
    "|---|---|---|---|---|\n"
    "| Quill | the old oak by the river | twigs, hooks, a bent wire | walnuts | caches food in gutters |\n"
    "| Pepper | the chimney stack | bottle caps, string | chips | steals from the bakery |\n\n"
    f"Sources: {LONG_URL}\n"
)
# One unbroken 120-character word: the audit's list item that widened every archive row.
LONG_WORD = "Corvid" * 20
ITEMS = [LONG_WORD, "Count the crows on the wire"]

PAGES = ["home", "review", "archive", "report", "crow"]


@dataclass
class WideContent:
    server: LiveServer
    list_id: str  # finished: both items answered with WIDE_ANSWER
    crow: str  # flew for that list, then moved to another model (one orchestration decision)

    def path(self, page: str) -> str:
        return {"home": "/", "review": "/review", "archive": "/lists", "report": f"/lists/{self.list_id}",
                "crow": f"/crows/{self.crow}"}[page]


def _approve_waiting(server: LiveServer, list_id: str, *, targets: tuple[str, ...]) -> None:
    for card in server.get("/api/review").json()["cards"]:
        if card["item_id"].startswith(f"{list_id}-") and card["target"] in targets:
            server.post("/api/verdicts", {"item_id": card["item_id"], "target": card["target"], "approve": True})


@pytest.fixture(scope="module")
def wide(sqlite_template: SqliteTemplate, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WideContent]:
    rules = [
        {"crow": "Sentry", "task": "triage",
         "reply": json.dumps({"mode": "solo", "task_type": "research", "reason": "One crow can look it up."})},
        {"crow": "*", "task": "answer", "reply": WIDE_ANSWER},
    ]
    rules_path = tmp_path_factory.mktemp("narrow-rules") / "rules.json"
    rules_path.write_text(json.dumps(rules))
    server = LiveServer(sqlite_template.fresh_dir("narrow-screens"),
                        env={"CROWS_BRAIN": f"script:{rules_path}", "CROWS_HEARTBEAT_S": "2"}).start()
    try:
        # A finished list: every triage call and answer approved over the API.
        response = server.post("/api/lists", {"text": "\n".join(ITEMS), "requester": "owner"})
        assert response.status_code == 202, response.text
        list_id = response.json()["list_id"]

        def finished() -> dict[str, Any] | None:
            _approve_waiting(server, list_id, targets=("triage", "output"))
            state = server.get(f"/api/lists/{list_id}").json()
            return state if state["status"] == "finished" else None

        state = wait_until(finished, what=f"list {list_id} to finish", timeout=90, every=0.3)
        assert [i["stage"] for i in state["items"]] == ["answered"] * 2, state
        crow = state["items"][0]["crows"][0]

        # A second list left with its answer waiting on /review.
        waiting_id = server.post("/api/lists", {"text": f"Find three facts about {LONG_WORD}",
                                                "requester": "owner"}).json()["list_id"]

        def answer_waiting() -> bool:
            _approve_waiting(server, waiting_id, targets=("triage",))
            return any(c["item_id"] == f"{waiting_id}-1" and c["target"] == "output"
                       for c in server.get("/api/review").json()["cards"])

        wait_until(answer_waiting, what="an answer waiting for review", timeout=90, every=0.3)

        # The owner moves the crow to another model: Jev scores the pick and logs it.
        response = httpx.patch(f"{server.url}/api/crows/{crow}", json={"model": "mock:narrow-screens"}, timeout=30)
        assert response.status_code == 200, response.text
        wait_until(lambda: server.get(f"/api/orchestration?crow={crow}").json()["decisions"],
                   what="the orchestration decision", timeout=90, every=0.3)
        yield WideContent(server, list_id, crow)
    finally:
        server.stop()


# What each page must show before it is measured: the wide content itself, drawn (answers
# are rendered after a read of their list), so a page cannot pass by being still empty.
ANSWER = (".answer-md pre", ".answer-md .table-wrap table", f".answer-md :text('{LONG_URL[-30:]}')")
READY: dict[str, tuple[str, ...]] = {
    "home": (*ANSWER, f".item-text:text('{LONG_WORD}')"),
    "review": (*ANSWER, f".review-text:has-text('{LONG_WORD}')"),
    "archive": (f".archive-items li:text('{LONG_WORD}')",),
    "report": (*ANSWER, f".item-text:text('{LONG_WORD}')"),
    "crow": ("#crow-orchestration table", "#crow-trust table"),
}


@pytest.fixture
def open_at(open_page) -> Callable[..., Page]:
    """`open_at(url, viewport)`: a fresh context on that page, its stream live (the
    archive has none: it is read once, when the network is quiet)."""
    return lambda url, viewport: open_page(url, viewport=viewport, reduced_motion=True, wait="auto")


def _open(open_at: Callable[..., Page], wide: WideContent, name: str, viewport: dict[str, int]) -> Page:
    page = open_at(wide.server.url + wide.path(name), viewport)
    for selector in READY[name]:
        expect(page.locator(selector).first).to_be_visible()
    return page


@pytest.mark.parametrize("name", PAGES)
def test_no_page_scrolls_sideways_on_a_phone(wide: WideContent, open_at: Callable[..., Page], name: str) -> None:
    page = _open(open_at, wide, name, PHONE)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    screenshot(page, f"phone-wide-{name}")
    assert overflow <= 1, f"{wide.path(name)} is {overflow}px wider than a phone screen"
    if name in ("home", "review", "report"):
        # The long code line scrolls inside its own block, which the keyboard can reach; so
        # does a table, in a box named for the answer it is in.
        pre = page.locator(".answer-md pre").first
        # Waited for, not read once: on a busy machine the answer may still be laid out.
        scrolls = pre.element_handle().wait_for_element_state("stable") or pre.evaluate(
            "el => el.scrollWidth > el.clientWidth"
        )
        assert scrolls, "the code line was cut or wrapped"
        assert pre.get_attribute("tabindex") == "0"
        table_box = page.locator(".answer-md .table-wrap").first
        assert table_box.get_attribute("tabindex") == "0"
        assert (table_box.get_attribute("aria-label") or "").startswith("Table in the answer to")
    assert _axe(page) == []


@pytest.mark.parametrize("name", PAGES)
def test_axe_is_clean_with_wide_content_on_a_laptop(wide: WideContent, open_at: Callable[..., Page], name: str) -> None:
    page = _open(open_at, wide, name, LAPTOP)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"{wide.path(name)} is {overflow}px wider than a laptop screen"
    assert _axe(page) == []

