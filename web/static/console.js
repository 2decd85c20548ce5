// hitch console: the little the pages need beyond HTML. Timestamps in the
// viewer's zone, approval deadlines counting down, a run's transcript
// followed live (server-sent events carry each entry already rendered),
// older entries loaded on demand, and the runs list kept current. No
// library, no build step.

const fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function localTimes(root) {
  for (const t of root.querySelectorAll("time[datetime]:not([data-local])")) {
    const d = new Date(t.getAttribute("datetime"));
    if (isNaN(d)) continue;
    t.title = t.textContent;
    t.textContent = fmt.format(d);
    t.dataset.local = "1";
  }
}

// span says a duration as the server's pages do: "6 days 23 h",
// "3 h 12 min", "4 min 10 s", "2.5 s", "800 ms".
export function span(ms) {
  ms = Math.abs(ms);
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = Math.floor(ms / 1000);
  if (s < 60) return (ms / 1000).toFixed(1) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  const d = Math.floor(s / 86400);
  return d + (d === 1 ? " day " : " days ") + Math.floor((s % 86400) / 3600) + " h";
}

function countdowns() {
  const now = Date.now();
  for (const t of document.querySelectorAll("time[data-countdown]")) {
    const left = new Date(t.getAttribute("datetime")) - now;
    const s = left > 0 ? "in " + span(left) : "expired " + span(left) + " ago";
    let rel = t.nextElementSibling;
    if (!rel || !rel.classList.contains("left")) {
      rel = document.createElement("span");
      rel.className = "left hint";
      t.after(" ", rel);
    }
    rel.textContent = "(" + s + ")";
  }
}

// refreshPanels replaces the run's summary and actions with the page as
// it now stands, after the run parks or ends.
async function refreshPanels() {
  const res = await fetch(location.pathname, { credentials: "same-origin" });
  if (!res.ok) return;
  const doc = new DOMParser().parseFromString(await res.text(), "text/html");
  for (const id of ["summary", "actions", "context"]) {
    const fresh = doc.getElementById(id), cur = document.getElementById(id);
    if (fresh && cur) cur.replaceWith(fresh);
  }
  localTimes(document);
  countdowns();
}

function follow(list) {
  const run = document.getElementById("summary").dataset.run;
  const status = document.getElementById("live");
  const es = new EventSource("/runs/" + encodeURIComponent(run) + "/live?after=" + list.dataset.last);
  es.addEventListener("entry", (ev) => {
    const pos = Number(ev.lastEventId);
    if (pos <= Number(list.dataset.last)) return;
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    list.insertAdjacentHTML("beforeend", ev.data);
    list.dataset.last = String(pos);
    localTimes(list.lastElementChild.parentNode);
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
    const kind = list.lastElementChild.className;
    if (kind.includes("k-run-waiting") || kind.includes("k-call-reconciled") || kind.includes("k-approval-") || kind.includes("k-model-reply")) refreshPanels();
  });
  es.addEventListener("end", () => {
    es.close();
    status.textContent = "The run has ended.";
    document.body.dataset.ended = "1";
    refreshPanels();
  });
  es.addEventListener("failed", (ev) => {
    es.close();
    status.textContent = "The live transcript stopped: " + ev.data + ". Reload to resume.";
  });
  es.onerror = () => { status.textContent = "Reconnecting…"; };
  es.onopen = () => { status.textContent = "Following the run live…"; };
}

function older(btn) {
  btn.addEventListener("click", async () => {
    const run = document.getElementById("summary").dataset.run;
    btn.disabled = true;
    const res = await fetch("/runs/" + encodeURIComponent(run) + "/older?before=" + btn.dataset.before, { credentials: "same-origin" });
    btn.disabled = false;
    if (!res.ok) { btn.textContent = "Could not load older entries: " + res.status; return; }
    const list = document.getElementById("entries");
    const first = list.firstElementChild;
    const y = first ? first.getBoundingClientRect().top : 0;
    list.insertAdjacentHTML("afterbegin", await res.text());
    localTimes(list);
    if (first) window.scrollBy(0, first.getBoundingClientRect().top - y);
    const from = Number(res.headers.get("X-First"));
    if (from <= 1) { btn.remove(); return; }
    btn.dataset.before = String(from);
    btn.textContent = "Load older entries (before #" + from + ")";
  });
}

// filterTimes shows the runs filter's time window in the viewer's zone,
// and sends it as RFC 3339 in UTC; empty fields are left out of the URL.
function filterTimes(form) {
  const pad = (n) => String(n).padStart(2, "0");
  const local = (d) => d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
  const pairs = [["from", "created_after"], ["to", "created_before"]];
  for (const [vis] of pairs) {
    const el = form.elements[vis], d = new Date(el.dataset.utc);
    if (el.dataset.utc && !isNaN(d)) el.value = local(d);
  }
  form.addEventListener("submit", () => {
    for (const [vis, hid] of pairs) {
      const v = form.elements[vis].value, d = new Date(v);
      form.elements[hid].value = v && !isNaN(d) ? d.toISOString() : "";
    }
    for (const el of form.elements) {
      if (el.name && (el.value === "" || el.name === "from" || el.name === "to")) el.disabled = true;
    }
  });
  window.addEventListener("pageshow", () => { for (const el of form.elements) el.disabled = false; });
}

// liveRuns reads the first page of the runs list again every few seconds
// while it is shown, and puts in what changed: the counts, rows whose
// status or length moved, and new runs. A row that did not change is left
// alone (and keeps the focus); one request at a time, none while hidden,
// and a slow answer (a text filter over many runs) spaces the next out to
// five times its own time.
function liveRuns(box) {
  const every = Number(box.dataset.refresh);
  let busy = false, timer = 0;
  const tick = async () => {
    if (busy || document.hidden) return;
    busy = true;
    clearTimeout(timer);
    const t0 = performance.now();
    try {
      const res = await fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (!res.ok || res.redirected) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("runs-live");
      if (!fresh) return;
      const counts = fresh.querySelector("#counts"), cur = box.querySelector("#counts");
      if (counts && cur && counts.innerHTML !== cur.innerHTML) cur.replaceWith(counts);
      const rows = fresh.querySelector("#run-rows"), body = box.querySelector("#run-rows");
      const ids = (tb) => Array.from(tb.rows, (r) => r.dataset.run).join("\n");
      if (rows && body && ids(rows) === ids(body)) {
        for (const r of Array.from(rows.rows)) {
          const old = body.querySelector('tr[data-run="' + CSS.escape(r.dataset.run) + '"]');
          if (old && old.dataset.sig !== r.dataset.sig) old.replaceWith(r);
        }
      } else {
        const focus = document.activeElement && document.activeElement.getAttribute("href");
        box.querySelector("#runs-body").replaceWith(fresh.querySelector("#runs-body"));
        if (focus) { const again = box.querySelector('a[href="' + CSS.escape(focus) + '"]'); if (again) again.focus(); }
      }
      localTimes(box);
      box.dataset.refreshed = String((Number(box.dataset.refreshed) || 0) + 1);
    } catch (e) {
      // A failed read is tried again at the next tick.
    } finally {
      busy = false;
      timer = setTimeout(tick, Math.max(every, 5 * (performance.now() - t0)));
    }
  };
  timer = setTimeout(tick, every);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });
}

localTimes(document);
countdowns();
setInterval(countdowns, 1000);
const list = document.getElementById("entries");
if (list && list.dataset.live === "1") follow(list);
const btn = document.getElementById("older");
if (btn) older(btn);
const filters = document.querySelector("form.filters");
if (filters && filters.elements["created_after"]) filterTimes(filters);
const runsLive = document.getElementById("runs-live");
if (runsLive && runsLive.dataset.refresh) liveRuns(runsLive);
performance.mark("hitch-ready");
document.documentElement.dataset.ready = "1";
