// A list as a report: its own stream replays the list from its first event, so a
// finished list reads top to bottom, and an unfinished one keeps filling in.

import { $, uiConfig, fmtTime, plural } from "../dom.js";
import { get, post } from "../api.js";
import { Stream } from "../stream.js";
import { ListBook, renderList, startCountdowns } from "../lists.js";
import { toast, messageOf } from "../notify.js";

const ui = uiConfig();
const config = ui.config || {};
const book = new ListBook();
const sending = new Set();

const ctx = {
  config, sending, deadlines: new Map(),
  onVerdict: async (item, target, approve) => {
    sending.add(`${item.item_id}:${target}`);
    draw();
    try {
      await post("/api/verdicts", { item_id: item.item_id, target, approve });
    } catch (err) {
      item.errors = { ...(item.errors || {}), [target]: messageOf(err) };
    } finally {
      sending.delete(`${item.item_id}:${target}`);
      draw();
    }
  },
};

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
  $("#report-items").replaceChildren(items);
}

async function main() {
  startCountdowns();
  let state = { capabilities: [], last_event_id: 0 };
  try {
    state = await get("/api/state");
  } catch (err) {
    toast(`Could not read the flock's state: ${messageOf(err)}`, "error");
  }
  new Stream({ params: { list_id: ui.list_id }, liveAfter: state.last_event_id ?? 0, names: state.capabilities || [] })
    .onAny((event) => {
      if (book.apply(event)) draw();
    })
    .start();
}

main();
