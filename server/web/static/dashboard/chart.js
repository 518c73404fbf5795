// Small charts of an agent's days, drawn by uPlot (vendor/uPlot.iife.min.js, loaded by the
// page before its modules): on a canvas, with no style attribute and no HTML parsed, so
// the page's Content-Security-Policy holds.

const COLOURS = { turns: "#2f6fdf", records: "#1b9e77", tokens: "#d95f02" };

// ``days``: ISO dates (UTC days); each series: {label, values, scale: "count" | "tokens"}.
export function chart(box, days, series) {
  const uPlot = window.uPlot;
  const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
  const width = Math.max(320, box.clientWidth || 560);
  const options = {
    width,
    height: 200,
    scales: { x: { time: true }, count: { range: (u, min, max) => [0, Math.max(4, max)] }, tokens: { range: (u, min, max) => [0, Math.max(1000, max)] } },
    axes: [
      { stroke: "#666" },
      { scale: "count", stroke: "#666", label: "turns, records" },
      { scale: "tokens", side: 1, stroke: "#666", label: "tokens", grid: { show: false },
        values: (u, ticks) => ticks.map((t) => (t >= 1000 ? `${Math.round(t / 1000)}k` : String(t))) },
    ],
    series: [
      { label: "day", value: (u, t) => (t === null ? "" : new Date(t * 1000).toISOString().slice(0, 10)) },
      ...series.map((s) => (s.label === "turns"
        ? { label: s.label, scale: s.scale, stroke: COLOURS.turns, fill: "rgba(47, 111, 223, 0.35)", paths: uPlot.paths.bars({ size: [0.6, 24] }), points: { show: false } }
        : { label: s.label, scale: s.scale, stroke: COLOURS[s.label], width: 2, points: { show: true, size: 4 } })),
    ],
  };
  return new uPlot(options, [xs, ...series.map((s) => s.values)], box);
}
