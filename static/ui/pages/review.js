// /review: every card waiting for the owner, with the keyboard path (review.js). The
// firehose keeps the queue fresh (waiting.js re-reads on each live event).

import { $, uiConfig } from "../dom.js";
import { get } from "../api.js";
import { Stream } from "../stream.js";
import { ReviewQueue } from "../review.js";
import { toast, messageOf } from "../notify.js";

const ui = uiConfig();

async function main() {
  const queue = new ReviewQueue($("#review"), {
    global: true,
    onCount: (n) => { $("#review-count").textContent = n ? `${n} waiting` : "all clear"; },
  });
  let state = { capabilities: [], last_event_id: 0 };
  try {
    state = await get("/api/state");
  } catch (err) {
    toast(`Could not read the flock's state: ${messageOf(err)}`, "error");
  }
  new Stream({ since: state.last_event_id ?? 0, liveAfter: state.last_event_id ?? 0, names: state.capabilities || [] })
    .onAny(() => {})
    .start();
  return queue;
}

main();
void ui;
