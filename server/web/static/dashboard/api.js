// The GraphQL API, as the page calls it: one POST per document, the token from this
// tab's session storage. Answers keep their data and their errors side by side, so a
// view shows what it may and says what was refused. The page talks to the server it is
// served from, and to no other: its Content-Security-Policy allows connections to its
// own origin only (connect-src 'self').

const TOKEN = "agent-memory-token";
export const ENDPOINT = "/graphql";

export function token() {
  return sessionStorage.getItem(TOKEN) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN, value);
  else sessionStorage.removeItem(TOKEN);
}

export class ApiError extends Error {
  constructor(code, message, path) {
    super(message);
    this.code = code;
    this.path = path || [];
  }
}

// {data, errors}: errors as ApiError, each with its code and the path it nulled. A
// request the server refused as a whole (no token, a bad document) throws.
export async function gql(query, variables) {
  let response;
  try {
    response = await fetch(ENDPOINT, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token()}` },
      body: JSON.stringify({ query, variables: variables || {} }),
    });
  } catch (err) {
    throw new ApiError("UNREACHABLE", `the API at ${ENDPOINT} cannot be reached (${err.message})`);
  }
  let body;
  try {
    body = await response.json();
  } catch (err) {
    throw new ApiError(String(response.status), `the API answered ${response.status}, not JSON`);
  }
  const errors = (body.errors || []).map(
    (e) => new ApiError((e.extensions && e.extensions.code) || String(response.status), e.message, e.path),
  );
  if (!body.data) {
    throw errors[0] || new ApiError(String(response.status), "no answer");
  }
  return { data: body.data, errors };
}

// The errors of an answer that nulled ``path`` (a field's path, e.g. ["agent", "sessions"]),
// or a field under it.
export function errorAt(errors, ...path) {
  return errors.find((e) => path.every((p, i) => e.path[i] === p)) || null;
}

// What a reader needs to read each resource of a namespace (docs/security.md).
export function grantsFor(resource, ns) {
  return {
    agent: [`SELECT ${ns}.Agent`],
    session: [`SELECT ${ns}.Session`],
    memory: [`SELECT ${ns}.AgentMemory.indexes.*`, `SELECT ${ns}.AgentMemory.document`],
  }[resource];
}

// A subscription over this server's WebSocket, in the graphql-transport-ws protocol (the
// page's Content-Security-Policy allows its own origin only: connect-src 'self'). The
// token goes in connection_init's payload. ``on.next`` gets each {data, errors}; a
// refusal or a closed connection goes to ``on.stopped`` with its reason. The returned
// function ends it.
export function subscribe(query, variables, on) {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${ENDPOINT}`, "graphql-transport-ws");
  let ended = false;
  const send = (message) => ws.send(JSON.stringify(message));
  const stop = (reason) => {
    if (ended) return;
    ended = true;
    on.stopped(reason);
  };
  ws.addEventListener("open", () => send({ type: "connection_init", payload: { Authorization: `Bearer ${token()}` } }));
  ws.addEventListener("message", (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "connection_ack") send({ id: "1", type: "subscribe", payload: { query, variables } });
    else if (message.type === "ping") send({ type: "pong" });
    else if (message.type === "next") {
      const errors = (message.payload.errors || []).map((e) => new ApiError((e.extensions && e.extensions.code) || "ERROR", e.message, e.path));
      if (!message.payload.data) stop(errors[0] || new ApiError("ERROR", "no answer"));
      else on.next({ data: message.payload.data, errors });
    } else if (message.type === "error") {
      const e = message.payload[0] || {};
      stop(new ApiError((e.extensions && e.extensions.code) || "ERROR", e.message || "refused"));
    } else if (message.type === "complete") stop(new ApiError("COMPLETE", "the server ended the subscription"));
  });
  ws.addEventListener("close", (event) => stop(new ApiError("CLOSED", `the connection closed (${event.code})`)));
  return () => {
    ended = true;
    if (ws.readyState === WebSocket.OPEN) send({ id: "1", type: "complete" });
    ws.close();
  };
}
