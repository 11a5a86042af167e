// The operator console: status from /api/status, live events from /api/events (SSE),
// controls posted to /api/command (the same commands as MQTT). No framework, no CDN.
"use strict";
const $ = (id) => document.getElementById(id);
const SERIES = ["transcript_s", "first_token_s", "first_audio_s"];
const PLOT_TURNS = 50;
const turns = new Map();  // turn_id -> timings, in arrival order (the plot's points)
let sayLine = null;       // the robot line of a `say` (speech with no turn) being spoken

function setState(state) {
  $("state").textContent = state;
  $("state").dataset.state = state;
}

function line(kind, key, who) {
  let li = key && document.querySelector(`#transcript li.${kind}[data-key="${key}"]`);
  if (!li) {
    li = document.createElement("li");
    li.className = kind;
    if (key) li.dataset.key = key;
    li.innerHTML = `<span class="who"></span><span class="text"></span>`;
    li.querySelector(".who").textContent = who;
    $("transcript").append(li);
    li.scrollIntoView({block: "nearest"});
  }
  return li;
}

function onEvent(e) {
  switch (e.kind) {
    case "state": setState(e.state); break;
    case "transcript":
      line("customer", e.turn_id, "Customer").querySelector(".text").textContent = e.text;
      break;
    case "speech": {
      let li;
      if (e.turn_id) li = line("robot", e.turn_id, "Robot");
      else {
        if (e.index === 0 || !sayLine) sayLine = line("robot", null, "Robot (said)");
        li = sayLine;
      }
      const text = li.querySelector(".text");
      text.textContent = (e.index === 0 ? "" : text.textContent + " ") + e.text;
      break;
    }
    case "turn": {
      const li = line("robot", e.turn_id, "Robot");
      li.querySelector(".text").textContent = e.reply_text;
      li.classList.toggle("interrupted", !!e.interrupted);
      addTurn(e);
      refresh();  // the profile may have learnt something from the customer's words
      break;
    }
    case "error":
      line("error", null, `${e.source} error`).querySelector(".text").textContent = e.message;
      break;
    case "memory": refresh(); break;
    case "handover":  // a member of staff is called: to book, or for a question the files cannot answer
      line("error", null, "Staff needed").querySelector(".text").textContent = `a visitor asked: ${e.question}`;
      if (e.sheet) showSheet(e.sheet);
      break;
    case "forgotten":  // what was said goes from the page too (the robot replays none of it)
      document.querySelectorAll("#transcript li.customer, #transcript li.robot").forEach((li) => li.remove());
      sayLine = null;
      line("note", null, "Memory").querySelector(".text").textContent =
        `${e.visitor} forgotten (asked by the ${e.by}); the transcript before it is cleared`;
      refresh();
      break;
  }
}

// The consultation sheet a handover carries (robot/consult/sheet.py), as a card staff read at a
// glance and can print. Every value is set as text: a visitor's words are never markup.
function showSheet(sheet) {
  const card = $("sheet-card");
  $("sheet-reason").textContent = `Why: ${sheet.reason}`;
  const facts = $("sheet-facts");
  facts.replaceChildren();
  for (const [label, value] of [["Visitor", sheet.name || sheet.visitor], ["Party", sheet.party],
                                ["Dates", (sheet.dates || []).join(", ")], ["Needs", (sheet.needs || []).join(", ")]]) {
    if (!value) continue;
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = label; dd.textContent = value;
    facts.append(dt, dd);
  }
  const body = $("sheet-plan").querySelector("tbody");
  body.replaceChildren();
  for (const item of sheet.plan || []) {
    const tr = document.createElement("tr"), name = document.createElement("td"), price = document.createElement("td");
    name.textContent = item.offer;
    price.textContent = item.total || "price not in the files";
    if (item.lines && item.lines.length) price.title = item.lines.join("\n");
    tr.append(name, price);
    body.append(tr);
  }
  $("sheet-total").textContent = sheet.total || "—";
  const open = $("sheet-open");
  open.replaceChildren();
  for (const q of sheet.open || []) {
    const li = document.createElement("li");
    li.textContent = `Open: ${q}`;
    open.append(li);
  }
  card.hidden = false;
}

function addTurn(e) {
  turns.delete(e.turn_id);
  turns.set(e.turn_id, e.timings);
  while (turns.size > PLOT_TURNS) turns.delete(turns.keys().next().value);
  drawPlot();
}

function drawPlot() {
  const svg = $("plot"), W = 420, H = 180, L = 28, B = 16, T = 8, R = 8;
  const rows = [...turns.entries()];
  const top = Math.max(1, ...rows.flatMap(([, t]) => SERIES.map((s) => t[s] || 0)));
  const x = (i) => L + (rows.length < 2 ? (W - L - R) / 2 : i * (W - L - R) / (rows.length - 1));
  const y = (v) => H - B - (v / top) * (H - B - T);
  const ns = "http://www.w3.org/2000/svg";
  const el = (name, attrs, text) => {
    const node = document.createElementNS(ns, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
  };
  svg.replaceChildren();
  el("line", {class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B});
  el("line", {class: "axis", x1: L, y1: T, x2: L, y2: H - B});
  el("text", {x: 2, y: T + 8}, top.toFixed(1));
  el("text", {x: 2, y: H - B}, "0");
  el("text", {x: L, y: H - 3}, rows.length ? rows[0][0] : "no turns yet");
  if (rows.length > 1) el("text", {x: W - R - 20, y: H - 3}, rows[rows.length - 1][0]);
  for (const s of SERIES) {
    const pts = rows.map(([, t], i) => [i, t[s]]).filter(([, v]) => v != null);
    el("polyline", {class: s, points: pts.map(([i, v]) => `${x(i)},${y(v)}`).join(" ")});
    for (const [i, v] of pts) {
      el("circle", {class: `pt ${s}`, cx: x(i), cy: y(v), r: 2.5, "data-turn": rows[i][0]});
    }
  }
}

async function refresh() {
  const r = await fetch("/api/status");
  if (!r.ok) { $("link").textContent = `status ${r.status}`; return; }
  const s = await r.json();
  setState(s.state);
  $("muted").hidden = !s.muted;
  $("persona-name").textContent = `${s.persona.name} (${s.persona.file || "no file"})`;
  const list = $("persona-list");
  if (list.options.length !== s.personas.length) {
    list.replaceChildren(...s.personas.map((p) => new Option(p, p)));
  }
  const m = s.memory;
  const session = s.session;
  $("user").textContent = session && !session.open ? "(no visitor)" : m.user;
  $("session-turns").textContent = session && session.open ? `${session.turns} turns` : "";
  $("end-session").disabled = !(session && session.open);
  $("forget").disabled = !m.can_forget;
  $("prompt-version").textContent = m.role_prompt_version ?? "-";
  $("summary-version").textContent = m.summary_version;
  $("role-prompt").textContent = m.role_prompt || "";
  showProfile(m.profile || []);
  $("mqtt").textContent = !s.mqtt ? "off" : (s.mqtt.connected ? "connected" : "disconnected")
    + `; ${s.mqtt.reconnects} reconnects, ${s.mqtt.queued} queued, ${s.mqtt.dropped} dropped`
    + (s.mqtt.last_error && !s.mqtt.connected ? `; last error: ${s.mqtt.last_error}` : "");
  for (const t of s.turns) if (!turns.has(t.turn_id)) addTurn(t);
}

// What the robot knows of the visitor (the persona's profile slots): label, values.
function showProfile(lines) {
  $("profile").replaceChildren(...lines.flatMap(([label, values]) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = label;
    dd.textContent = values;
    return [dt, dd];
  }));
  $("profile-none").hidden = lines.length > 0;
}

async function command(body) {
  const answer = $("answer");
  answer.className = "answer";
  answer.textContent = `${body.command}…`;
  const r = await fetch("/api/command", {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
  });
  const result = await r.json().catch(() => ({error: `HTTP ${r.status}`}));
  answer.classList.toggle("bad", !r.ok);
  answer.textContent = r.ok ? `${body.command}: ${result.detail}` : `${body.command} refused: ${result.error}`;
  refresh();
}

$("say-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("say-text").value.trim();
  if (text) command({command: "say", text});
});
$("stop").onclick = () => command({command: "stop"});
$("mute").onclick = () => command({command: "mute"});
$("unmute").onclick = () => command({command: "unmute"});
$("persona").onclick = () => command({command: "persona", path: $("persona-list").value});
$("end-session").onclick = () => command({command: "session/end"});
$("forget").onclick = () => {
  const user = $("user").textContent;
  if (confirm(`Delete everything the robot remembers of "${user}"?`)) command({command: "forget", user});
};

const stream = new EventSource("/api/events");
stream.onopen = () => { $("link").textContent = "live"; };
stream.onerror = () => { $("link").textContent = "reconnecting…"; };
stream.onmessage = (m) => onEvent(JSON.parse(m.data));
refresh();
setInterval(refresh, 3000);
drawPlot();
$("print-sheet").addEventListener("click", () => window.print());
