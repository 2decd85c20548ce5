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

// One card per tool call: nest moves each entry of a call's lifecycle
// (decision, approval, start, result) that sits at the top of list into its
// call's card, in journal order, when the card is on the page, and says
// how long after the call was asked for each step came.
const ending = /k-call-(settled|failed|rejected|uncertain|reconciled|completed|timed_out)|k-approval-(rejected|expired)|k-wake-(delivered|expired)/;
export function nest(list) {
  for (const li of list.querySelectorAll(":scope > li.e[data-call]")) {
    const card = document.getElementById("call-" + li.dataset.call);
    if (!card) continue;
    const steps = card.querySelector(".steps");
    let next = null;
    for (const s of steps.children) if (Number(s.dataset.pos) > Number(li.dataset.pos)) { next = s; break; }
    steps.insertBefore(li, next);
    const asked = new Date(card.closest("li.e").querySelector(":scope > .eh time").getAttribute("datetime"));
    const at = new Date(li.querySelector(":scope > .eh time").getAttribute("datetime"));
    li.querySelector(":scope > .eh .dur").textContent = "+" + span(at - asked);
    if (ending.test(li.className)) card.querySelector(".took").textContent = "took " + span(at - asked);
  }
}

// A raw-JSON toggle on every entry: the entry as the journal holds it,
// read when asked for.
document.addEventListener("click", async (ev) => {
  const a = ev.target.closest && ev.target.closest("a.raw");
  if (!a || ev.button !== 0 || ev.ctrlKey || ev.metaKey) return;
  ev.preventDefault();
  const head = a.closest(".eh");
  const open = head.nextElementSibling;
  if (open && open.classList.contains("json")) { open.remove(); a.setAttribute("aria-expanded", "false"); return; }
  const res = await fetch(a.href, { credentials: "same-origin" });
  const pre = document.createElement("pre");
  pre.className = "json";
  pre.textContent = res.ok ? await res.text() : "Could not read the entry: " + res.status;
  head.after(pre);
  a.setAttribute("aria-expanded", "true");
});

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

// A live transcript is a window on the journal: it keeps at most
// list.dataset.limit elements in the page (web.LiveNodes). New entries
// push the oldest out at the top; the "older" button (clicked, or scrolled
// into view) brings them back a page at a time, and pushes the newest out
// at the bottom instead: then the page stops following and offers the
// latest again.
function transcript(list) {
  const limit = Number(list.dataset.limit) || 3000;
  const run = document.getElementById("summary").dataset.run;
  const btn = document.getElementById("older"), newer = document.getElementById("newer");
  let size = list.getElementsByTagName("*").length, pending = 0;
  const weight = (el) => el.getElementsByTagName("*").length + 1;
  const setOlder = () => {
    const first = list.firstElementChild;
    const from = first ? Number(first.dataset.pos) : Number(list.dataset.last) + 1;
    btn.dataset.before = String(from);
    btn.hidden = from <= 1;
    btn.textContent = "Load older entries (before #" + from + ")";
  };
  const trimTop = () => {
    let cut = false;
    while (size > limit && list.children.length > 1) {
      size -= weight(list.firstElementChild);
      list.firstElementChild.remove();
      cut = true;
    }
    if (cut) setOlder();
  };
  const trimBottom = () => {
    while (size > limit && list.children.length > 1) {
      size -= weight(list.lastElementChild);
      list.lastElementChild.remove();
      list.dataset.detached = "1";
    }
    if (list.dataset.detached) {
      list.dataset.last = list.lastElementChild ? list.lastElementChild.dataset.pos : list.dataset.last;
      newer.hidden = false;
    }
  };
  trimTop();
  newer.addEventListener("click", () => location.reload());

  let loading = false;
  const loadOlder = async () => {
    if (loading || btn.hidden) return;
    loading = true;
    btn.disabled = true;
    try {
      const res = await fetch("/runs/" + encodeURIComponent(run) + "/older?before=" + btn.dataset.before, { credentials: "same-origin" });
      if (!res.ok) { btn.textContent = "Could not load older entries: " + res.status; return; }
      const first = list.firstElementChild;
      const y = first ? first.getBoundingClientRect().top : 0;
      const before = list.children.length;
      list.insertAdjacentHTML("afterbegin", await res.text());
      for (let i = 0, n = list.children.length - before; i < n; i++) size += weight(list.children[i]);
      nest(list);
      localTimes(list);
      if (first) window.scrollBy(0, first.getBoundingClientRect().top - y);
      trimBottom();
      setOlder();
      if (Number(res.headers.get("X-First")) <= 1) btn.hidden = true;
    } finally {
      btn.disabled = false;
      loading = false;
    }
  };
  btn.addEventListener("click", loadOlder);
  // Scrolled to the top, the reader gets the older entries without a
  // click (once the reader has scrolled: not because the page opened short).
  let scrolled = false;
  for (const kind of ["wheel", "touchmove", "keydown"]) window.addEventListener(kind, () => { scrolled = true; }, { passive: true });
  new IntersectionObserver((seen) => { if (scrolled && seen.some((e) => e.isIntersecting)) loadOlder(); }).observe(btn);

  if (list.dataset.live !== "1") return;
  const status = document.getElementById("live");
  const es = new EventSource("/runs/" + encodeURIComponent(run) + "/live?after=" + list.dataset.last);
  es.addEventListener("entry", (ev) => {
    const pos = Number(ev.lastEventId);
    if (pos <= Number(list.dataset.last)) return;
    if (list.dataset.detached) {
      pending++;
      newer.textContent = pending + " newer entries are not shown: show the latest";
      return;
    }
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    list.insertAdjacentHTML("beforeend", ev.data);
    list.dataset.last = String(pos);
    list.dataset.followed = String((Number(list.dataset.followed) || 0) + 1);
    const last = list.lastElementChild;
    const nested = !!last.dataset.call && document.getElementById("call-" + last.dataset.call);
    size += weight(last);
    nest(list);
    localTimes(nested ? nested : last);
    trimTop();
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
    const kind = last.className;
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

const list = document.getElementById("entries");
if (list) { nest(list); transcript(list); }
localTimes(document);
countdowns();
setInterval(countdowns, 1000);
const filters = document.querySelector("form.filters");
if (filters && filters.elements["created_after"]) filterTimes(filters);
const runsLive = document.getElementById("runs-live");
if (runsLive && runsLive.dataset.refresh) liveRuns(runsLive);
performance.mark("hitch-ready");
document.documentElement.dataset.ready = "1";
