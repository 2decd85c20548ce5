// hitch console, a session's page: the transcript followed live (each
// entry arrives rendered), the session's state and its queue refreshed as
// the session moves, and older entries loaded on demand. A queued
// message being edited is never replaced under the user's hands.

import { localTimes } from "./console.js";

const chat = document.getElementById("chat");
const id = chat.dataset.session;
const live = document.getElementById("slive");
const base = "/sessions/" + encodeURIComponent(id);

function atBottom(el) {
  return el.scrollHeight - el.scrollTop - el.clientHeight < 40;
}

// busy reports whether the user is working in a queued message's forms:
// its text changed, or the focus is inside it.
function busy(li) {
  if (li.contains(document.activeElement)) return true;
  for (const t of li.querySelectorAll("textarea")) if (t.value !== t.defaultValue) return true;
  return false;
}

// The running turn's steps (its model replies, tool results, steers)
// follow its run's live transcript, in a panel at the end of the chat;
// when the turn ends the panel folds and its answer follows it.
const steps = ["k-model-reply", "k-call-settled", "k-call-failed", "k-call-rejected", "k-call-uncertain", "k-session-steered", "k-run-waiting", "k-approval-"];
let turn = null;

// add puts a session entry in the chat. The session's journal orders the
// turns: a turn's steps start after its "working on" line, and its answer
// (or abort) follows them; what comes meanwhile goes before them.
function add(html) {
  const t = document.createElement("template");
  t.innerHTML = html;
  const e = t.content.firstElementChild;
  if (!e) return;
  if (e.classList.contains("k-submission-ended")) endTurn();
  const stick = atBottom(chat);
  if (turn) turn.li.before(e);
  else chat.append(e);
  localTimes(chat);
  if (stick) chat.scrollTop = chat.scrollHeight;
  if (e.classList.contains("k-submission-started")) watchTurn(e.dataset.run, 0);
}

// still marks a turn's steps complete: its run has ended.
function still(t) {
  t.es.close();
  t.li.querySelector("summary").textContent = "steps of run " + t.run;
  t.li.classList.remove("live");
}

function endTurn() {
  if (!turn) return;
  still(turn);
  turn.li.querySelector("details").open = false;
  turn = null;
}

function watchTurn(run, after) {
  if (turn && turn.run === run) return;
  endTurn();
  if (!run) return;
  const li = document.createElement("li");
  li.className = "se turn live";
  li.innerHTML = "<details open><summary></summary><ol></ol></details>";
  li.querySelector("summary").textContent = "steps of run " + run + ", live";
  const stick = atBottom(chat);
  chat.append(li);
  if (stick) chat.scrollTop = chat.scrollHeight;
  const list = li.querySelector("ol");
  const es = new EventSource("/runs/" + encodeURIComponent(run) + "/live?after=" + (after || 0));
  turn = { run, es, li };
  es.addEventListener("entry", (ev) => {
    const t = document.createElement("template");
    t.innerHTML = ev.data;
    const e = t.content.firstElementChild;
    if (!e || !steps.some((k) => e.className.includes(k))) return;
    const stick = atBottom(chat);
    list.append(e);
    localTimes(list);
    if (stick) chat.scrollTop = chat.scrollHeight;
  });
  const me = turn;
  es.addEventListener("end", () => still(me));
  es.addEventListener("failed", () => still(me));
}

let refreshing = false, again = false;

// refresh replaces the state line and the queue with the page as it now
// stands, keeping every queued message the user is editing.
async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    const res = await fetch(base, { credentials: "same-origin" });
    if (!res.ok) return;
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const state = doc.getElementById("ses-state"), cur = document.getElementById("ses-state");
    if (state && cur) cur.replaceWith(state);
    const fresh = doc.getElementById("queue"), queue = document.getElementById("queue");
    if (!fresh || !queue) return;
    const kept = new Map();
    for (const li of queue.querySelectorAll("li[data-id]")) if (busy(li)) kept.set(li.dataset.id, li);
    const items = [];
    for (const li of fresh.children) {
      const mine = kept.get(li.dataset.id);
      if (mine) { items.push(mine); kept.delete(li.dataset.id); } else items.push(li);
    }
    // A message being edited that left the queue stays, marked: saving
    // it is refused, and the refusal keeps the text.
    for (const li of kept.values()) {
      if (!li.querySelector(".gone")) {
        const p = document.createElement("p");
        p.className = "gone msg err";
        p.textContent = "This message no longer waits (it started or was removed): it can no longer be edited.";
        li.prepend(p);
      }
      items.push(li);
    }
    // The "nothing waits" line goes when a message is kept.
    queue.replaceChildren(...(items.length > 1 ? items.filter((li) => li.dataset.id) : items));
    localTimes(document);
  } finally {
    refreshing = false;
    if (again) { again = false; refresh(); }
  }
}

function follow() {
  const es = new EventSource(base + "/live?after=" + chat.dataset.last);
  es.addEventListener("entry", (ev) => {
    const pos = Number(ev.lastEventId);
    if (pos <= Number(chat.dataset.last)) return;
    add(ev.data);
    chat.dataset.last = String(pos);
    refresh();
  });
  es.addEventListener("failed", (ev) => {
    es.close();
    live.textContent = "The live transcript stopped: " + ev.data + ". Reload to resume.";
  });
  es.onerror = () => { live.textContent = "Reconnecting…"; };
  es.onopen = () => { live.textContent = "Following the session live."; document.body.dataset.live = "1"; };
}

const older = document.getElementById("sold");
if (older) {
  older.addEventListener("click", async () => {
    older.disabled = true;
    const res = await fetch(base + "/older?before=" + older.dataset.before, { credentials: "same-origin" });
    older.disabled = false;
    if (!res.ok) { older.textContent = "Could not load older entries: " + res.status; return; }
    const first = chat.firstElementChild;
    const y = first ? first.offsetTop - chat.scrollTop : 0;
    chat.insertAdjacentHTML("afterbegin", await res.text());
    localTimes(chat);
    if (first) chat.scrollTop = first.offsetTop - y;
    const from = Number(res.headers.get("X-First"));
    if (from <= 1) { older.remove(); return; }
    older.dataset.before = String(from);
    older.textContent = "Load older entries (before #" + from + ")";
  });
}

// Ctrl+Enter (or Cmd+Enter) sends; after a send the composer has the focus
// again, for the next message.
const msg = document.getElementById("msg"); // absent for a role that may not send
if (msg) {
  msg.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); msg.form.requestSubmit(); }
  });
  if (location.hash === "#composer") msg.focus({ preventScroll: true });
}

chat.scrollTop = chat.scrollHeight;
watchTurn(chat.dataset.run, Number(chat.dataset.runAfter));
follow();
