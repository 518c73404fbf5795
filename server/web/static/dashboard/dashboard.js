// The agent-memory dashboard: read-only, plain JavaScript over the GraphQL API.
// The token stays in this tab (sessionStorage) and is sent as `Authorization: Bearer`.
// Text from the server is only ever set as textContent, never parsed as HTML.
(function () {
  "use strict";

  var Q = {
    namespaces: "{ namespaces }",
    agents: "query($ns: String!) { agents(namespace: $ns, first: 100) { edges { node { id name sessionless } } } }",
    records:
      "query($id: UUID!, $filter: MemoryRecordFilter, $after: String) { agent(id: $id) {" +
      " memoryRecords(first: 50, after: $after, filter: $filter) {" +
      " edges { node { id scope status preview pinned createdAt current { summary kind labels } } }" +
      " pageInfo { hasNextPage endCursor } } } }",
    record:
      "query($id: UUID!) { agentMemory(id: $id) { id scope status preview pinned createdAt" +
      " replaces { id } replacedBy { id }" +
      " versions { id number status summary content kind labels createdAt writtenBy {" +
      " execution { id kind name status } invocation { purpose model }" +
      " turn { id number attempt status } session { id externalId }" +
      " agentVersion { number label } } } } }",
    search:
      "query($id: UUID!, $q: String!) { searchAgentMemory(agentId: $id, query: $q, limit: 20) {" +
      " score version { number summary kind } record { id scope status } } }",
    sessions:
      "query($id: UUID!) { agent(id: $id) { sessions(first: 50) { edges { node { id externalId createdAt } } } } }",
    session:
      "query($id: UUID!) { session(id: $id) { id externalId" +
      " turns(first: 50) { edges { node { id number attempt status preview createdAt" +
      " transcriptConnection(first: 100) { edges { node { sequence type toolName payload } }" +
      " pageInfo { hasNextPage } totalCount } } } }" +
      " history(first: 100) { edges { node { turnNumber sequence header text } } } } }",
  };

  var $ = function (id) { return document.getElementById(id); };
  var state = { agent: null, after: null };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "onclick") node.addEventListener("click", attrs[k]);
      else node.setAttribute(k, attrs[k]);
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child != null) node.append(child);
    }
    return node;
  }

  function status(message, error) {
    $("status").textContent = message;
    $("status").className = error ? "error" : "";
  }

  async function gql(query, variables) {
    var response = await fetch($("endpoint").value, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Authorization: "Bearer " + sessionStorage.getItem("agent-memory-token"),
      },
      body: JSON.stringify({ query: query, variables: variables || {} }),
    });
    var body = await response.json();
    if (body.errors && body.errors.length) {
      var e = body.errors[0];
      var code = (e.extensions && e.extensions.code) || response.status;
      throw new Error(code + ": " + e.message);
    }
    return body.data;
  }

  async function run(label, work) {
    status(label + "…");
    try {
      await work();
      status(label + ": done");
    } catch (err) {
      status(label + " failed: " + err.message, true);
    }
  }

  function when(iso) { return iso ? iso.replace("T", " ").slice(0, 19) : ""; }
  function labels(value) {
    return Object.keys(value || {}).map(function (k) { return k + "=" + value[k]; }).join(", ");
  }
  function options(select, items, empty) {
    select.replaceChildren(el("option", { value: "", text: empty }));
    items.forEach(function (it) { select.append(el("option", { value: it.value, text: it.text })); });
    select.disabled = false;
  }

  // -- namespace and agent --------------------------------------------------------------

  async function connect(event) {
    event.preventDefault();
    sessionStorage.setItem("agent-memory-token", $("token").value.trim());
    await run("Namespaces", async function () {
      var data = await gql(Q.namespaces);
      options($("namespace"), data.namespaces.map(function (n) { return { value: n, text: n }; }),
        data.namespaces.length ? "choose a namespace" : "no namespace readable");
    });
  }

  async function pickNamespace() {
    var ns = $("namespace").value;
    if (!ns) return;
    await run("Agents", async function () {
      var data = await gql(Q.agents, { ns: ns });
      options($("agent"), data.agents.edges.map(function (e) {
        return { value: e.node.id, text: e.node.name };
      }), "choose an agent");
    });
  }

  async function pickAgent() {
    state.agent = $("agent").value || null;
    $("detail").replaceChildren();
    if (state.agent) await Promise.all([loadRecords(false), loadSessions()]);
  }

  // -- records ----------------------------------------------------------------------------

  function filter() {
    var f = {};
    if ($("filter-kind").value.trim()) f.kind = $("filter-kind").value.trim();
    if ($("filter-status").value) f.status = $("filter-status").value;
    if ($("filter-scope").value) f.scope = $("filter-scope").value;
    var label = $("filter-label").value.trim();
    if (label) {
      var at = label.indexOf("=");
      if (at < 1) throw new Error("a label filter is name=value");
      f.labels = [{ name: label.slice(0, at).trim(), value: label.slice(at + 1).trim() }];
    }
    return f;
  }

  async function loadRecords(more) {
    if (!state.agent) return;
    await run("Records", async function () {
      var data = await gql(Q.records, {
        id: state.agent, filter: filter(), after: more ? state.after : null,
      });
      var page = data.agent.memoryRecords;
      var body = $("records").tBodies[0];
      if (!more) body.replaceChildren();
      page.edges.forEach(function (e) {
        var r = e.node;
        body.append(el("tr", { "data-id": r.id, onclick: function () { openRecord(r.id); } },
          el("td", { text: r.current.summary }), el("td", { text: r.current.kind }),
          el("td", { text: r.status + (r.preview ? " (preview)" : "") }),
          el("td", { text: r.scope }), el("td", { text: labels(r.current.labels) }),
          el("td", { text: when(r.createdAt) })));
      });
      state.after = page.pageInfo.endCursor;
      $("more-records").hidden = !page.pageInfo.hasNextPage;
    });
  }

  async function openRecord(id) {
    await run("Record", async function () {
      var r = (await gql(Q.record, { id: id })).agentMemory;
      var box = el("div", { id: "record", "data-id": r.id },
        el("h2", { text: "Record " + r.id }),
        el("p", { class: "meta", text: [r.status, r.scope, r.preview ? "preview" : "live",
          r.pinned ? "pinned" : null, "created " + when(r.createdAt)].filter(Boolean).join(" · ") }),
        r.replaces ? el("p", { class: "meta", text: "replaces " + r.replaces.id }) : null,
        r.replacedBy ? el("p", { class: "meta", text: "replaced by " + r.replacedBy.id }) : null,
        el("h3", { text: r.versions.length + " version(s), oldest first" }));
      r.versions.forEach(function (v) {
        var w = v.writtenBy;
        var who = [
          "execution " + w.execution.kind + (w.execution.name ? " " + w.execution.name : "") +
            " (" + w.execution.id + ")",
          "turn " + w.turn.number + " attempt " + w.turn.attempt + " (" + w.turn.status + ")",
          w.session ? "session " + (w.session.externalId || w.session.id) : "no session",
          "agent version " + w.agentVersion.number + (w.agentVersion.label ? " " + w.agentVersion.label : ""),
          w.invocation ? "model " + w.invocation.model : null,
        ].filter(Boolean).join(" · ");
        box.append(el("div", { class: "version" },
          el("strong", { text: "v" + v.number + " " + v.status + " · " + v.kind }),
          el("p", { text: v.summary }),
          v.content ? el("pre", { text: v.content }) : null,
          Object.keys(v.labels || {}).length ? el("p", { class: "meta", text: labels(v.labels) }) : null,
          el("p", { class: "meta writer", text: "written " + when(v.createdAt) + " by " + who })));
      });
      $("detail").replaceChildren(box);
    });
  }

  // -- search -----------------------------------------------------------------------------

  async function search(event) {
    event.preventDefault();
    if (!state.agent) return status("choose an agent first", true);
    await run("Search", async function () {
      var hits = (await gql(Q.search, { id: state.agent, q: $("search-query").value })).searchAgentMemory;
      var list = $("search-results");
      list.replaceChildren();
      hits.forEach(function (h) {
        list.append(el("li", { "data-id": h.record.id, onclick: function () { openRecord(h.record.id); } },
          el("span", { text: h.version.summary }),
          el("span", { class: "meta", text: " · " + h.version.kind + " · " + h.record.scope +
            " · score " + h.score.toFixed(3) })));
      });
      if (!hits.length) list.append(el("li", { text: "nothing matched" }));
    });
  }

  // -- sessions ---------------------------------------------------------------------------

  async function loadSessions() {
    await run("Sessions", async function () {
      var data = await gql(Q.sessions, { id: state.agent });
      var list = $("sessions");
      list.replaceChildren();
      data.agent.sessions.edges.forEach(function (e) {
        var s = e.node;
        list.append(el("li", { "data-id": s.id, onclick: function () { openSession(s.id); },
          text: (s.externalId || s.id) + " · " + when(s.createdAt) }));
      });
      if (!data.agent.sessions.edges.length) list.append(el("li", { text: "no sessions" }));
    });
  }

  async function openSession(id) {
    await run("Session", async function () {
      var s = (await gql(Q.session, { id: id })).session;
      var box = el("div", { id: "session", "data-id": s.id },
        el("h2", { text: "Session " + (s.externalId || s.id) }), el("h3", { text: "Turns" }));
      s.turns.edges.forEach(function (e) {
        var t = e.node;
        var events = el("ol");
        var transcript = t.transcriptConnection;
        transcript.edges.forEach(function (edge) {
          var ev = edge.node;
          events.append(el("li", {},
            el("span", { class: "meta", text: ev.type + (ev.toolName ? " " + ev.toolName : "") + " " }),
            el("pre", { text: JSON.stringify(ev.payload) })));
        });
        if (transcript.pageInfo.hasNextPage) {
          events.append(el("li", { class: "meta",
            text: "… " + (transcript.totalCount - transcript.edges.length) + " more events" }));
        }
        box.append(el("details", { class: "turn" },
          el("summary", { text: "turn " + t.number + " attempt " + t.attempt + " · " + t.status +
            (t.preview ? " · preview" : "") + " · " + when(t.createdAt) }), events));
      });
      box.append(el("h3", { text: "Kept history" }));
      s.history.edges.forEach(function (e) {
        box.append(el("div", { class: "kept" },
          el("span", { class: "meta", text: e.node.header }), el("pre", { text: e.node.text })));
      });
      if (!s.history.edges.length) box.append(el("p", { class: "meta", text: "nothing kept" }));
      $("detail").replaceChildren(box);
    });
  }

  // -- wiring -----------------------------------------------------------------------------

  document.querySelectorAll("#tabs button").forEach(function (button) {
    button.addEventListener("click", function () {
      document.querySelectorAll("#tabs button").forEach(function (b) { b.classList.remove("active"); });
      button.classList.add("active");
      document.querySelectorAll(".tab").forEach(function (t) {
        t.hidden = t.id !== "tab-" + button.dataset.tab;
      });
    });
  });
  $("login").addEventListener("submit", connect);
  $("namespace").addEventListener("change", pickNamespace);
  $("agent").addEventListener("change", pickAgent);
  $("filters").addEventListener("submit", function (e) { e.preventDefault(); loadRecords(false); });
  $("more-records").addEventListener("click", function () { loadRecords(true); });
  $("search").addEventListener("submit", search);
  if (sessionStorage.getItem("agent-memory-token")) {
    $("token").value = sessionStorage.getItem("agent-memory-token");
  }
})();
