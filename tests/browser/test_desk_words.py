"""The desk in plain words and from the keyboard: settings that tell the truth, the owner's
own Markdown and links, skip links and `/`, the first-run step, and an open dialog that
axe finds clean."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot
from tests.browser.test_desk_pages import _axe


def test_the_mock_test_is_neutral_and_a_keyless_model_asks_before_it_is_saved(flock, open_page, console) -> None:
    console.allow(r"status of 409 .*api/crows/Pepper")  # the keyless model, refused until confirmed
    page = open_page(flock.url + "/settings", wait="idle")
    page.click("#test-default")
    result = page.locator("#test-default-result")
    expect(result).to_have_text("offline mock: no model called.")
    expect(result).to_have_class("test-result neutral")

    row = page.locator('tr[data-crow="Pepper"]')
    row.get_by_label("Model for Pepper").fill("openai:gpt-nokey")
    save = row.get_by_role("button", name="Save Pepper's model")
    save.click()
    dialog = page.locator("dialog.crows-dialog[open]")
    expect(dialog).to_contain_text("Save openai:gpt-nokey for Pepper anyway?")
    expect(dialog).to_contain_text("no OpenAI key")
    screenshot(page, "desk-settings-keyless-warning", full_page=False)
    dialog.get_by_role("button", name="Keep the current model").click()
    expect(dialog).to_have_count(0)
    expect(save).to_be_focused()  # focus goes back where it was
    expect(row.locator(".form-error")).to_contain_text("cannot be called yet")
    assert [c["model"] for c in flock.get("/api/crows").json() if c["name"] == "Pepper"] == ["mock"]

    save.click()
    page.locator("dialog.crows-dialog[open]").get_by_role("button", name="Save for Pepper anyway").click()
    expect(page.locator(".toast")).to_contain_text("Pepper now thinks with openai:gpt-nokey")
    page.reload()
    expect(page.locator("#mock-banner")).to_contain_text("Pepper (no OpenAI key")


def test_the_owners_message_renders_markdown_and_links(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/dm-pepper")
    page.fill("#composer-text", "**Ship it** today, plan at https://example.com/plan and `code stays`")
    page.press("#composer-text", "Enter")
    mine = page.locator('.msg[data-author="owner"]').last
    expect(mine.locator(".msg-md strong")).to_have_text("Ship it")
    link = mine.locator('a[href="https://example.com/plan"]')
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(mine.locator(".msg-md code")).to_have_text("code stays")
    # A reload draws it rendered from the start.
    page.reload()
    expect(page.locator('.msg[data-author="owner"]').last.locator(".msg-md strong")).to_have_text("Ship it")


@pytest.mark.parametrize("path, box, words", [("/", "#list-text", "Skip to the new list"),
                                              ("/nests/todo", "#composer-text", "Skip to the message box")])
def test_a_skip_link_reaches_the_box_in_one_tab_and_slash_focuses_it(flock, open_page, path, box, words) -> None:
    page = open_page(flock.url + path)
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text(words)
    page.keyboard.press("Enter")
    expect(page.locator(box)).to_be_focused()
    # `/` from anywhere that is not taking text puts focus in the box, and types nothing.
    page.locator("#main").focus()
    page.keyboard.press("/")
    expect(page.locator(box)).to_be_focused()
    expect(page.locator(box)).to_have_value("")


def test_a_fresh_install_offers_a_first_step_once(flock, open_page) -> None:
    page = open_page(flock.url + "/")
    step = page.locator("#first-run")
    expect(step).to_be_visible()
    expect(step.get_by_role("link", name="Connect a model")).to_have_attribute("href", "/settings")
    screenshot(page, "desk-first-run", full_page=False)
    step.get_by_role("button", name="Try it offline").click()
    expect(step).to_be_hidden()
    expect(page.locator("#list-text")).to_be_focused()
    page.reload()
    page.wait_for_selector('#conn[data-state="live"]')
    expect(step).to_be_hidden()


def test_an_open_dialog_and_the_cards_bar_keep_axe_clean(flock, open_page) -> None:
    for text in ("Write a haiku about rain", "Name a crow", "List three facts about crows"):
        flock.post("/api/lists", {"text": text, "requester": "owner"})
    page = open_page(flock.url + "/review")
    expect(page.locator(".review-triage")).to_have_count(3, timeout=40_000)
    page.get_by_role("button", name="Approve all shown").click()
    expect(page.locator("dialog.crows-dialog[open]")).to_be_visible()
    assert _axe(page) == []
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Approve all shown")).to_be_focused()
    nest = open_page(flock.url + "/nests/todo")
    expect(nest.locator("#cards-bar")).to_contain_text("waiting card", timeout=30_000)
    assert _axe(nest) == []


def test_harness_words_show_local_times_and_links_with_words_not_ids(flock, open_page) -> None:
    r = flock.post("/api/nests/todo/messages", {"author": "owner", "text": "Pepper, draft the launch post please"})
    assert r.status_code == 201, r.text
    page = open_page(flock.url + "/nests/todo")
    expect(page.locator("#msg-todo-1")).to_be_visible()
    drawn = page.evaluate("""async () => {
      const { messageEl } = await import("/static/ui/chat.js");
      const due = new Date(Date.now() + 8 * 60000 + 20000).toISOString();
      const el = messageEl({ msg_id: "todo-99", author: "harness", kind: "say", to: "owner", ts: new Date().toISOString(),
        text: `Owner summary for @owner: no exchanges left. - exp-3 (claim) on todo-1: a claim. Due ${due}, 1/3 nudges.` });
      const text = el.querySelector(".msg-text");
      return { text: text.textContent, time: text.querySelector("time")?.textContent, iso: due,
               link: text.querySelector('a[href="#msg-todo-1"]')?.textContent, exp: text.querySelector("a.exp-ref")?.title };
    }""")
    assert drawn["iso"] not in drawn["text"], drawn
    assert drawn["time"].startswith("in 8 min, at "), drawn
    assert drawn["link"] == "your “Pepper, draft the launch post please”", drawn
    assert drawn["exp"] == "exp-3" and "exp-3" not in drawn["text"], drawn
