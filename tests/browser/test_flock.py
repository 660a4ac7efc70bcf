"""The flock's animation state machine, driven only by events through rive_inputs.js:
checked in the browser against the real modules with synthetic events."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot

DRIVE = """async ([events, live]) => {
  const { inputsFor } = await import('/static/ui/rive_inputs.js');
  const { FlockStage } = await import('/static/ui/flock.js');
  if (!window.__stage) {
    const wire = document.createElement('ol');
    wire.className = 'wire';
    wire.id = 'test-wire';
    document.querySelector('.stage').append(wire);
    window.__stage = new FlockStage(wire);
    window.__stage.setFlock([{name: 'Pepper', epithet: 'the Quick-Beak'}, {name: 'Soot', epithet: 'the Chimney Bard'}]);
  }
  for (const [name, data] of events) window.__stage.apply(inputsFor(name, data), { live });
  return Object.fromEntries([...window.__stage.machines].map(([n, m]) => [n, m.el.dataset.state]));
}"""


def test_event_inputs_drive_each_crow(flock, open_page) -> None:
    page = open_page(flock.url + "/")
    inputs = page.evaluate(
        """async () => {
          const { inputsFor, INPUTS } = await import('/static/ui/rive_inputs.js');
          return {
            names: Object.keys(INPUTS),
            landed: inputsFor('crow.landed', {crow: 'Pepper', ok: false, item_id: 'L1-1'}),
            pranked: inputsFor('requester.pranked', {message: 'caw'}),
            other: inputsFor('list.started', {}),
          };
        }"""
    )
    # Input names are the event names (plus the `ok` boolean the landing reads).
    assert set(inputs["names"]) == {
        "crow.flying", "ok", "crow.landed", "crow.banter", "requester.pranked", "crow.quarantined",
    }
    assert [i["input"] for i in inputs["landed"]] == ["ok", "crow.landed"]
    assert inputs["landed"][0]["value"] is False
    assert inputs["pranked"][0]["crow"] == "*"
    assert inputs["other"] == []

    state = page.evaluate(DRIVE, [[["crow.flying", {"crow": "Pepper", "item_id": "L1-1"}],
                                   ["crow.flying", {"crow": "Pepper", "item_id": "L1-2"}]], True])
    assert state == {"Pepper": "flying", "Soot": "perched"}
    expect(page.locator("#test-wire .perch[data-crow=Pepper] .flight-tag")).to_have_text("→ #1 #2")

    # Still flying until its last flight lands.
    state = page.evaluate(DRIVE, [[["crow.landed", {"crow": "Pepper", "item_id": "L1-1", "ok": True}]], True])
    assert state["Pepper"] == "flying"
    state = page.evaluate(DRIVE, [[["crow.landed", {"crow": "Pepper", "item_id": "L1-2", "ok": False}]], True])
    assert state["Pepper"] == "tumbling"
    expect(page.locator("#test-wire .perch[data-crow=Pepper]")).to_have_attribute("data-state", "perched", timeout=5_000)

    page.evaluate(DRIVE, [[["crow.banter", {"crow": "Soot", "to": "Pepper", "text": "Nice tumble."}]], True])
    expect(page.locator("#test-wire .perch[data-crow=Soot] .bubble")).to_contain_text("Nice tumble.")

    page.evaluate(DRIVE, [[["requester.pranked", {"message": "caw", "cooldown_s": 60}]], True])
    expect(page.locator("#test-wire .perch.is-pranking")).to_have_count(2)

    state = page.evaluate(DRIVE, [[["crow.quarantined", {"crow": "Soot"}]], True])
    assert state["Soot"] == "caged"
    expect(page.locator("#test-wire .perch[data-crow=Soot] .cage")).to_be_visible()

    # Replayed events (from before the page opened) set state without the show.
    state = page.evaluate(DRIVE, [[["crow.flying", {"crow": "Pepper", "item_id": "L2-1"}],
                                   ["crow.landed", {"crow": "Pepper", "item_id": "L2-1", "ok": False}]], False])
    assert state["Pepper"] == "perched"


def test_a_live_list_flies_the_crows(live_server_factory, open_page) -> None:
    # Slow brains, so the flight is long enough to see.
    server = live_server_factory(env={"CROWS_MOCK_LATENCY_MS": "1500"}).start()
    page = open_page(server.url + "/")
    page.fill("#list-text", "Write a haiku about dusk")
    page.click("#list-send")
    # The Sentry takes off to triage the item, and lands again.
    expect(page.locator(".perch[data-crow=Sentry]")).to_have_attribute("data-state", "flying")
    expect(page.locator(".perch[data-crow=Sentry] .perch-status")).to_contain_text("flying #1")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "flock-in-flight", full_page=False)
    expect(page.locator(".perch[data-crow=Sentry]")).to_have_attribute("data-state", "perched", timeout=30_000)
