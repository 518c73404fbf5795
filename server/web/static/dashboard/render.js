// How the API's values read on the page: JSON payloads as labelled values (never raw
// JSON), transcript events as a conversation, labels as chips, links to records.

import { badge, cost, count, el, field, millis, shortId } from "./dom.js";
import { href } from "./route.js";

// A JSON value as a person reads it: objects as labelled rows, lists of plain values
// joined, lists of objects one under the other.
export function describe(value, depth = 0) {
  if (value === null || value === undefined) return el("span", { class: "muted", text: "none" });
  if (typeof value !== "object") return el("span", { class: "value", text: String(value) });
  if (Array.isArray(value)) {
    if (!value.length) return el("span", { class: "muted", text: "none" });
    if (value.every((v) => v === null || typeof v !== "object")) {
      return el("span", { class: "value", text: value.join(", ") });
    }
    return el("ol", { class: "values" }, value.map((v) => el("li", {}, describe(v, depth + 1))));
  }
  const keys = Object.keys(value);
  if (!keys.length) return el("span", { class: "muted", text: "none" });
  if (depth > 3) return el("span", { class: "muted", text: `${keys.length} fields` });
  return el(
    "dl",
    { class: "kv" },
    keys.map((k) => [el("dt", { text: words(k) }), el("dd", {}, describe(value[k], depth + 1))]),
  );
}

// "toolCalls" -> "tool calls", "after_turn" -> "after turn"
export function words(key) {
  return key.replace(/_/g, " ").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}

export function labelChips(list) {
  if (!list || !list.length) return null;
  return el("span", { class: "chips" }, list.map((l) => el("span", { class: "chip", text: `${l.name}=${l.value}` })));
}

export function recordLink(state, id, text) {
  return el("a", { href: href({ ...state, view: "record", record: id }), class: "record-link", "data-record": id },
    text ? el("span", { text }) : null, " ", shortId(id));
}

// A record's state as a person reads it. A preview record of status DELETED that names a
// live one is a preview turn's deletion of it (R22): the live record is unchanged.
export function recordState(r) {
  if (r.preview && r.status === "DELETED" && r.replaces) {
    return el("span", { class: "preview-deletion", title: "a preview turn deleted it; live turns still see the record" },
      badge("preview deletion"), " ");
  }
  return el("span", {}, r.status ? badge(r.status) : null, r.preview ? badge("preview") : null, " ");
}

// Model usage: calls, tokens, model time and cost (in the server's price table's currency).
export function usageFacts(u) {
  if (!u) return [];
  return [
    field("model calls", String(u.calls)),
    field("tokens", `${count(u.inputTokens)} in / ${count(u.outputTokens)} out`),
    field("model time", millis(u.latencyMs)),
    field("cost", el("span", { class: "cost", title: u.unpricedCalls ? `${u.unpricedCalls} calls of models the server's price table does not name are not counted` : "from the server's price table (AGENT_MEMORY_MODEL_PRICES)",
      text: `${cost(u.cost)}${u.unpricedCalls && u.cost !== null ? "+" : ""}` })),
  ];
}

// A memory record as tool payloads give it ({id, summary, status, ...}).
function payloadRecord(state, r) {
  return el("li", { class: "payload-record" },
    badge(r.status || "ACTIVE"), " ", r.kind ? el("span", { class: "kind", text: r.kind }) : null, " ",
    recordLink(state, r.id, r.summary));
}

function redacted(payload) {
  return payload && typeof payload === "object" && "redacted" in payload && Object.keys(payload).length === 1;
}

function argumentsText(args) {
  if (args === null || args === undefined) return "";
  if (redacted(args)) return "[hidden]";
  if (typeof args !== "object") return String(args);
  return Object.entries(args).map(([k, v]) => `${k}: ${typeof v === "object" && v !== null ? JSON.stringify(v) : v}`).join(", ");
}

// One transcript event, as a conversation shows it.
export function eventNode(state, e) {
  const p = e.payload || {};
  const seq = el("span", { class: "seq", text: `#${e.sequence}` });
  const hidden = redacted(p) ? el("p", { class: "redacted", text: `hidden: ${p.redacted}` }) : null;
  const wrap = (kind, who, ...body) =>
    el("li", { class: `event event-${kind}`, "data-event": e.id, "data-type": e.type },
      el("div", { class: "who" }, el("strong", { text: who }), " ", seq), el("div", { class: "body" }, ...body));
  switch (e.type) {
    case "USER_MESSAGE":
      return wrap("user", "User", hidden || el("p", { class: "text", text: p.text || "" }));
    case "AGENT_MESSAGE":
      return wrap("agent", "Agent",
        hidden || (p.text ? el("p", { class: "text", text: p.text }) : null),
        hidden ? null : (p.toolCalls || []).map((c) =>
          el("p", { class: "tool-call" }, el("span", { class: "call-name", text: c.name }),
            el("span", { class: "call-args", text: `(${argumentsText(c.arguments)})` }),
            c.id ? el("span", { class: "muted", text: ` call ${c.id}` }) : null)));
    case "TOOL_RESULT":
    case "TOOL_ERROR": {
      const who = `${e.type === "TOOL_ERROR" ? "Error" : "Result"} of ${e.toolName || "a tool"}`;
      const kind = e.type === "TOOL_ERROR" ? "error" : "tool";
      if (hidden) return wrap(kind, who, hidden);
      const lists = ["memories", "sources", "records"].filter((k) => Array.isArray(p[k]));
      if (lists.length) {
        return wrap(kind, who, lists.map((k) =>
          el("div", {}, el("span", { class: "muted", text: words(k) }),
            el("ul", { class: "payload-records" }, p[k].map((r) => payloadRecord(state, r))))));
      }
      if (Array.isArray(p.events)) {  // search_history's results: their text is under the turn's retrievals
        return wrap(kind, who, p.events.length ? el("ul", { class: "history-results" }, p.events.map((h) => el("li", {},
          `turn ${h.turn}`, h.part ? ` · part ${h.part} of ${h.parts}` : "", h.score === null || h.score === undefined ? "" : ` · score ${h.score.toFixed(2)}`)))
          : el("p", { class: "muted", text: "nothing found" }));
      }
      if (p.text !== undefined || p.error !== undefined) {
        return wrap(kind, who, el("p", { class: "text", text: p.text !== undefined ? p.text : p.error }));
      }
      return wrap(kind, who, describe(p));
    }
    case "MEMORY_PINNED":  // the instructions as given: the pinned lines, then the notes
      return wrap("system", "Instructions given to the model", hidden || [
        (p.lines || []).length ? el("ul", { class: "pinned-lines" }, p.lines.map((l) => el("li", { text: l })))
          : el("p", { class: "muted", text: "nothing pinned" }),
        (p.notes || []).map((n) => el("p", { class: "text instruction-note", text: n })),
        !p.notes && (p.omitted || []).length ? el("p", { class: "muted", text: `${p.omitted.length} older pinned records not listed` }) : null,
      ]);
    case "USAGE":
      return wrap("system", "Model usage", hidden || el("p", { class: "muted",
        text: `${String(p.purpose || "").toLowerCase()} · ${p.model || "model"} · ${p.inputTokens || 0} tokens in` }));
    case "SKILL_LOAD":
    case "RETRIEVAL":
      return wrap("system", e.type === "SKILL_LOAD" ? `Skill ${p.name || ""}` : `Retrieved ${p.name || ""}`,
        hidden || el("p", { class: "text", text: p.text || "" }));
    default:
      return wrap("system", e.type, describe(p));
  }
}
