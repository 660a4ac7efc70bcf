// A list as a report: its own stream replays the list from its first event, so a
// finished list reads top to bottom, and an unfinished one keeps filling in. What waits
// for the owner shows as review cards at the top (review.js); a finished item can be
// overruled (an auto-approved answer) or retried with a note (skipped or overruled).

import { $, uiConfig, fmtTime, plural, keepFocus } from "../dom.js";
import { get } from "../api.js";
import { Stream } from "../stream.js";
import { ListBook, ListStates, ownerHandlers, renderList, startCountdowns } from "../lists.js";
import { ReviewQueue } from "../review.js";
import { toast, messageOf } from "../notify.js";

const ui = uiConfig();
const config = ui.config || {};
const book = new ListBook();
const sending = new Set();

const ctx = {
  config, sending, deadlines: new Map(), noApprovalBoxes: true,
  flights: new Map(), openFlights: new Set(),
  onVerdict: () => {},
  ...ownerHandlers,
  loadFlights: async (item) => {
    try {
      ctx.flights.set(item.item_id, (await get(`/api/flights?item_id=${encodeURIComponent(item.item_id)}&limit=100`)).reverse());
    } catch (err) {
      toast(`Could not read the flight log: ${messageOf(err)}`, "error");
      return;
    }
    draw();
  },
};
const states = new ListStates(ctx, () => {
  for (const id of ctx.openFlights) {
    const item = book.lists.get(ui.list_id)?.items.get(id);
    if (item) ctx.loadFlights(item);
  }
  draw();
});

function draw() {
  const list = book.lists.get(ui.list_id);
  if (!list) return;
  const card = renderList(list, ctx, { report: !!list.finished });
  const items = card.querySelector(".items");
  $("#report-meta").textContent = [
    list.nest_id ? `#${list.nest_id}` : "",
    list.requester ? `from ${list.requester}` : "",
    list.started ? `started ${fmtTime(list.started)}` : "",
    list.finished ? `finished ${fmtTime(list.finished.ts)}` : "still in flight",
    plural(list.items.size, "item"),
  ].filter(Boolean).join(" · ");
  $("#report-budget").replaceChildren(card.querySelector(".budget"));
  // Keep what the owner was doing: focus, an open flight log, a half-typed note.
  const typing = document.activeElement && document.activeElement.matches?.("#report-items textarea");
  if (typing) return;
  keepFocus($("#report-items"), () => $("#report-items").replaceChildren(items));
}

async function main() {
  startCountdowns();
  new ReviewQueue($("#review-inline"), {
    listId: ui.list_id,
    onCount: (n) => { $("#review-inline-panel").hidden = n === 0; },
  });
  let state = { capabilities: [], last_event_id: 0 };
  try {
    state = await get("/api/state");
  } catch (err) {
    toast(`Could not read the flock's state: ${messageOf(err)}`, "error");
  }
  states.soon(ui.list_id, 0);
  new Stream({ params: { list_id: ui.list_id }, liveAfter: state.last_event_id ?? 0, names: state.capabilities || [] })
    .onAny((event) => {
      if (book.apply(event)) draw();
      if (ListStates.touches(event.name)) states.soon(ui.list_id);
    })
    .start();
}

main();
