// The trust ledger as a table (holders by task type) and the flight log's per-model
// comparison as small-multiple bar charts.

import { $, h, uiConfig, fmtTokens } from "../dom.js";
import { get, isMissingEndpoint } from "../api.js";
import { Stream } from "../stream.js";
import { crowAvatar } from "../crow_art.js";
import { smallMultiples, SERIES_COLOURS, levelSteps } from "../charts.js";
import { readLedger, readFlightModels, historyPoints, LEVEL_WORDS, TASK_TYPES } from "../trustdata.js";
import { toast, messageOf } from "../notify.js";

let crows = [];
const ui = uiConfig();
// Retired crows keep their rows in the ledger; GET /api/crows no longer lists them.
const retired = new Set(ui.retired || []);
// The page arrives with every holder's trust history; live changes are added to it.
const history = [];
for (const [holder, entries] of Object.entries(ui.trust_history || {})) {
  for (const c of entries) history.push({ holder, task_type: c.task_type, from: Number(c.from ?? 0), to: Number(c.to ?? 0), t: Date.parse(c.at) });
}

function holderCell(holder) {
  if (holder === "flock") {
    return h("span", { class: "holder", title: "The flock holds trust for the Sentry's triage calls" },
      h("span", { class: "flock-mark", "aria-hidden": "true" }, crowAvatar("Sentry", 22), crowAvatar("Quill", 22), crowAvatar("Pepper", 22)),
      "the flock (triage)");
  }
  const crow = crows.find((c) => c.name === holder);
  const mark = retired.has(holder) ? h("span", { class: "tiny-badge", dataset: { mark: "retired" } }, "retired")
    : crow && crow.status === "quarantined" ? h("span", { class: "tiny-badge warn", dataset: { mark: "caged" } }, "caged")
      : null;
  return h("a", { class: "holder", href: `/crows/${encodeURIComponent(holder)}` }, crowAvatar(holder, 22), holder, mark ? " " : null, mark);
}

async function drawLedger() {
  const box = $("#ledger");
  let ledger;
  try {
    ledger = readLedger(await get("/api/trust"));
  } catch (err) {
    box.replaceChildren(h("p", { class: "muted" }, isMissingEndpoint(err) ? "The trust ledger is not served by this build yet (GET /api/trust)." : `Could not read the ledger: ${messageOf(err)}`));
    return;
  }
  const types = [...new Set([...TASK_TYPES, ...ledger.rows.map((r) => r.task_type)])];
  const holders = [...new Set(["flock", ...crows.map((c) => c.name), ...retired, ...ledger.rows.map((r) => r.holder)])];
  const cell = (holder, t) => {
    const row = ledger.rows.find((r) => r.holder === holder && r.task_type === t);
    if (!row) return h("td", {}, h("span", { class: "level level-none", title: "no verdicts yet: a stranger" }, "·"));
    const points = historyPoints(history, holder, t);
    return h("td", { title: `${holder} · ${t}: ${LEVEL_WORDS[row.level]}${row.streak !== null ? `, ${row.streak} approvals in a row` : ""}` },
      h("span", { class: `level level-${row.level}` }, LEVEL_WORDS[row.level] ?? row.level,
        row.streak ? h("span", { class: "streak" }, ` ${row.streak}✓`) : null),
      points.length > 1 ? levelSteps(points, { width: 64, height: 22 }) : null);
  };
  box.replaceChildren(h("table", { class: "ledger" },
    h("caption", { class: "sr-only" }, "Trust level of each holder for each task type"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Holder"), types.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, holders.map((holder) => h("tr", {}, h("th", { scope: "row" }, holderCell(holder)), types.map((t) => cell(holder, t)))))));
}

async function drawFlightLog() {
  const box = $("#flightlog");
  let models;
  try {
    models = readFlightModels(await get("/api/flightlog"));
  } catch (err) {
    box.replaceChildren(h("p", { class: "muted" }, isMissingEndpoint(err) ? "This build does not serve the flight log (GET /api/flightlog)." : `Could not read the flight log: ${messageOf(err)}`));
    return;
  }
  if (!models.length) {
    box.replaceChildren(h("p", { class: "muted" }, "No flights yet. Send a list or ask a crow something, and the comparison fills in."));
    return;
  }
  const series = models.map((m, i) => ({ label: m.model, colour: SERIES_COLOURS[i % SERIES_COLOURS.length] }));
  const pct = (v) => `${Math.round(v * 100)}%`;
  const ms = (v) => `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`;
  box.replaceChildren(
    smallMultiples(series, [
      { title: "Brain calls", values: models.map((m) => m.calls) },
      { title: "Landed without error", values: models.map((m) => m.success), format: pct },
      { title: "Owner approval rate (outputs)", values: models.map((m) => m.approval), format: pct },
      { title: "Tokens per call", values: models.map((m) => m.tokens_per_call) },
      { title: "Median latency", values: models.map((m) => m.latency_p50_ms), format: ms },
    ]),
    h("div", { class: "legend" }, series.map((s) => h("span", {}, h("i", { style: { background: s.colour } }), s.label))),
    h("details", { class: "flight-detail" },
      h("summary", {}, "By model and task type"),
      h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, ["Model", "Task type", "Calls", "Tokens in", "Tokens out", "p50", "p95", "Failures", "Approval"].map((t, i) => h("th", { scope: "col", class: i > 1 ? "num" : null }, t)))),
        h("tbody", {}, models.flatMap((m) => m.task_types.map((r) => h("tr", {},
          h("td", {}, m.model), h("td", {}, r.task_type),
          h("td", { class: "num" }, r.calls), h("td", { class: "num" }, fmtTokens(r.tokens_in)), h("td", { class: "num" }, fmtTokens(r.tokens_out)),
          h("td", { class: "num" }, ms(r.latency_p50_ms)), h("td", { class: "num" }, ms(r.latency_p95_ms)),
          h("td", { class: "num" }, pct(r.failure_rate)),
          h("td", { class: "num" }, r.approval_rate === null || r.approval_rate === undefined ? "—" : `${pct(r.approval_rate)} of ${r.owner_verdicts}`)))))))));
}

function drawCrows() {
  $("#crow-cards").replaceChildren(...crows.map((c) => h("li", { class: "crow-card" },
    h("a", { href: `/crows/${encodeURIComponent(c.name)}` }, crowAvatar(c.name, 44),
      h("span", {}, h("strong", {}, c.name), h("small", {}, c.epithet),
        c.status === "quarantined" ? h("small", { class: "tiny-badge warn" }, "caged") : null)))));
}

async function main() {
  let state = { capabilities: [], last_event_id: 0 };
  try {
    [state, crows] = await Promise.all([get("/api/state"), get("/api/crows")]);
  } catch (err) {
    toast(`Could not read the flock: ${messageOf(err)}`, "error");
  }
  drawCrows();
  await Promise.all([drawLedger(), drawFlightLog()]);
  let timer = null;
  new Stream({ since: state.last_event_id ?? 0, liveAfter: state.last_event_id ?? 0, names: state.capabilities || [] })
    .onAny((event) => {
      if (event.name === "trust.changed") {
        const d = event.data;
        history.push({ holder: d.holder, task_type: d.task_type, from: d.from, to: d.to, t: Date.parse(d.ts) });
      }
      if (event.name === "crow.retired") retired.add(event.data.crow);
      if (!["trust.changed", "crow.landed", "verdict", "crow.quarantined", "crow.reinstated", "crow.hatched", "crow.retired"].includes(event.name)) return;
      clearTimeout(timer);
      timer = setTimeout(async () => {
        if (event.name.startsWith("crow.") && event.name !== "crow.landed") {
          try { crows = await get("/api/crows"); drawCrows(); } catch (err) { toast(messageOf(err), "error"); }
        }
        drawLedger();
        drawFlightLog();
      }, 600);
    })
    .start();
}

main();
