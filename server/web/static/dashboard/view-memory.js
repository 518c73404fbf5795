// An agent's memory: its records with filters, as they stand or as they stood at a turn
// or a time; a record's versions and who wrote each; search, with why each result ranked.

import { gql } from "./api.js";
import { badge, clear, el, empty, field, plural, section, shortId, timeEl, when } from "./dom.js";
import { AS_OF_TURN, RECORD, RECORDS, SEARCH } from "./queries.js";
import { problem } from "./panels.js";
import { labelChips, recordLink, recordState } from "./render.js";
import { go, href } from "./route.js";
import { more, refusedOrProblem } from "./view-agents.js";

function select(name, value, options) {
  return el("select", { name }, options.map(([v, text]) => el("option", { value: v, text, selected: v === (value || "") })));
}

function filterOf(state) {
  const f = {};
  if (state.kind) f.kind = state.kind;
  if (state.status) f.status = state.status;
  if (state.scope) f.scope = state.scope;
  if (state.preview) f.preview = state.preview === "preview";
  const label = labelOf(state.label);
  if (label) f.labels = [label];
  return f;
}

// "name=value" as a label filter; null for none, or for text that is not one (which
// labelProblem names: a filter is never dropped silently).
function labelOf(text) {
  const at = (text || "").indexOf("=");
  const label = at < 0 ? null : { name: text.slice(0, at).trim(), value: text.slice(at + 1).trim() };
  return label && label.name && label.value ? label : null;
}

function labelProblem(text) {
  if (!text || labelOf(text)) return null;
  return el("div", { class: "problem", role: "alert", id: "label-problem" },
    el("strong", { text: "Label filter" }), " ",
    el("span", { text: `"${text}" is not a label filter: give the label's name and the value it must have, as name=value (e.g. customer_id=C-42).` }));
}

function asOfOf(state) {
  if (state.asOfTurn) return { turnId: state.asOfTurn };
  if (state.asOfTime) return { time: new Date(state.asOfTime).toISOString() };
  return null;
}

function localTime(iso) {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export async function records(main, state) {
  const form = el("form", { class: "filters", id: "filters" },
    el("label", {}, "Kind ", el("input", { name: "kind", value: state.kind || "", size: "10", placeholder: "any" })),
    el("label", {}, "Status ", select("status", state.status, [["", "any"], ["ACTIVE", "active"], ["SUPERSEDED", "superseded"], ["DELETED", "deleted"]])),
    el("label", {}, "Scope ", select("scope", state.scope, [["", "any"], ["SESSION", "session"], ["AGENT", "agent"]])),
    el("label", {}, "Label ", el("input", { name: "label", value: state.label || "", size: "16", placeholder: "name=value",
      pattern: "\\s*[^=\\s][^=]*=\\s*\\S.*", title: "name=value, e.g. customer_id=C-42" })),
    el("label", {}, "Mode ", select("preview", state.preview, [["", "live and preview"], ["live", "live"], ["preview", "preview"]])),
    el("label", {}, "As of ", el("input", { name: "asOfTime", type: "datetime-local", value: state.asOfTime ? localTime(state.asOfTime) : "" })),
    el("button", { type: "submit", text: "Apply" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const v = Object.fromEntries(new FormData(form).entries());
    go({ ns: state.ns, agent: state.agent, view: "memory", kind: v.kind.trim(), status: v.status, scope: v.scope,
      label: v.label.trim(), preview: v.preview, asOfTime: v.asOfTime ? new Date(v.asOfTime).toISOString() : "",
      asOfTurn: v.asOfTime ? "" : state.asOfTurn });
  });
  const moment = el("p", { class: "moment", id: "moment" });
  const table = el("table", { class: "grid", id: "records" },
    el("thead", {}, el("tr", {}, ["Summary", "Kind", "Status", "Scope", "Labels", "Versions", "Created"].map((t) => el("th", { text: t })))),
    el("tbody"));
  const count = el("span", { class: "muted" });
  clear(main, el("h1", {}, "Memory ", count), form, moment, table);
  const refused = labelProblem(state.label);
  if (refused) {
    table.replaceWith(refused);
    moment.remove();
    return;
  }
  const asOf = asOfOf(state);
  if (state.asOfTurn) {
    const { data } = await gql(AS_OF_TURN, { id: state.asOfTurn });
    const t = data.turn;
    const name = t ? `turn ${t.number}${t.session && t.session.externalId ? ` of ${t.session.externalId}` : ""}` : "the turn";
    moment.append("As it stood when ", t && t.session
      ? el("a", { href: href({ ...state, view: "session", session: t.session.id, turn: t.id }), text: name }) : name,
    " began", t ? ` (${when(t.createdAt)}${t.preview ? ", a preview turn" : ""}): what it could see` : "", " · ",
    el("a", { href: href({ ...state, asOfTurn: "" }), text: "as it stands now" }));
  } else if (state.asOfTime) {
    moment.append(`As it stood at ${when(state.asOfTime)} · `, el("a", { href: href({ ...state, asOfTime: "" }), text: "as it stands now" }));
  } else {
    moment.remove();
  }
  let after = null;
  const page = async () => {
    const { data, errors } = await gql(RECORDS, { id: state.agent, after, filter: filterOf(state), asOf });
    const found = data.agent && data.agent.memoryRecords;
    if (!found) {
      table.replaceWith(refusedOrProblem(errors[0], "memory", state.ns));
      return false;
    }
    count.textContent = plural(found.totalCount, "record");
    for (const { node: r } of found.edges) {
      const link = href({ ...state, view: "record", record: r.id });
      table.tBodies[0].append(el("tr", { "data-record": r.id },
        el("td", {}, el("a", { href: link, text: r.current.summary }), r.pinned ? badge("pinned") : null),
        el("td", { text: r.current.kind }),
        el("td", {}, recordState(r)),
        el("td", { text: r.scope.toLowerCase() }),
        el("td", {}, labelChips(r.current.labelList)),
        el("td", { text: r.versionsConnection.totalCount }),
        el("td", {}, timeEl(r.createdAt))));
    }
    if (!found.edges.length && !after) {
      table.replaceWith(empty(asOf ? "No records stood then." : Object.keys(filterOf(state)).length
        ? "No record matches these filters." : "No memory yet: records appear when a turn that wrote them commits."));
    }
    after = found.pageInfo.endCursor;
    return found.pageInfo.hasNextPage;
  };
  if (await page()) main.append(more(table, page));
}

export async function record(main, state) {
  const { data, errors } = await gql(RECORD, { id: state.record });
  const r = data.agentMemory;
  if (!r) {
    clear(main, refusedOrProblem(errors[0], "memory", state.ns));
    return;
  }
  const versions = el("ol", { class: "versions", id: "versions" });
  clear(main,
    el("header", { class: "page-head", id: "record", "data-record": r.id },
      el("h1", { text: r.current.summary }),
      el("p", {}, badge(r.status), " ", badge(r.scope), r.preview ? badge("preview") : null, r.pinned ? badge("pinned") : null,
        " ", el("span", { class: "muted", text: r.current.kind })),
      el("dl", { class: "facts" },
        field("id", shortId(r.id)), field("created", timeEl(r.createdAt)),
        field("session", r.session ? el("a", { href: href({ ...state, view: "session", session: r.session.id }) },
          r.session.externalId || "session", " ", shortId(r.session.id)) : "none (agent without sessions)"),
        r.replaces ? field("replaces", recordLink(state, r.replaces.id, r.replaces.current.summary)) : null,
        r.replacedBy ? field("replaced by", recordLink(state, r.replacedBy.id, r.replacedBy.current.summary)) : null)),
    section(`Versions, oldest first`, el("p", { class: "muted", id: "version-count" }), versions));
  let page = r.versionsConnection;
  const show = () => {
    document.getElementById("version-count").textContent = plural(page.totalCount, "version");
    for (const { node: v } of page.edges) versions.append(version(state, v));
  };
  show();
  if (page.pageInfo.hasNextPage) {
    versions.after(more(versions, async () => {
      page = (await gql(RECORD, { id: state.record, after: page.pageInfo.endCursor })).data.agentMemory.versionsConnection;
      show();
      return page.pageInfo.hasNextPage;
    }));
  }
}

function version(state, v) {
  const w = v.writtenBy;
  const by = [];
  if (w.apiDeletion) {
    const who = w.apiDeletion.principal;
    by.push(field("deleted through the API by", who ? `${who.name} (${who.kind.toLowerCase()})` : w.apiDeletion.caller));
  }
  if (w.execution) by.push(field("execution", el("span", {}, `${w.execution.kind.toLowerCase()} ${w.execution.name} `, shortId(w.execution.id))));
  if (w.turn && w.session) {
    by.push(field("turn", el("a", { href: href({ ...state, view: "session", session: w.session.id, turn: w.turn.id }),
      text: `turn ${w.turn.number}${w.turn.attempt > 1 ? ` attempt ${w.turn.attempt}` : ""}` })));
  } else if (w.turn) by.push(field("turn", `turn ${w.turn.number}`));
  if (w.session) by.push(field("session", el("a", { href: href({ ...state, view: "session", session: w.session.id }) }, w.session.externalId || "session", " ", shortId(w.session.id))));
  if (w.agentVersion) by.push(field("agent version", el("a", { href: href({ ...state, view: "config", a: String(w.agentVersion.number) }), text: `v${w.agentVersion.number}${w.agentVersion.label ? ` ${w.agentVersion.label}` : ""}` })));
  if (w.invocation) by.push(field("model call", `${w.invocation.model} · ${w.invocation.purpose.toLowerCase()}`));
  return el("li", { class: "version", "data-version": v.number },
    el("h3", {}, `v${v.number} `, badge(v.status), " ", el("span", { class: "muted", text: v.kind })),
    el("p", { class: "text", text: v.summary }),
    v.content ? el("p", { class: "content", text: v.content }) : null,
    labelChips(v.labelList),
    el("p", { class: "muted writer" }, "written ", el("span", { title: when(v.createdAt), text: when(v.createdAt) })),
    el("dl", { class: "facts small" }, by));
}

export async function search(main, state) {
  const form = el("form", { class: "search", id: "search" },
    el("input", { name: "q", type: "search", value: state.q || "", placeholder: "Search this agent's memory", required: true, size: "48" }),
    el("button", { type: "submit", text: "Search" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go({ ns: state.ns, agent: state.agent, view: "search", q: new FormData(form).get("q").trim() });
  });
  const results = el("ol", { class: "results", id: "results" });
  clear(main, el("h1", { text: "Search memory" }), form,
    el("p", { class: "muted", text: "Ranks the agent's active records as its own search does: by meaning, by keywords and by recency. Each result shows what each added to its score." }),
    results);
  if (!state.q) return;
  const { data, errors } = await gql(SEARCH, { id: state.agent, q: state.q });
  const hits = data.searchAgentMemory;
  if (!hits) {
    results.replaceWith(refusedOrProblem(errors[0], "memory", state.ns));
    return;
  }
  if (!hits.length) results.replaceWith(empty("Nothing matched."));
  const top = Math.max(...hits.map((h) => h.score), 1e-9);
  for (const h of hits) results.append(hit(state, h, top));
}

function hit(state, h, top) {
  const e = h.explanation;
  const part = (name, term, detail) => el("div", { class: "term" },
    el("span", { class: "term-name", text: name }),
    el("meter", { min: "0", max: String(top), value: String(Math.max(0, term)), title: term.toFixed(5) }),
    el("span", { class: "term-value", text: `+${term.toFixed(4)}` }), el("span", { class: "muted", text: detail }));
  const rank = (r) => (r ? `#${r}` : "not a candidate");
  return el("li", { class: "hit", "data-record": h.record.id },
    el("div", { class: "hit-head" }, recordLink(state, h.record.id, h.version.summary), " ",
      el("span", { class: "muted", text: `${h.version.kind} · ${h.record.scope.toLowerCase()}` }),
      el("span", { class: "score", text: `score ${h.score.toFixed(4)}` })),
    labelChips(h.version.labelList),
    e ? el("div", { class: "why" },
      e.mode === "HYBRID" ? [
        part("meaning", e.meaning.term, ` ${rank(e.meaning.rank)} by meaning · cosine ${h.cosine === null ? "—" : h.cosine.toFixed(3)}`),
        part("keywords", e.keywords.term, ` ${rank(e.keywords.rank)} by keywords${h.lexical === null ? " · no word in common" : ` · text rank ${h.lexical.toFixed(3)}`}`),
        part("recency", e.recency, ` ${e.ageDays.toFixed(1)} days old (halves every ${e.halfLifeDays} days)`),
      ] : part(e.mode === "VECTOR" ? "meaning" : "keywords", h.score, ` ${e.mode.toLowerCase()} search`)) : null);
}
