// Zoea web console script: live updates (server-sent events) and the terminal console's keys. The pages work without
// it: every table is server-rendered and every action is a form. Text from the server is set with textContent, never
// as HTML.
"use strict";
(function () {
  const body = document.body;
  const page = body.dataset.page;
  let keys = {};
  try { keys = JSON.parse(body.dataset.keys || "{}"); } catch (e) { keys = {}; }

  // --- live updates ---------------------------------------------------------------------------------------------
  const live = document.getElementById("live");
  const setLive = (on, why) => {
    if (!live) return;
    live.textContent = on ? "live" : "not live";
    live.className = "live " + (on ? "on" : "off");
    live.title = why || "";
  };
  const mysisPath = (name) => "/mysis/" + encodeURIComponent(name);
  const mysisBar = document.querySelector("[data-mysis]");
  const mysisID = mysisBar ? mysisBar.dataset.mysis : "";
  // Each page follows only what it shows: the swarm page its rows (and the counts, new and deleted myses), a mysis
  // page its mysis, any other page whether the console is live. The server sends a row at most every 250 ms.
  const shownIDs = () => Array.from(document.querySelectorAll("#swarm tbody tr[data-id]")).map((tr) => tr.dataset.id);
  const eventsURL = () => {
    if (page === "swarm") return "/events?swarm=1&ids=" + encodeURIComponent(shownIDs().join(","));
    if (mysisID) return "/events?mysis=" + encodeURIComponent(mysisID);
    return "/events";
  };
  if (window.EventSource && page !== "login" && page !== "refused") {
    const es = new EventSource(eventsURL());
    es.onopen = () => setLive(true, "");
    es.onerror = () => setLive(false, "the connection to the console was lost; reconnecting");
    es.addEventListener("live", (e) => { const d = JSON.parse(e.data); setLive(d.live, d.why); });
    es.addEventListener("reload", () => location.reload());
    es.addEventListener("row", (e) => {
      const d = JSON.parse(e.data);
      const tr = document.querySelector('tr[data-id="' + CSS.escape(d.id) + '"]');
      if (tr) {
        const set = (col, text) => { const td = tr.querySelector('[data-col="' + col + '"]'); if (td) td.textContent = text; };
        const st = tr.querySelector('[data-col="state"] .state');
        if (st) { st.textContent = d.state; st.className = "state " + d.state; st.title = d.reason; }
        set("model", d.provider + " / " + d.model);
        set("credits", d.credits); set("turns", String(d.turns)); set("tokens", d.tokens); set("cost", d.cost);
        set("where", d.where); set("cargo", d.cargo);
        set("action", d.action); set("error", d.error); set("owner", d.owner);
        tr.dataset.updated = String(Date.now()); // when the last row event arrived (the benchmark reads it)
      }
      if (d.id === mysisID) {
        const st = document.getElementById("state");
        if (st) { st.textContent = d.state; st.className = "state " + d.state; }
        const where = document.getElementById("ship-where");
        if (where && d.where !== "?") where.textContent = d.where;
      }
    });
    es.addEventListener("gone", (e) => {
      const d = JSON.parse(e.data);
      const tr = document.querySelector('tr[data-id="' + CSS.escape(d.id) + '"]');
      if (tr) tr.remove();
    });
    es.addEventListener("counts", (e) => {
      const d = JSON.parse(e.data);
      const el = document.getElementById("counts");
      if (el) el.textContent = d.total + " myses" + (d.states ? " · " + d.states : "");
    });
    // A mysis created elsewhere: shown at once when this page has room for it, else counted in a notice.
    let added = 0;
    es.addEventListener("new", (e) => {
      const d = JSON.parse(e.data);
      const tbody = document.querySelector("#swarm tbody");
      if (!tbody || document.querySelector('tr[data-id="' + CSS.escape(d.id) + '"]')) return;
      const room = tbody.dataset.room === "1";
      if (room) {
        const empty = tbody.querySelector("tr.empty");
        if (empty) empty.remove();
        const tr = document.createElement("tr");
        tr.dataset.id = d.id; tr.dataset.name = d.name;
        const cell = (col, text, cls) => { const td = document.createElement("td"); td.dataset.col = col; if (cls) td.className = cls; td.textContent = text; tr.append(td); return td; };
        const pick = cell("pick", "", "pick");
        const box = document.createElement("input"); box.type = "checkbox"; box.name = "mysis"; box.value = d.name;
        box.setAttribute("form", "bulk"); box.setAttribute("aria-label", "select " + d.name); pick.append(box);
        const name = cell("name", "");
        const a = document.createElement("a"); a.href = mysisPath(d.name); a.textContent = d.name; name.append(a);
        const st = cell("state", "");
        const span = document.createElement("span"); span.className = "state " + d.state; span.title = d.reason; span.textContent = d.state; st.append(span);
        cell("model", d.provider + " / " + d.model);
        cell("credits", d.credits, "num"); cell("turns", String(d.turns), "num"); cell("tokens", d.tokens, "num"); cell("cost", d.cost, "num");
        cell("where", d.where); cell("cargo", d.cargo, "num");
        cell("action", d.action); cell("error", d.error, "error"); cell("owner", d.owner);
        tbody.append(tr);
        return;
      }
      added++;
      const note = document.getElementById("added");
      if (note) { note.textContent = added + " new " + (added === 1 ? "mysis" : "myses") + " since this page was read: reload to see them"; note.hidden = false; }
    });
    es.addEventListener("event", (e) => {
      const d = JSON.parse(e.data);
      const tr = document.querySelector('tr[data-id="' + CSS.escape(d.id) + '"]');
      if (tr && (d.state || d.action || d.error)) { // what the event says shows at once; its "row" follows
        const set = (col, text) => { const td = tr.querySelector('[data-col="' + col + '"]'); if (td) td.textContent = text; };
        if (d.state) { const st = tr.querySelector('[data-col="state"] .state'); if (st) { st.textContent = d.state; st.className = "state " + d.state; } }
        if (d.action) set("action", d.action);
        if (d.error) set("error", d.error);
      }
      if (tr) tr.dataset.event = String(Date.now()); // when the last event for it arrived (the benchmark reads it)
      if (d.id !== mysisID) return;
      const ol = document.getElementById("timeline");
      if (!ol) return;
      const none = ol.querySelector("li.none");
      if (none) none.remove();
      const li = document.createElement("li");
      li.className = d.kind;
      const t = document.createElement("time");
      t.textContent = d.at;
      li.append(t, " " + d.text);
      ol.prepend(li);
      while (ol.children.length > 200) ol.lastElementChild.remove();
    });
  }

  // --- selection for bulk actions: the first column's boxes, kept across the action's reload -------------------
  const bulk = document.getElementById("bulk");
  if (bulk) {
    const boxes = () => Array.from(document.querySelectorAll('#swarm tbody input[name="mysis"]'));
    const all = document.getElementById("pick-all");
    const count = () => {
      const n = boxes().filter((b) => b.checked).length;
      const el = document.getElementById("picked-count");
      if (el) el.textContent = n + " selected";
      if (all) all.checked = n > 0 && n === boxes().length;
    };
    document.addEventListener("change", (e) => { if (e.target.name === "mysis") count(); });
    if (all) all.addEventListener("change", () => { boxes().forEach((b) => { b.checked = all.checked; }); count(); });
    bulk.addEventListener("submit", () => {
      const picked = boxes().filter((b) => b.checked).map((b) => b.value);
      bulk.elements.back.value = location.pathname + location.search + "#picked=" + picked.slice(0, 200).map(encodeURIComponent).join(",");
    });
    if (location.hash.startsWith("#picked=")) {
      const keep = new Set(location.hash.slice(8).split(",").filter(Boolean).map(decodeURIComponent));
      boxes().forEach((b) => { b.checked = keep.has(b.value); });
    }
    count();
  }

  // --- keys (internal/keytable: the same table as zoea tui) ----------------------------------------------------
  const rows = () => Array.from(document.querySelectorAll("#swarm tbody tr[data-id]"));
  let selected = -1;
  const select = (i) => {
    const rs = rows();
    if (!rs.length) return;
    if (selected >= 0 && rs[selected]) rs[selected].classList.remove("selected");
    selected = Math.max(0, Math.min(i, rs.length - 1));
    rs[selected].classList.add("selected");
    rs[selected].scrollIntoView({ block: "nearest" });
  };
  const target = () => {
    if (mysisBar) return mysisBar.dataset.ref;
    const rs = rows();
    return selected >= 0 && rs[selected] ? rs[selected].dataset.name : "";
  };
  const focus = (id) => { const el = document.getElementById(id); if (el) { el.focus(); return true; } return false; };
  const post = (name, verb) => {
    if (mysisBar) { const f = document.getElementById(verb); if (f) f.requestSubmit(); return; }
    const f = document.getElementById("row-action");
    if (!f || !name) return;
    f.action = mysisPath(name) + "/" + verb;
    // Back to this page as it is (its sort and filter), with the same mysis selected.
    if (f.elements.back) f.elements.back.value = location.pathname + location.search + "#sel=" + encodeURIComponent(name);
    f.requestSubmit();
  };
  const act = {
    new: () => focus("create-name") || (location.href = "/#create"),
    broadcast: () => focus("broadcast-text") || (location.href = "/#broadcast"),
    message: (n) => focus("message-text") || (n && (location.href = mysisPath(n) + "#message")),
    relaunch: (n) => post(n, "start"),
    stop: (n) => post(n, "stop"),
    delete: (n) => n && (location.href = mysisPath(n) + "/delete"),
    configure: (n) => focus("configure-provider") || (n && (location.href = mysisPath(n) + "#configure")),
    focus: (n) => n && !mysisBar && (location.href = mysisPath(n)),
    preview: (n) => n && (location.href = mysisPath(n) + "/anatomy"),
    filter: () => focus("filter"),
    sort: () => { const a = document.getElementById("next-sort"); if (a) location.href = a.href; },
    help: () => (location.href = "/help"),
    quit: () => (location.href = "/"),
    back: () => (location.href = "/"),
    up: () => select(selected - 1),
    down: () => select(selected + 1),
  };
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const el = document.activeElement;
    const typing = el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
    if (typing) { if (e.key === "Escape") el.blur(); return; }
    const a = keys[e.key];
    if (!a || !act[a]) return;
    if ((a === "up" || a === "down") && !rows().length) return;
    if (a === "back" && page === "swarm") return;
    if (a === "focus" && (mysisBar || selected < 0)) return; // Enter keeps its meaning on links and buttons
    e.preventDefault();
    act[a](target());
  });
  if (location.hash.startsWith("#sel=")) {
    const name = decodeURIComponent(location.hash.slice(5));
    const i = rows().findIndex((tr) => tr.dataset.name === name);
    if (i >= 0) select(i);
  } else if (location.hash) focus(location.hash.slice(1) + "-text") || focus(location.hash.slice(1) + "-provider");
})();
