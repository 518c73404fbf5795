// A session as a trace: its turns in order, and for the chosen turn its conversation,
// the tree of its executions with their model calls and durations, what it recalled and
// retrieved, and what it wrote to memory.

import { gql } from "./api.js";
import { badge, clear, duration, el, empty, field, plural, section, shortId, timeEl, when } from "./dom.js";
import { SESSION, TRANSCRIPT, TURN, USES, WROTE } from "./queries.js";
import { loading, problem } from "./panels.js";
import { eventNode, recordLink } from "./render.js";
import { href } from "./route.js";
import { more, refusedOrProblem } from "./view-agents.js";

export async function session(main, state) {
  if (main.dataset.session === state.session && document.getElementById("turns")) {
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
  clear(main,
    el("header", { class: "page-head" },
      el("h1", {}, "Session ", s.externalId ? el("span", { text: s.externalId }) : null, " ", shortId(s.id)),
      el("dl", { class: "facts" }, field("agent", el("a", { href: href({ ns: s.agent.namespace, agent: s.agent.id, view: "agent" }), text: s.agent.name })),
        field("started", timeEl(s.createdAt)), field("turns", count))),
    el("div", { class: "trace" },
      el("nav", { class: "turns-pane", "aria-label": "turns" }, list),
      el("div", { class: "turn-pane", id: "turn" })));
  let page = s.turns;
  const show = (found) => {
    count.textContent = String(found.totalCount);
    for (const { node: t } of found.edges) {
      list.append(el("li", { "data-turn": t.id, "data-number": t.number },
        el("a", { href: href({ ...state, turn: t.id }) },
          el("span", { class: "number", text: `#${t.number}` }),
          t.attempt > 1 ? el("span", { class: "muted", text: `try ${t.attempt}`, title: `attempt ${t.attempt}` }) : null,
          " ", badge(t.status), t.preview ? badge("preview") : null,
          t.replayOf ? el("span", { class: "muted", text: ` replays #${t.replayOf.number}` }) : null,
          el("span", { class: "when muted", text: duration(t.createdAt, t.endedAt) || "open" }))));
    }
    if (!found.edges.length && !list.children.length) list.append(el("li", { class: "empty", text: "no turns yet" }));
  };
  show(page);
  if (page.pageInfo.hasNextPage) {
    list.after(more(list, async () => {
      const next = await gql(SESSION, { id: state.session, after: page.pageInfo.endCursor });
      page = next.data.session.turns;
      show(page);
      select(state);
      return page.pageInfo.hasNextPage;
    }));
  }
  if (!state.turn && s.turns.edges.length) {
    history.replaceState(null, "", href({ ...state, turn: s.turns.edges[0].node.id }));
    state = { ...state, turn: s.turns.edges[0].node.id };
  }
  select(state);
  await turn(state);
}

function select(state) {
  for (const li of document.querySelectorAll("#turns li[data-turn]")) {
    li.classList.toggle("selected", li.dataset.turn === state.turn);
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
      field("id", shortId(t.id))),
    t.error ? el("p", { class: "problem", text: `failed: ${t.error}` }) : null,
    el("p", {}, el("a", { href: asOf, class: "as-of-link", text: "The memory as it stood when this turn began →" })));
  const conversation = section("Conversation");
  conversation.id = "conversation";
  const executions = section("Executions");
  executions.id = "executions";
  const retrieved = section("Recalled and retrieved");
  retrieved.id = "retrieved";
  const wrote = section("Wrote to memory");
  wrote.id = "wrote";
  clear(pane, head, el("div", { class: "columns" }, conversation, el("div", {}, executions, retrieved, wrote)));

  tree(executions, t);
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
    badge(r.status), r.preview ? badge("preview") : null, " ", recordLink(state, r.id, r.current.summary)))));
}

function tree(box, t) {
  const page = t.executionsConnection;
  if (!page) {
    box.append(problem({ code: "ERROR", message: "executions not readable" }));
    return;
  }
  const nodes = page.edges.map((e) => e.node);
  const children = new Map();
  for (const n of nodes) {
    const key = n.parent ? n.parent.id : "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(n);
  }
  const known = new Set(nodes.map((n) => n.id));
  const roots = nodes.filter((n) => !n.parent || !known.has(n.parent.id));
  const total = Math.max(1, new Date(t.endedAt || Date.now()).getTime() - new Date(t.createdAt).getTime());
  const item = (n) => {
    const ms = n.endedAt ? new Date(n.endedAt).getTime() - new Date(n.createdAt).getTime() : null;
    return el("li", { "data-execution": n.id, class: `execution kind-${n.kind.toLowerCase()}` },
      el("div", { class: "execution-line" },
        badge(n.kind), " ", el("strong", { text: n.name }), " ", n.status !== "SUCCEEDED" ? badge(n.status) : null,
        el("span", { class: "muted", text: ` ${ms === null ? "running" : duration(n.createdAt, n.endedAt)}` }),
        el("meter", { min: "0", max: String(total), value: String(ms === null ? 0 : Math.min(ms, total)), title: "share of the turn's time" })),
      n.error ? el("p", { class: "problem", text: n.error }) : null,
      n.invocations.length ? el("ul", { class: "invocations" }, n.invocations.map((i) => el("li", {},
        el("span", { class: "model", text: i.model }), " ", el("span", { class: "muted", text: i.purpose.toLowerCase() }),
        ` · ${i.inputTokens} in / ${i.outputTokens} out`, i.counted ? null : el("span", { class: "muted", text: " (not counted)" })))) : null,
      (children.get(n.id) || []).length ? el("ul", { class: "tree" }, children.get(n.id).map(item)) : null);
  };
  const tokens = nodes.flatMap((n) => n.invocations).reduce((sum, i) => sum + i.inputTokens + i.outputTokens, 0);
  box.append(el("p", { class: "muted", text: `${plural(page.totalCount, "execution")} · ${plural(nodes.reduce((s, n) => s + n.invocations.length, 0), "model call")} · ${tokens} tokens` }),
    el("ul", { class: "tree root" }, roots.map(item)));
  if (page.pageInfo.hasNextPage) box.append(el("p", { class: "muted", text: `the first ${nodes.length} of ${page.totalCount} are shown` }));
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
        : u.historyEvent ? el("span", { text: u.historyEvent.header })
          : el("span", { class: "muted", text: "gone" }))))))));
}

