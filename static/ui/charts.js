// Tiny SVG charts, no library: a step chart of trust levels over time and small-multiple
// bar charts for comparing models.

import { svg, h, fmtTokens } from "./dom.js";
import { LEVEL_WORDS } from "./vocab.js";

const LEVEL_COLOURS = ["#a79ebf", "#6ec6ff", "#8fd19e"];

/**
 * A trust level's history as a step line (0 stranger, 1 regular, 2 trusted).
 * @param {{t:number, level:number}[]} points  sorted by time; the first is the start
 */
export function levelSteps(points, { width = 160, height = 38, now = Date.now() } = {}) {
  const pad = 4;
  if (!points.length) points = [{ t: now, level: 0 }];
  const t0 = points[0].t;
  const t1 = Math.max(now, points.at(-1).t + 1);
  const x = (t) => pad + ((t - t0) / (t1 - t0 || 1)) * (width - 2 * pad);
  const y = (level) => height - pad - (level / 2) * (height - 2 * pad);
  let d = `M${x(points[0].t)} ${y(points[0].level)}`;
  for (let i = 1; i < points.length; i += 1) d += ` H${x(points[i].t)} V${y(points[i].level)}`;
  d += ` H${x(t1)}`;
  const last = points.at(-1).level;
  return svg("svg", { class: "spark", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": `Trust history: ${points.map((p) => LEVEL_WORDS[p.level] ?? p.level).join(" → ")}` },
  [0, 1, 2].map((lv) => svg("line", { x1: pad, x2: width - pad, y1: y(lv), y2: y(lv), stroke: "#2c2543", "stroke-dasharray": "2 3" })),
  svg("path", { d, fill: "none", stroke: LEVEL_COLOURS[last] || "#b8a4ff", "stroke-width": 2, "stroke-linejoin": "round" }),
  points.map((p) => svg("circle", { cx: x(p.t), cy: y(p.level), r: 2.4, fill: LEVEL_COLOURS[p.level] || "#b8a4ff" })));
}

/**
 * One small horizontal bar chart per metric, each with its own scale.
 * @param {{label:string, colour:string}[]} series  one per model
 * @param {{title:string, values:number[], format?:(v:number)=>string}[]} metrics
 */
export function smallMultiples(series, metrics) {
  const rowH = 22;
  const labelW = 150;
  const barW = 170;
  const width = labelW + barW + 70;
  return h("div", { class: "multiples" },
    metrics.map((metric) => {
      const max = Math.max(...metric.values.map((v) => (Number.isFinite(v) ? v : 0)), 0) || 1;
      const height = series.length * rowH + 26;
      const fmt = metric.format || ((v) => fmtTokens(Math.round(v)));
      return h("figure", { class: "multiple" },
        h("figcaption", {}, metric.title),
        svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img",
          "aria-label": `${metric.title}: ${series.map((s, i) => `${s.label} ${Number.isFinite(metric.values[i]) ? fmt(metric.values[i]) : "no data"}`).join(", ")}` },
        series.map((s, i) => {
          const v = metric.values[i];
          const w = Number.isFinite(v) ? Math.max(1, (v / max) * barW) : 0;
          const yy = 6 + i * rowH;
          return svg("g", {},
            svg("text", { x: labelW - 8, y: yy + 13, "text-anchor": "end" }, truncate(s.label, 22)),
            svg("rect", { x: labelW, y: yy + 2, width: barW, height: 14, rx: 4, fill: "#1d1830" }),
            svg("rect", { x: labelW, y: yy + 2, width: w, height: 14, rx: 4, fill: s.colour }),
            svg("text", { x: labelW + barW + 6, y: yy + 13 }, Number.isFinite(v) ? fmt(v) : "—"));
        })));
    }));
}

function truncate(text, n) {
  const s = String(text);
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export const SERIES_COLOURS = ["#f4a261", "#6ec6ff", "#b8a4ff", "#8fd19e", "#ef6f7b", "#ffd166", "#2ec4b6"];
