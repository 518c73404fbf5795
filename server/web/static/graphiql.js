// GraphiQL for agent-memory, served with its assets by the server (no CDN).
// Every request needs `Authorization: Bearer <token>` (Headers tab). Opened as
// /graphql#token=<token> (the link `agent-memory serve` prints in dev mode), the page
// fills that header in; the fragment never leaves the browser. GraphiQL keeps the
// headers in this browser's local storage.
//
// Until the headers hold a token, nothing is sent: a request with the placeholder would
// only be refused (401). The schema is fetched once a token is given.
(function () {
  "use strict";
  var PLACEHOLDER = "Bearer <your token>";
  var ASK = "Set your token under Headers, as {\"Authorization\": \"Bearer amk_...\"} " +
    "(`make run` prints a link that fills it in); the schema loads once it is there.";
  var token = new URLSearchParams(window.location.hash.slice(1)).get("token");
  var base = GraphiQL.createFetcher({ url: window.location.pathname });

  function authorization(headers) {
    var found = "";
    Object.keys(headers || {}).forEach(function (name) {
      if (name.toLowerCase() === "authorization") found = String(headers[name]);
    });
    return found;
  }

  function hasToken(headers) {
    return /^bearer\s+[^\s<>]+$/i.test(authorization(headers).trim());
  }

  function parsed(text) {
    try {
      var value = JSON.parse(text || "{}");
      return value && typeof value === "object" ? value : {};
    } catch (err) {
      return {};
    }
  }

  // A fetcher that sends nothing without a token. Each new one makes GraphiQL fetch the
  // schema again: one is made when a token first appears in the headers.
  function fetcher() {
    return function (params, options) {
      if (!hasToken(options && options.headers)) {
        return Promise.resolve({ errors: [{ message: ASK }] });
      }
      return base(params, options);
    };
  }

  function App() {
    var state = React.useState(fetcher);
    var current = state[0];
    var replace = state[1];
    var ready = React.useRef(false);
    var props = {
      fetcher: current,
      shouldPersistHeaders: true,
      defaultHeaders: JSON.stringify({ Authorization: PLACEHOLDER }, null, 2),
      defaultQuery: "# Set your token under Headers, then run:\n{\n  namespaces\n}\n",
      onEditHeaders: function (text) {
        var now = hasToken(parsed(text));
        if (now && !ready.current) replace(fetcher);
        ready.current = now;
      },
    };
    if (token) props.headers = JSON.stringify({ Authorization: "Bearer " + token }, null, 2);
    return React.createElement(GraphiQL, props);
  }

  if (token) history.replaceState(null, "", window.location.pathname + window.location.search);
  ReactDOM.createRoot(document.getElementById("graphiql")).render(React.createElement(App));
})();
