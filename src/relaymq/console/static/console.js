// The relaymq console (docs/console.md): one page, vanilla JavaScript, over the broker's admin
// and REST routes. The operator's credentials stay in this tab (sessionStorage) and go with
// every call as HTTP basic authentication; the routes check them, as for curl.
"use strict";
(function () {
  const REFRESH_MS = 2000;
  const SAMPLES = 60;
  const state = {auth: sessionStorage.getItem("relaymq.auth"), user: sessionStorage.getItem("relaymq.user"),
                 page: null, busy: false, qmgr: null, samples: [], last: null};

  // -- DOM ---------------------------------------------------------------------------------------
  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }
  const $ = (id) => document.getElementById(id);
  function setStatus(text, bad) {
    const footer = $("status");
    footer.textContent = text || "";
    footer.className = bad ? "error" : "";
  }
  function table(testid, columns, rows, rowKey) {
    const head = h("tr", {}, columns.map((c) => h("th", {class: c.num ? "num" : null, text: c.title})));
    const body = rows.map((row) => h("tr", {"data-key": rowKey ? rowKey(row) : null},
      columns.map((c) => h("td", {class: c.num ? "num" : null, "data-col": c.key || null},
        c.cell ? c.cell(row) : String(row[c.key] ?? "")))));
    if (rows.length === 0) body.push(h("tr", {}, h("td", {colspan: columns.length, class: "empty", text: "none"})));
    return h("table", {"data-testid": testid}, h("thead", {}, head), h("tbody", {}, body));
  }
  function replace(container, node) {
    while (container.firstChild) container.removeChild(container.firstChild);
    if (node) container.appendChild(node);
  }
  function seconds(value) {
    if (value === null || value === undefined) return "-";
    const s = Math.round(value);
    if (s < 120) return s + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    return Math.round(s / 3600) + " h";
  }

  // -- calls -------------------------------------------------------------------------------------
  async function api(method, path, options) {
    const headers = Object.assign({}, (options && options.headers) || {});
    if (state.auth) headers.Authorization = "Basic " + state.auth;
    const response = await fetch(path, {method: method, headers: headers, body: options && options.body,
                                        credentials: "omit", cache: "no-store"});
    const text = await response.text();
    let json = null;
    if ((response.headers.get("content-type") || "").includes("json") && text.trim()) {
      try { json = JSON.parse(text); } catch (e) { json = null; }
    }
    if (response.status === 401 && state.auth && !(options && options.trying)) logout();
    return {status: response.status, json: json, text: text, headers: response.headers};
  }
  function problem(answer) {
    const j = answer.json;
    if (j && j.error) return typeof j.error === "string" ? j.error : (j.error[0] && j.error[0].message) || answer.text;
    return "HTTP " + answer.status + (answer.text ? ": " + answer.text.trim().slice(0, 200) : "");
  }
  async function getJson(path) {
    const answer = await api("GET", path);
    if (answer.status !== 200) throw new Error(problem(answer));
    return answer.json;
  }
  async function act(method, path, options, done) {
    const answer = await api(method, path, options);
    if (answer.status >= 400) setStatus(problem(answer), true);
    else setStatus(done || "done");
    return answer;
  }
  const enc = encodeURIComponent;
  // A button that asks, calls a route and refreshes the page.
  function actionButton(label, question, method, path, done, refresh, danger) {
    return h("button", {class: danger === false ? null : "danger", text: label, onclick: async () => {
      if (question && !confirm(question)) return;
      await act(method, path, null, done);
      refresh();
    }});
  }
  // A page's heading and the element its data is drawn into.
  function titled(main, title) {
    const holder = h("div", {});
    main.append(h("h1", {text: title}), holder);
    return holder;
  }

  // -- login -------------------------------------------------------------------------------------
  function toBase64(text) {
    return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
  }
  async function login(event) {
    event.preventDefault();
    const user = $("login-user").value, password = $("login-password").value;
    state.auth = toBase64(user + ":" + password);
    const answer = await api("GET", "/relaymq/mqtt/sys", {trying: true});
    if (answer.status !== 200) {
      state.auth = null;
      $("login-error").textContent = answer.status === 401 ? "wrong user or password" : problem(answer);
      return;
    }
    sessionStorage.setItem("relaymq.auth", state.auth);
    sessionStorage.setItem("relaymq.user", user);
    state.user = user;
    start();
  }
  function logout() {  // back to the login form (credentials changed, or the operator asked)
    state.auth = null;
    sessionStorage.removeItem("relaymq.auth");
    sessionStorage.removeItem("relaymq.user");
    location.hash = "";
    location.reload();
  }

  // -- the rate sampler (overview chart) -----------------------------------------------------------
  async function sample() {
    const sys = await getJson("/relaymq/mqtt/sys");
    const now = performance.now();
    const received = Number(sys["$SYS/broker/messages/received"]), sent = Number(sys["$SYS/broker/messages/sent"]);
    if (state.last) {
      const dt = (now - state.last.at) / 1000;
      state.samples.push({in: Math.max(0, (received - state.last.received) / dt), out: Math.max(0, (sent - state.last.sent) / dt)});
      if (state.samples.length > SAMPLES) state.samples.shift();
    }
    state.last = {at: now, received: received, sent: sent};
    return sys;
  }

  async function qmgrName() {
    if (state.qmgr) return state.qmgr;
    const answer = await getJson("/ibmmq/rest/v3/admin/qmgr");
    state.qmgr = answer.qmgr[0].name;
    return state.qmgr;
  }

  // -- pages -------------------------------------------------------------------------------------
  // Each page builds its fixed parts once (forms keep what the operator typed) and refreshes
  // its data every REFRESH_MS.
  const pages = {};

  pages.overview = function (main) {
    const cards = h("div", {class: "cards", "data-testid": "overview-cards"});
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("data-testid", "rate-chart");
    const rates = h("div", {class: "legend"});
    main.append(h("h1", {text: "Overview"}), cards,
      h("div", {class: "panel chart"}, h("h2", {text: "Messages per second"}), rates, svg));
    function card(label, value, testid) {
      return h("div", {class: "card", "data-testid": testid}, h("div", {class: "value", text: value}), h("div", {class: "label", text: label}));
    }
    return async function refresh() {
      const sys = await sample();
      let queues = [];
      try { queues = (await getJson(`/ibmmq/rest/v3/admin/qmgr/${enc(await qmgrName())}/queue`)).queue; } catch (e) { queues = []; }
      const depth = queues.reduce((total, q) => total + ((q.status && q.status.currentDepth) || 0), 0);
      const s = (name) => sys["$SYS/broker/" + name];
      replace(cards, null);
      cards.append(
        card("clients connected", s("clients/connected"), "card-clients"),
        card("sessions", s("clients/total"), "card-sessions"),
        card("subscriptions", s("subscriptions/count"), "card-subscriptions"),
        card("retained messages", s("retained messages/count"), "card-retained"),
        card("messages in", s("messages/received"), "card-messages-in"),
        card("messages out", s("messages/sent"), "card-messages-out"),
        card("queued on queues", `${depth} on ${queues.length}`, "card-queues"),
        card("uptime", s("uptime"), "card-uptime"),
        card("store", s("store/state"), "card-store"));
      const last = state.samples[state.samples.length - 1] || {in: 0, out: 0};
      replace(rates, h("span", {}, h("span", {class: "in", "data-testid": "rate-in", text: `in ${last.in.toFixed(1)}/s`}),
        h("span", {class: "out", "data-testid": "rate-out", text: `out ${last.out.toFixed(1)}/s`})));
      window.RelaymqChart.render(svg, [{name: "in", className: "in", points: state.samples.map((p) => p.in)},
                                       {name: "out", className: "out", points: state.samples.map((p) => p.out)}], SAMPLES);
    };
  };

  function searchable(main, title, placeholder, extra) {
    const search = h("input", {type: "search", placeholder: placeholder, "data-testid": "search"});
    const holder = h("div", {});
    main.append(h("h1", {text: title}), h("div", {class: "toolbar"}, search, extra || null), holder);
    return {search: search, holder: holder};
  }

  pages.clients = function (main) {
    const view = searchable(main, "Clients", "client id, user or address");
    view.search.addEventListener("input", () => refresh());
    async function refresh() {
      const body = await getJson(`/relaymq/mqtt/clients?search=${enc(view.search.value)}`);
      replace(view.holder, table("clients-table", [
        {title: "Client id", key: "clientId"}, {title: "User", key: "username"}, {title: "Address", key: "peer"},
        {title: "Listener", key: "listener"}, {title: "Level", key: "protocolLevel", num: true},
        {title: "Keep alive", key: "keepAlive", num: true}, {title: "Connected", cell: (c) => seconds(c.connectedSeconds)},
        {title: "In", key: "messagesReceived", num: true}, {title: "Out", key: "messagesSent", num: true},
        {title: "Subscriptions", key: "subscriptions", num: true}, {title: "Queued", key: "queued", num: true},
        {title: "", cell: (c) => actionButton("Disconnect", `Disconnect ${c.clientId}?`, "DELETE",
          `/relaymq/mqtt/clients/${enc(c.clientId)}`, `disconnected ${c.clientId}`, refresh)}], body.clients, (c) => c.clientId));
    }
    return refresh;
  };

  pages.sessions = function (main) {
    const which = h("select", {"data-testid": "session-state"}, h("option", {value: "", text: "all"}),
      h("option", {value: "online", text: "online"}), h("option", {value: "offline", text: "offline"}));
    const view = searchable(main, "Sessions", "client id or user", which);
    view.search.addEventListener("input", () => refresh());
    which.addEventListener("change", () => refresh());
    async function refresh() {
      const query = `search=${enc(view.search.value)}` + (which.value ? `&state=${which.value}` : "");
      const body = await getJson(`/relaymq/mqtt/sessions?${query}`);
      replace(view.holder, table("sessions-table", [
        {title: "Client id", key: "clientId"}, {title: "User", key: "username"},
        {title: "State", cell: (s) => h("span", {class: s.online ? "state-up" : "state-down", text: s.online ? "online" : "offline"})},
        {title: "Level", key: "protocolLevel", num: true},
        {title: "Expiry", cell: (s) => s.expiryInterval === null ? "never" : seconds(s.expiryInterval)},
        {title: "Expires in", cell: (s) => seconds(s.expiresInSeconds)},
        {title: "Subscriptions", key: "subscriptions", num: true}, {title: "Queued", key: "queued", num: true},
        {title: "In flight", key: "inflight", num: true}, {title: "Dropped", key: "dropped", num: true},
        {title: "", cell: (s) => actionButton("Delete", `Discard the session of ${s.clientId} with its subscriptions and queued messages?`,
          "DELETE", `/relaymq/mqtt/sessions/${enc(s.clientId)}`, `discarded ${s.clientId}`, refresh)}], body.sessions, (s) => s.clientId));
    }
    return refresh;
  };

  pages.subscriptions = function (main) {
    const view = searchable(main, "Subscriptions", "topic filter or client id");
    view.search.addEventListener("input", () => refresh());
    async function refresh() {
      const body = await getJson(`/relaymq/mqtt/subscriptions?search=${enc(view.search.value)}`);
      replace(view.holder, table("subscriptions-table", [
        {title: "Client id", key: "clientId"}, {title: "Topic filter", key: "topicFilter"},
        {title: "Share group", key: "shareGroup"}, {title: "QoS", key: "qos", num: true},
        {title: "No local", key: "noLocal"}, {title: "Content filter", key: "contentFilter"}],
        body.subscriptions, (s) => s.clientId + " " + s.topicFilter));
    }
    return refresh;
  };

  pages.retained = function (main) {
    const view = searchable(main, "Retained messages", "topic filter, e.g. sensors/#");
    view.search.value = "#";
    view.search.addEventListener("change", () => refresh());
    async function refresh() {
      const answer = await api("GET", `/relaymq/mqtt/retained?filter=${enc(view.search.value || "#")}`);
      if (answer.status !== 200) { replace(view.holder, h("p", {class: "error", text: problem(answer)})); return; }
      replace(view.holder, table("retained-table", [
        {title: "Topic", key: "topic"}, {title: "QoS", key: "qos", num: true}, {title: "Bytes", key: "size", num: true},
        {title: "Payload", cell: (r) => r.payload !== undefined ? r.payload : "base64: " + r.payloadBase64},
        {title: "", cell: (r) => actionButton("Clear", `Clear the retained message of ${r.topic}?`, "DELETE",
          `/relaymq/mqtt/retained/${enc(r.topic)}`, `cleared ${r.topic}`, refresh)}], answer.json.retained, (r) => r.topic));
    }
    return refresh;
  };

  pages.listeners = function (main) {
    const holder = titled(main, "MQTT listeners");
    async function refresh() {
      const body = await getJson("/relaymq/mqtt/listeners");
      replace(holder, table("listeners-table", [
        {title: "Name", key: "name"}, {title: "Protocol", key: "protocol"}, {title: "URL", key: "url"},
        {title: "State", cell: (l) => h("span", {class: l.state === "listening" ? "state-up" : "state-down", text: l.state})},
        {title: "Connections", key: "connections", num: true},
        {title: "", cell: (l) => l.state === "listening"
          ? actionButton("Stop", `Stop ${l.name}? Its clients are disconnected.`, "POST",
                         `/relaymq/mqtt/listeners/${enc(l.name)}/stop`, `stop ${l.name} requested`, refresh)
          : actionButton("Start", null, "POST", `/relaymq/mqtt/listeners/${enc(l.name)}/start`,
                         `start ${l.name} requested`, refresh, false)}], body.listeners, (l) => l.name));
    }
    return refresh;
  };

  pages.queues = function (main) {
    const holder = titled(main, "Queues");
    async function refresh() {
      const qm = await qmgrName();
      const body = await getJson(`/ibmmq/rest/v3/admin/qmgr/${enc(qm)}/queue`);
      replace(holder, table("queues-table", [
        {title: "Queue", cell: (q) => h("a", {href: `#/queue/${enc(q.name)}`, text: q.name})},
        {title: "Type", key: "type"},
        {title: "Depth", num: true, key: "depth", cell: (q) => String((q.status && q.status.currentDepth) ?? "-")},
        {title: "Max depth", num: true, cell: (q) => String((q.storage && q.storage.maximumDepth) ?? "-")}],
        body.queue, (q) => q.name));
    }
    return refresh;
  };

  pages.queue = function (main, name) {
    const depth = h("span", {"data-testid": "queue-depth"});
    const list = h("div", {});
    const shown = h("pre", {class: "body", "data-testid": "message-body", hidden: true});
    const text = h("textarea", {rows: 3, "data-testid": "put-body", placeholder: "message text"});
    const base = async () => `/ibmmq/rest/v3/messaging/qmgr/${enc(await qmgrName())}/queue/${enc(name)}`;
    async function show(answer, what) {
      if (answer.status === 200) { shown.hidden = false; shown.textContent = answer.text; setStatus(what); }
      else if (answer.status === 204) { shown.hidden = false; shown.textContent = "(no message)"; setStatus("the queue is empty"); }
      else setStatus(problem(answer), true);
    }
    main.append(h("h1", {}, "Queue ", h("span", {text: name})),
      h("div", {class: "panel"}, h("p", {}, "Depth: ", depth),
        h("div", {class: "toolbar"},
          h("button", {class: "plain", text: "Browse first", "data-testid": "browse", onclick: async () => show(await api("GET", (await base()) + "/message"), "browsed")}),
          h("button", {class: "danger", text: "Get (remove) first", "data-testid": "get", onclick: async () => { await show(await api("DELETE", (await base()) + "/message"), "got one"); refresh(); }})),
        shown),
      h("div", {class: "panel"}, h("h2", {text: "Put a message"}), text,
        h("div", {class: "toolbar"}, h("button", {text: "Put", "data-testid": "put", onclick: async () => {
          await act("POST", (await base()) + "/message", {body: text.value, headers: {"Content-Type": "text/plain;charset=utf-8"}}, "put");
          text.value = "";
          refresh();
        }}))),
      h("h2", {text: "Messages (browse)"}), list);
    async function refresh() {
      const qm = await qmgrName();
      const definition = await getJson(`/ibmmq/rest/v3/admin/qmgr/${enc(qm)}/queue/${enc(name)}`);
      depth.textContent = String(definition.queue[0].status.currentDepth);
      const body = await getJson((await base()) + "/messagelist?limit=100");
      replace(list, table("messages-table", [
        {title: "Message id", key: "messageId"}, {title: "Priority", key: "priority", num: true},
        {title: "Persistence", key: "persistence"}, {title: "Format", key: "format"},
        {title: "Put", cell: (m) => `${m.putDate || ""} ${m.putTime || ""}`}, {title: "User", key: "userIdentifier"}],
        body.messages, (m) => m.messageId));
    }
    return refresh;
  };

  pages.psc = function (main) {
    const holder = titled(main, "Publish/subscribe (psc) subscriptions");
    async function refresh() {
      const answer = await api("GET", "/relaymq/pubsub/subscriptions");
      if (answer.status !== 200) { replace(holder, h("p", {class: "error", text: problem(answer)})); return; }
      replace(holder, table("psc-table", [
        {title: "Topic", key: "topic"}, {title: "Subscription point", key: "subPoint"}, {title: "Filter", key: "filter"},
        {title: "Queue", cell: (s) => `${s.queue}@${s.qmgr}`}, {title: "User", key: "user"},
        {title: "Options", cell: (s) => (s.options || []).join(", ")}], answer.json.subscriptions, (s) => s.topic + " " + s.queue));
    }
    return refresh;
  };

  pages.flows = function (main) {
    const holder = h("div", {});
    const group = h("input", {value: "default", "data-testid": "flow-group", size: 12});
    const definition = h("textarea", {rows: 10, "data-testid": "flow-definition",
      placeholder: "flow: relay\nnodes:\n  In: {type: MQInput, queue: IN}\n  Out: {type: MQOutput, queue: OUT}\nconnections:\n  - In.out -> Out"});
    const result = h("p", {"data-testid": "deploy-result"});
    main.append(h("h1", {text: "Message flows"}), holder,
      h("div", {class: "panel"}, h("h2", {text: "Deploy a flow"}), h("div", {class: "toolbar"}, "Execution group ", group),
        definition, h("div", {class: "toolbar"}, h("button", {text: "Deploy", "data-testid": "deploy", onclick: async () => {
          const answer = await api("POST", `/relaymq/flows?group=${enc(group.value || "default")}&source=console`,
                                   {body: definition.value, headers: {"Content-Type": "application/yaml"}});
          result.className = answer.status < 300 ? "" : "error";
          result.textContent = answer.status < 300 ? `deployed ${answer.json.name} in ${answer.json.group}` : problem(answer);
          refresh();
        }})), result));
    async function refresh() {
      const body = await getJson("/relaymq/flows");
      const stat = (key) => ({title: key, num: true, cell: (f) => String(f.stats[key]), key: key});
      replace(holder, table("flows-table", [
        {title: "Flow", key: "name"}, {title: "Group", key: "group"},
        {title: "Nodes", num: true, cell: (f) => String(Object.keys(f.nodes).length)},
        {title: "Instances", key: "instances", num: true}, {title: "Inputs", cell: (f) => f.inputs.join(", ")},
        stat("received"), stat("completed"), stat("backouts"), stat("failures"), stat("discarded"),
        {title: "", cell: (f) => actionButton("Undeploy", `Undeploy ${f.name}?`, "DELETE", `/relaymq/flows/${enc(f.name)}`,
          `undeployed ${f.name}`, refresh)}], body.flows, (f) => f.name));
    }
    return refresh;
  };

  pages.archive = function (main) {
    const holder = titled(main, "Archive partitions");
    async function refresh() {
      const answer = await api("GET", "/archive/partitions");
      if (answer.status === 404) { replace(holder, h("p", {text: "The archive is off: no [[archive.rule]] (docs/pipeline.md)."})); return; }
      if (answer.status !== 200) { replace(holder, h("p", {class: "error", text: problem(answer)})); return; }
      const rows = Object.entries(answer.json).map(([name, p]) => ({name: name, first: p.first_seq, next: p.next_seq, entries: p.next_seq - p.first_seq}));
      replace(holder, table("archive-table", [
        {title: "Partition", key: "name"}, {title: "First offset", key: "first", num: true},
        {title: "Next offset", key: "next", num: true}, {title: "Entries", key: "entries", num: true}], rows, (p) => p.name));
    }
    return refresh;
  };

  // -- routing -----------------------------------------------------------------------------------
  async function refreshPage() {
    if (!state.page || state.busy) return;
    state.busy = true;
    try {
      await state.page();
    } catch (error) {
      setStatus(String(error.message || error), true);
    } finally {
      state.busy = false;
    }
  }
  function route() {
    const [, name, argument] = (location.hash || "#/overview").match(/^#\/([a-z]+)(?:\/(.*))?$/) || [null, "overview"];
    const build = pages[name] || pages.overview;
    state.pageName = pages[name] ? name : "overview";
    for (const link of document.querySelectorAll("#nav a")) {
      link.classList.toggle("active", link.getAttribute("href") === "#/" + (name === "queue" ? "queues" : name));
    }
    const main = $("main");
    replace(main, null);
    const section = h("section", {"data-page": name});
    main.appendChild(section);
    state.page = build(section, argument ? decodeURIComponent(argument) : undefined);
    state.busy = false;
    setStatus("");
    refreshPage();
  }
  function start() {
    $("nav").hidden = false;
    $("logout").hidden = false;
    $("who").textContent = state.user || "";
    window.addEventListener("hashchange", route);
    route();
    setInterval(async () => {
      if (state.pageName !== "overview") {  // the chart's history goes on while other pages show
        try { await sample(); } catch (e) { /* the page's own calls report errors */ }
      }
      refreshPage();
    }, REFRESH_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login").addEventListener("submit", login);
    $("logout").addEventListener("click", () => logout());
    if (state.auth) start();
  });
})();
