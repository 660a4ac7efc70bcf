// Reading GET /api/trust and GET /api/flightlog into the shapes the pages draw. The
// readers accept the few shapes a ledger endpoint might reasonably take, so the pages
// keep working while the endpoints settle; docs/UI.md names the shape they expect.

import { LEVEL_WORDS } from "./vocab.js";

export { LEVEL_WORDS };
export const TASK_TYPES = ["writing", "research", "code", "planning", "data", "chat"];

function firstArray(obj, keys) {
  if (Array.isArray(obj)) return obj;
  if (!obj || typeof obj !== "object") return [];
  for (const key of keys) if (Array.isArray(obj[key])) return obj[key];
  return [];
}

/**
 * GET /api/trust: {"holders": {holder: {task_type: {level, streak, approvals, rejections}}},
 * "task_types": [...], "history"?: [{task_type, from, to, at, holder?}]} (history when
 * asked for one holder with ?holder=).
 * @returns {{rows: {holder, task_type, level, streak, approvals, rejections}[], history: {holder, task_type, from, to, t}[], taskTypes: string[]}}
 */
export function readLedger(data, holderForHistory = "") {
  const rows = [];
  for (const [holder, byType] of Object.entries((data && data.holders) || {})) {
    for (const [taskType, v] of Object.entries(byType || {})) {
      const entry = v && typeof v === "object" ? v : { level: v };
      rows.push({
        holder, task_type: taskType, level: Number(entry.level ?? 0), streak: entry.streak ?? null,
        approvals: entry.approvals ?? null, rejections: entry.rejections ?? null,
      });
    }
  }
  const history = ((data && data.history) || []).map((c) => ({
    holder: c.holder || holderForHistory, task_type: c.task_type, from: Number(c.from ?? 0),
    to: Number(c.to ?? 0), t: Date.parse(c.at || c.ts || ""),
  }));
  return { rows, history, taskTypes: (data && data.task_types) || TASK_TYPES };
}

export function historyPoints(history, holder, taskType) {
  const changes = history.filter((c) => c.holder === holder && c.task_type === taskType && Number.isFinite(c.t)).sort((a, b) => a.t - b.t);
  if (!changes.length) return [];
  return [{ t: changes[0].t - 60000, level: changes[0].from }, ...changes.map((c) => ({ t: c.t, level: c.to }))];
}

/**
 * GET /api/flightlog: {"by_model_and_task_type": [{provider, model, task_type, calls,
 * tokens_in, tokens_out, latency_p50_ms, latency_p95_ms, failure_rate, owner_verdicts,
 * approval_rate}]}, folded into one row per model (weighted by calls, or by verdicts for
 * the approval rate). The folded approval rate is the outputs': the triage row's rate
 * judges the Sentry's plans (triage verdicts), and stays in its own row of the table.
 */
export function readFlightModels(data) {
  const rows = firstArray(data, ["by_model_and_task_type", "models", "rows"]);
  const byModel = new Map();
  for (const r of rows) {
    const model = r.provider && !String(r.model).startsWith(`${r.provider}:`) ? `${r.provider}:${r.model}` : String(r.model);
    const m = byModel.get(model) || { model, calls: 0, failures: 0, tokens: 0, p50_sum: 0, p95_max: 0, verdicts: 0, approved: 0, task_types: [] };
    const calls = Number(r.calls || 0);
    m.calls += calls;
    m.failures += Number(r.failure_rate || 0) * calls;
    m.tokens += Number(r.tokens_in || 0) + Number(r.tokens_out || 0);
    m.p50_sum += Number(r.latency_p50_ms || 0) * calls;
    m.p95_max = Math.max(m.p95_max, Number(r.latency_p95_ms || 0));
    if (r.task_type !== "triage" && r.approval_rate !== null && r.approval_rate !== undefined && r.owner_verdicts) {
      m.verdicts += Number(r.owner_verdicts);
      m.approved += Number(r.approval_rate) * Number(r.owner_verdicts);
    }
    m.task_types.push(r);
    byModel.set(model, m);
  }
  return [...byModel.values()].map((m) => ({
    model: m.model,
    calls: m.calls,
    success: m.calls ? 1 - m.failures / m.calls : NaN,
    tokens_per_call: m.calls ? m.tokens / m.calls : NaN,
    latency_p50_ms: m.calls ? m.p50_sum / m.calls : NaN,
    latency_p95_ms: m.p95_max,
    approval: m.verdicts ? m.approved / m.verdicts : NaN,
    verdicts: m.verdicts,
    task_types: m.task_types,
  }));
}

