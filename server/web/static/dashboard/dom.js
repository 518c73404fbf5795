// DOM helpers. Text from the server is only ever set as textContent, never parsed as
// HTML; nothing here writes a style attribute (the page's Content-Security-Policy allows
// styles from its stylesheet only).

export function $(id) {
  return document.getElementById(id);
}

// el("div", {class: "x", text: "y", onclick: f, "data-id": 1}, child, ...): children
// may be nodes, strings, arrays of them, or null (skipped).
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "onclick") node.addEventListener("click", value);
    else if (key === "onchange") node.addEventListener("change", value);
    else if (key === "onsubmit") node.addEventListener("submit", value);
    else if (key === "oninput") node.addEventListener("input", value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : String(child));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// An id as a person reads it: its first eight characters, the whole id on hover.
export function shortId(id) {
  return el("code", { class: "id", title: id, text: String(id).slice(0, 8) });
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function ago(iso) {
  if (!iso) return "";
  const seconds = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (seconds < 60) return "just now";
  const units = [["day", 86400], ["hour", 3600], ["minute", 60]];
  for (const [name, size] of units) {
    if (seconds >= size) {
      const n = Math.floor(seconds / size);
      return `${n} ${name}${n > 1 ? "s" : ""} ago`;
    }
  }
  return "";
}

export function timeEl(iso) {
  return el("time", { datetime: iso, title: when(iso), text: ago(iso) || when(iso) });
}

// milliseconds between two times, as a person reads a duration
export function duration(start, end) {
  if (!start || !end) return "";
  const ms = new Date(end).getTime() - new Date(start).getTime();
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function badge(value, extra) {
  const text = String(value).toLowerCase().replace(/_/g, " ");
  return el("span", { class: `badge badge-${String(value).toLowerCase()} ${extra || ""}`, text });
}

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many || one + "s"}`;
}

// a labelled value, for the definition lists of a header
export function field(label, ...value) {
  return [el("dt", { text: label }), el("dd", {}, ...value)];
}

export function section(title, ...children) {
  return el("section", { class: "card" }, el("h2", { text: title }), ...children);
}

export function empty(message) {
  return el("p", { class: "empty", text: message });
}

// An SVG element (the time axis of a turn draws its bars with attributes, never styles).
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else node.setAttribute(key, String(value));
  }
  append(node, children);
  return node;
}

// 1234567 -> "1.23M", 1234 -> "1.2k"
export function count(n) {
  if (n === null || n === undefined) return "—";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

// a cost in the server's price table's currency; "—" when nothing was priced
export function cost(value) {
  if (value === null || value === undefined) return "—";
  if (value === 0) return "0";
  return value < 0.01 ? value.toPrecision(2) : value.toFixed(value < 10 ? 3 : 2);
}

export function millis(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}
