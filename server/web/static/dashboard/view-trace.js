// A session as a trace: its turns newest first, and for the chosen turn its conversation,
// its executions and model calls on a time axis (start offset and duration), what its
// tools were given and gave, the review's decisions, what it recalled and retrieved, and
// what it wrote to memory.

import { gql, subscribe } from "./api.js";
import { badge, clear, cost, count, duration, el, empty, field, millis, plural, section, shortId, svg, timeEl, when } from "./dom.js";
import { SESSION, SESSION_TURNS, TRANSCRIPT, TURN, USES, WROTE } from "./queries.js";
import { loading, problem } from "./panels.js";
import { describe, eventNode, recordLink, recordState, usageFacts } from "./render.js";
import { current, go, href } from "./route.js";
import { more, refusedOrProblem } from "./view-agents.js";

// how far a link to an older turn may page back to show it in the list (25 a page)
const SEEK_PAGES = 40;
// the live updates of the session shown: a function that ends them
let live = null;

// Leaving the session: its live updates end.
export function leave() {
  if (live) live();
  live = null;
}

export async function session(main, state) {
  if (main.dataset.session === state.session && document.getElementById("turns")) {
    await seek(state);
    select(state);
    await turn(state);
    return;
  }
  const { data, errors } = await gql(SESSION, { id: state.session });
  const s = data.session;
  if (!s) {
    clear(main, refusedOrProblem(errors[0], "session", state.ns));
    return;
  }
  main.dataset.session = s.id;
  const list = el("ol", { class: "turn-list", id: "turns" });
  const count = el("span", { class: "muted" });
  const latest = el("a", { class: "latest", id: "latest", text: "Latest turn ↑" });
  const indicator = el("span", { class: "live", id: "live", text: "● live", title: "new turns appear as they begin and end" });
  clear(main,
    el("header", { class: "page-head" },
      el("h1", {}, "Session ", s.externalId ? el("span", { text: s.externalId }) : null, " ", shortId(s.id)),
      el("dl", { class: "facts", id: "session-facts" }, field("agent", el("a", { href: href({ ns: s.agent.namespace, agent: s.agent.id, view: "agent" }), text: s.agent.name })),
        field("started", timeEl(s.createdAt)), field("turns", count), usageFacts(s.usage))),
    el("div", { class: "trace" },
      el("nav", { class: "turns-pane", "aria-label": "turns" },
        el("p", { class: "turns-head" }, latest, el("span", { class: "muted", text: " newest first" }), indicator), list),
      el("div", { class: "turn-pane", id: "turn" })));
  const pages = { last: s.turns };
  list.pages = pages;
  show(list, state, s.turns);
  count.textContent = String(s.turns.totalCount);
  const newest = s.turns.edges[0] && s.turns.edges[0].node;
  latest.setAttribute("href", newest ? href({ ...state, turn: newest.id }) : href(state));
  if (s.turns.pageInfo.hasNextPage) {
    list.after(more(list, () => older(list, state)));
  }
  if (!state.turn && newest) {
    history.replaceState(null, "", href({ ...state, turn: newest.id }));
    state = { ...state, turn: newest.id };
  }
  follow(state, list, count, latest, indicator);
  await seek(state);
  select(state);
  await turn(state);
}

// Turns as they begin and end, through the sessionTurns subscription: a new one goes on
// top (and is opened, when the newest was), one that changed is redrawn in place.
function follow(state, list, count, latest, indicator) {
  leave();
  live = subscribe(SESSION_TURNS, { id: state.session }, {
    next: ({ data }) => {
      const t = data.sessionTurns;
      const now = current();
      const shown = list.querySelector(`li[data-turn="${t.id}"]`);
      const item = turnItem(now, t);
      if (shown) {
        shown.replaceWith(item);
        if (now.turn === t.id) turn(now);
      } else {
        const newest = list.querySelector("li[data-turn]");
        list.querySelector("li.empty")?.remove();
        list.prepend(item);
        item.classList.add("arrived");
        count.textContent = String(Number(count.textContent) + 1);
        latest.setAttribute("href", href({ ...now, turn: t.id }));
        if (!now.turn || (newest && now.turn === newest.dataset.turn)) {
          go({ ...now, turn: t.id });
          return;
        }
      }
      select(now);
    },
    stopped: (reason) => {
      indicator.classList.add("off");
      indicator.textContent = "○ not live";
      indicator.title = reason.message;
    },
  });
}

function turnItem(state, t) {
  const u = t.usage;
  return el("li", { "data-turn": t.id, "data-number": t.number },
    el("a", { href: href({ ...state, turn: t.id }) },
      el("span", { class: "number", text: `#${t.number}` }),
      t.attempt > 1 ? el("span", { class: "muted", text: `try ${t.attempt}`, title: `attempt ${t.attempt}` }) : null,
      " ", badge(t.status), t.preview ? badge("preview") : null,
      t.replayOf ? el("span", { class: "muted", text: ` replays #${t.replayOf.number}` }) : null,
      el("span", { class: "when muted", text: duration(t.createdAt, t.endedAt) || "open" }),
      u && (u.inputTokens || u.outputTokens) ? el("span", { class: "tokens muted", title: `${u.inputTokens} tokens in, ${u.outputTokens} out; cost ${cost(u.cost)}`, text: ` ${count(u.inputTokens + u.outputTokens)} tok` }) : null));
}

function show(list, state, found) {
  for (const { node: t } of found.edges) list.append(turnItem(state, t));
  if (!found.edges.length && !list.children.length) list.append(el("li", { class: "empty", text: "no turns yet" }));
}

async function older(list, state) {
  const last = list.pages.last;
  const next = await gql(SESSION, { id: state.session, after: last.pageInfo.endCursor });
  list.pages.last = next.data.session.turns;
  show(list, state, list.pages.last);
  select(state);
  return list.pages.last.pageInfo.hasNextPage;
}

// A link to a turn the list has not shown yet (an older one): page back until it is there.
async function seek(state) {
  const list = document.getElementById("turns");
  if (!list || !state.turn) return;
  for (let i = 0; i < SEEK_PAGES && !list.querySelector(`li[data-turn="${state.turn}"]`); i += 1) {
    if (!list.pages.last.pageInfo.hasNextPage) break;
    await older(list, state);
  }
}

function select(state) {
  for (const li of document.querySelectorAll("#turns li[data-turn]")) {
    const chosen = li.dataset.turn === state.turn;
    li.classList.toggle("selected", chosen);
    if (chosen) li.scrollIntoView({ block: "nearest" });
  }
}

async function turn(state) {
  const pane = document.getElementById("turn");
  if (!state.turn) {
    clear(pane, empty("Choose a turn."));
    return;
  }
  clear(pane, loading("the turn"));
  const { data, errors } = await gql(TURN, { id: state.turn });
  const t = data.turn;
  if (!t) {
    clear(pane, refusedOrProblem(errors[0], "session", state.ns));
    return;
  }
  pane.dataset.turn = t.id;
  const asOf = href({ ns: state.ns, agent: state.agent || t.agent.id, view: "memory", asOfTurn: t.id });
  const head = el("header", { class: "turn-head" },
    el("h2", {}, `Turn ${t.number}`, t.attempt > 1 ? ` · attempt ${t.attempt}` : "", " ", badge(t.status),
      t.preview ? badge("preview") : null),
    el("dl", { class: "facts" },
      field("started", el("span", { title: when(t.createdAt), text: when(t.createdAt) })),
      field("took", duration(t.createdAt, t.endedAt) || "still open"),
      field("agent version", el("a", { href: href({ ...state, view: "config", a: String(t.agentVersion.number) }), text: `v${t.agentVersion.number}` })),
      t.replayOf ? field("replays", el("a", { href: href({ ...state, turn: t.replayOf.id }), text: `turn ${t.replayOf.number}` })) : null,
      t.retryOf ? field("retries", el("a", { href: href({ ...state, turn: t.retryOf.id }), text: `turn ${t.retryOf.number}` })) : null,
      field("id", shortId(t.id)), usageFacts(t.usage)),
    t.error ? el("p", { class: "problem", text: `failed: ${t.error}` }) : null,
    el("p", {}, el("a", { href: asOf, class: "as-of-link", text: "The memory as it stood when this turn began →" })));
  const conversation = section("Conversation");
  conversation.id = "conversation";
  const timeline = section("Timeline");
  timeline.id = "executions";
  const calls = section("Tool calls");
  calls.id = "tool-calls";
  const review = section("Memory review");
  review.id = "review";
  const retrieved = section("Recalled and retrieved");
  retrieved.id = "retrieved";
  const wrote = section("Wrote to memory");
  wrote.id = "wrote";
  clear(pane, head, timeline, el("div", { class: "columns" }, conversation, el("div", {}, calls, review, retrieved, wrote)));

  const nodes = axis(timeline, t);
  toolCalls(calls, state, nodes);
  decisions(review, state, nodes);
  await Promise.all([transcript(conversation, state, t.id), uses(retrieved, state, t.id), memories(wrote, state, t)]);
}

async function memories(box, state, t) {
  const { data, errors } = await gql(WROTE, { id: t.id });
  if (!data.turn) {
    box.append(refusedOrProblem(errors[0], "memory", state.ns));
    return;
  }
  const written = data.turn.memories;
  if (!written.length) {
    box.append(empty(t.status === "ROLLED_BACK" || t.status === "FAILED"
      ? "Nothing: a turn that does not commit leaves no memory." : "Nothing written."));
    return;
  }
  box.append(el("ul", { class: "plain" }, written.map((r) => el("li", {},
    recordState(r), recordLink(state, r.id, r.current.summary)))));
}

// The executions in the order of the tree (each after its parent), with their depth.
function ordered(nodes) {
  const children = new Map();
  for (const n of nodes) {
    const key = n.parent ? n.parent.id : "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(n);
  }
  const known = new Set(nodes.map((n) => n.id));
  const out = [];
  const walk = (n, depth) => {
    out.push([n, depth]);
    for (const c of children.get(n.id) || []) walk(c, depth + 1);
  };
  for (const n of nodes.filter((n) => !n.parent || !known.has(n.parent.id))) walk(n, 0);
  return out;
}

const ms = (iso) => new Date(iso).getTime();

// One bar of the time axis: [from, to] in ms since the turn began, over ``total``.
function bar(from, to, total, kind) {
  const x = Math.max(0, Math.min(1000, (from / total) * 1000));
  const width = Math.max(3, Math.min(1000 - x, ((to - from) / total) * 1000));
  return svg("svg", { class: `bar bar-${kind}`, viewBox: "0 0 1000 10", preserveAspectRatio: "none", "aria-hidden": "true" },
    svg("rect", { class: "track", x: 0, y: 0, width: 1000, height: 10 }),
    svg("rect", { class: "span", x: x.toFixed(1), y: 0, width: width.toFixed(1), height: 10 }));
}

// The turn's executions and model calls on one time axis, as trace views draw them: each
// row starts at its offset from the turn's start and is as long as it took; a model call
// ends when it was recorded, its latency before.
function axis(box, t) {
  const page = t.executionsConnection;
  if (!page) {
    box.append(problem({ code: "ERROR", message: "executions not readable" }));
    return [];
  }
  const nodes = page.edges.map((e) => e.node);
  const start = ms(t.createdAt);
  const ends = nodes.flatMap((n) => [n.endedAt ? ms(n.endedAt) : Date.now(), ...n.invocations.map((i) => ms(i.createdAt))]);
  const total = Math.max(1, (t.endedAt ? ms(t.endedAt) : Math.max(Date.now(), ...ends)) - start);
  const rows = [];
  for (const [n, depth] of ordered(nodes)) {
    const from = ms(n.createdAt) - start;
    const to = (n.endedAt ? ms(n.endedAt) : start + total) - start;
    rows.push(el("div", { class: `axis-row depth-${Math.min(depth, 4)}`, "data-execution": n.id, title: `starts +${millis(from)}, ${n.endedAt ? `took ${millis(to - from)}` : "still running"}` },
      el("div", { class: "axis-label" }, badge(n.kind), " ", el("strong", { text: n.name }), " ",
        n.status !== "SUCCEEDED" ? badge(n.status) : null,
        el("span", { class: "muted", text: ` +${millis(from)} · ${n.endedAt ? millis(to - from) : "running"}` })),
      bar(from, to, total, n.kind.toLowerCase())));
    if (n.error) rows.push(el("p", { class: "problem", text: n.error }));
    for (const i of n.invocations) {
      const end = ms(i.createdAt) - start;
      const began = i.latencyMs === null ? end : end - i.latencyMs;
      rows.push(el("div", { class: `axis-row model depth-${Math.min(depth + 1, 4)}`, "data-invocation": i.id, title: `${i.model}: ${i.inputTokens} tokens in, ${i.outputTokens} out${i.latencyMs === null ? "" : `, ${millis(i.latencyMs)}`}` },
        el("div", { class: "axis-label" }, el("span", { class: "model", text: i.model }), " ",
          el("span", { class: "muted", text: i.purpose.toLowerCase() }),
          ` · ${i.inputTokens} in / ${i.outputTokens} out`,
          i.latencyMs === null ? null : ` · ${millis(i.latencyMs)}`,
          i.cost === null ? null : el("span", { class: "muted", text: ` · cost ${cost(i.cost)}` }),
          i.counted ? null : el("span", { class: "muted", text: " (not counted)" })),
        bar(began, end, total, "model")));
    }
  }
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => el("span", { text: millis(f * total) }));
  box.append(el("p", { class: "muted", text: `${plural(page.totalCount, "execution")} · ${plural(nodes.reduce((sum, n) => sum + n.invocations.length, 0), "model call")} · ${millis(total)}` }),
    el("div", { class: "axis" }, el("div", { class: "axis-row axis-ticks" }, el("div", {}), el("div", { class: "ticks" }, ticks)), rows));
  if (page.pageInfo.hasNextPage) box.append(el("p", { class: "muted", text: `the first ${nodes.length} of ${page.totalCount} are shown` }));
  return nodes;
}

function hidden(value) {
  return value && typeof value === "object" && "redacted" in value;
}

// What each tool call was given and gave: its arguments as the call read them.
function toolCalls(box, state, nodes) {
  const tools = nodes.filter((n) => n.kind === "TOOL" && n.name !== "memory_review");
  if (!tools.length) {
    box.append(empty("No tool calls."));
    return;
  }
  box.append(el("ol", { class: "tool-calls" }, tools.map((n) => el("li", { "data-execution": n.id },
    el("div", {}, el("strong", { text: n.name }), n.input && n.input.recall ? badge("recall") : null, " ",
      n.status !== "SUCCEEDED" ? badge(n.status) : null),
    n.input === null ? el("p", { class: "redacted", text: "arguments hidden: they are memory (SELECT on the namespace's AgentMemory grants them)" })
      : hidden(n.input) ? el("p", { class: "redacted", text: `hidden: ${n.input.redacted}` })
        : el("div", { class: "arguments" }, describe(n.input)),
    n.error ? el("p", { class: "problem", text: n.error }) : null,
    result(state, n)))));
}

function result(state, n) {
  const out = n.output;
  if (out === null || hidden(out)) return null;
  const records = [...(out.memories || []), ...(out.sources || []), ...(out.records || [])];
  if (records.length) {
    return el("ul", { class: "payload-records" }, records.map((r) => el("li", {},
      recordState(r), r.status ? null : el("span", { class: "kind", text: r.kind || "" }), " ", recordLink(state, r.id, r.summary))));
  }
  if (Array.isArray(out.events)) {
    return el("p", { class: "muted", text: out.events.length
      ? `${plural(out.events.length, "history result")}: ${out.events.map((e) => `turn ${e.turn}${e.score === null ? "" : ` (${e.score.toFixed(2)})`}`).join(", ")} — their text under Recalled and retrieved`
      : "no history result" });
  }
  return el("details", {}, el("summary", { text: "output" }), describe(out));
}

// The turn-end review: each candidate, what was decided and what it touched.
function decisions(box, state, nodes) {
  const reviews = nodes.filter((n) => n.name === "memory_review");
  if (!reviews.length) {
    box.remove();
    return;
  }
  for (const n of reviews) {
    const input = n.input || {};
    const out = n.output;
    box.append(el("p", { class: "muted", text: hidden(input) || n.input === null ? "the review (its input is memory)"
      : `reviewed turns ${input.afterTurn + 1}–${input.throughTurn}, ${plural(input.messages || 0, "message")}` }));
    if (out === null || hidden(out)) {
      box.append(el("p", { class: "redacted", text: out === null ? "decisions hidden: they are memory" : `hidden: ${out.redacted}` }));
      continue;
    }
    if (!out.decisions) {
      box.append(empty(n.status === "RUNNING" ? "Not applied yet." : "No decision recorded."));
      continue;
    }
    const written = new Map((out.memories || []).map((r) => [r.version, r]));
    box.append(el("ol", { class: "decisions", "data-execution": n.id }, out.decisions.map((d) => el("li", { "data-applied": d.applied },
      badge(d.applied || d.action), d.applied && d.applied !== d.action ? el("span", { class: "muted", text: ` (asked: ${d.action.toLowerCase()})` }) : null,
      " ", el("span", { class: "text", text: d.summary || "" }),
      d.restates ? el("div", { class: "muted" }, "restates ", recordLink(state, d.restates, null),
        d.similarity === null || d.similarity === undefined ? null : ` · similarity ${d.similarity.toFixed(2)}`) : null,
      d.recordId ? el("div", { class: "muted" }, `${String(d.action).toLowerCase()}s `, recordLink(state, d.recordId, null)) : null,
      (d.memories || []).map((v) => written.get(v)).filter(Boolean).map((r) => el("div", {}, "→ ", recordState(r), recordLink(state, r.id, r.summary)))))));
  }
}

async function transcript(box, state, turnId) {
  const list = el("ol", { class: "conversation" });
  box.append(list);
  let after = null;
  const page = async () => {
    const { data, errors } = await gql(TRANSCRIPT, { id: turnId, after });
    const found = data.turn && data.turn.transcriptConnection;
    if (!found) {
      list.replaceWith(refusedOrProblem(errors[0], "session", state.ns));
      return false;
    }
    for (const { node } of found.edges) list.append(eventNode(state, node));
    if (!list.children.length) list.replaceWith(empty("No events recorded."));
    after = found.pageInfo.endCursor;
    return found.pageInfo.hasNextPage;
  };
  if (await page()) box.append(more(list, page));
}

async function uses(box, state, turnId) {
  const { data, errors } = await gql(USES, { id: turnId });
  const refusal = errors.find((e) => e.code === "FORBIDDEN");
  if (refusal) {
    box.append(refusedOrProblem(refusal, "memory", state.ns));
    return;
  }
  const found = (data.turn ? data.turn.executionsConnection.edges : []).map((e) => e.node).filter((n) => n.uses && n.uses.length);
  if (!found.length) {
    box.append(empty("Nothing recalled or retrieved."));
    return;
  }
  box.append(el("ul", { class: "plain" }, found.map((n) => el("li", { "data-execution": n.id },
    el("strong", { text: n.name }), el("ol", { class: "uses" }, n.uses.map((u) => el("li", {},
      u.memoryVersion ? [recordLink(state, u.memoryVersion.record.id, u.memoryVersion.summary), " ",
        el("span", { class: "muted", text: `v${u.memoryVersion.number} · ${u.memoryVersion.kind}` })]
        : u.historyEvent ? el("div", { class: "history-hit" },
          el("a", { href: href({ ...state, turn: u.historyEvent.turn.id }), class: "hit-turn", text: u.historyEvent.header }),
          el("p", { class: "text", text: u.historyEvent.text }))
          : el("span", { class: "muted", text: "gone" }))))))));
}
