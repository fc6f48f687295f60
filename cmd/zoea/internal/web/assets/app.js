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
  const mysisBar = document.querySelector("[data-mysis]");
  const mysisID = mysisBar ? mysisBar.dataset.mysis : "";
  if (window.EventSource && page !== "login" && page !== "refused") {
    const es = new EventSource("/events");
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
        set("action", d.action); set("error", d.error); set("owner", d.owner);
        tr.classList.add("flash-row");
        tr.dataset.updated = String(Date.now()); // when the last row event arrived (the benchmark reads it)
        setTimeout(() => tr.classList.remove("flash-row"), 600);
      }
      if (d.id === mysisID) {
        const st = document.getElementById("state");
        if (st) { st.textContent = d.state; st.className = "state " + d.state; }
      }
    });
    es.addEventListener("gone", (e) => {
      const d = JSON.parse(e.data);
      const tr = document.querySelector('tr[data-id="' + CSS.escape(d.id) + '"]');
      if (tr) tr.remove();
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
  const mysisPath = (name) => "/mysis/" + encodeURIComponent(name);
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
