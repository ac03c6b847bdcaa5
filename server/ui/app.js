// The stepcost page: lists from GET /v1/catalog, the ranked plans from
// POST /v1/plans:estimate, pictures from POST /v1/pictures:schedule and
// POST /v1/pictures:pareto. Plain JavaScript, no build step. With ?auto=1 in the
// address the form is submitted with its defaults once the catalog is loaded.
"use strict";

const $ = (id) => document.getElementById(id);

function headers() {
  const h = { "Content-Type": "application/json" };
  const token = $("token").value.trim();
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

// call POSTs (or GETs) JSON and returns the response; an error carries the
// service's message.
async function call(path, body) {
  const init = body === undefined ? { headers: headers() } : { method: "POST", headers: headers(), body: JSON.stringify(body) };
  const resp = await fetch(path, init);
  if (!resp.ok) {
    let msg = resp.status + " " + resp.statusText;
    try {
      const e = await resp.json();
      if (e && e.message) msg = e.message;
    } catch (_) { /* not JSON */ }
    throw new Error(path + ": " + msg);
  }
  return resp;
}

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

function fillSelect(select, names, preferred) {
  select.replaceChildren();
  for (const n of names) {
    const o = document.createElement("option");
    o.value = n;
    o.textContent = n;
    select.appendChild(o);
  }
  if (names.includes(preferred)) select.value = preferred;
}

function seconds(s) {
  if (!(s > 0)) return "0 s";
  if (s >= 1) return s.toFixed(3) + " s";
  if (s >= 1e-3) return (s * 1e3).toFixed(2) + " ms";
  return (s * 1e6).toFixed(1) + " µs";
}

function layoutText(l) {
  let s = `tp${l.tp || 1} pp${l.pp || 1} dp${l.dp || 1}`;
  if ((l.cp || 1) > 1) s += ` cp${l.cp}`;
  if ((l.ep || 1) > 1) s += ` ep${l.ep}`;
  if (l.etp && l.etp < (l.tp || 1)) s += ` etp${l.etp}`;
  s += ` z${l.zero || 0} mbs${l.micro_batch || 1}`;
  if (l.recompute && l.recompute !== "RECOMPUTE_NONE") s += " " + l.recompute.replace("RECOMPUTE_", "").toLowerCase();
  if (l.sp) s += " sp";
  if ((l.pp || 1) > 1 && l.schedule) s += " " + l.schedule.replace("SCHEDULE_", "").toLowerCase().replace("_", "-");
  if ((l.virtual_stages || 1) > 1) s += `×${l.virtual_stages}`;
  return s;
}

// showSVG parses an SVG answer and puts it into the container as nodes (never as
// HTML), so nothing in it is interpreted as markup of the page.
async function showSVG(container, resp) {
  const text = await resp.text();
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const root = doc.documentElement;
  if (root.nodeName !== "svg") throw new Error("the picture is not SVG");
  container.replaceChildren(document.importNode(root, true));
}

let lastRequest = null;

function jobRequest() {
  return {
    model: { name: $("model").value },
    cluster: { name: $("cluster").value },
    training: { seq_len: Number($("seq").value), global_batch: Number($("gbs").value) },
    gpus: Number($("gpus").value),
    top_k: Number($("top").value),
  };
}

async function showPlan(plan, row) {
  for (const r of $("plans").tBodies[0].rows) r.classList.remove("selected");
  row.classList.add("selected");
  $("schedule-title").textContent = `Pipeline schedule and step breakdown of plan #${plan.rank}`;
  const req = { model: lastRequest.model, cluster: lastRequest.cluster, training: lastRequest.training, layout: plan.layout };
  try {
    await showSVG($("schedule"), await call("/v1/pictures:schedule", req));
  } catch (e) {
    setStatus(e.message, true);
  }
}

async function rank(event) {
  if (event) event.preventDefault();
  const req = jobRequest();
  lastRequest = req;
  $("submit").disabled = true;
  setStatus("searching…");
  try {
    const answer = await (await call("/v1/plans:estimate", req)).json();
    const plans = answer.plans || [];
    const body = $("plans").tBodies[0];
    body.replaceChildren();
    for (const p of plans) {
      const e = p.estimate || {};
      const b = e.breakdown || {};
      const exposed = Object.values(b.exposed_comm_s || {}).reduce((a, x) => a + x, 0);
      const m = e.memory || {};
      const row = body.insertRow();
      row.className = "plan";
      for (const cell of [p.rank, p.gpus, layoutText(p.layout || {}), seconds(e.step_time_s), seconds(exposed), seconds(b.bubble_s),
        `${(m.total_gb || 0).toFixed(1)} / ${(m.capacity_gb || 0).toFixed(0)} GB`, `${(100 * ((e.throughput || {}).mfu || 0)).toFixed(1)} %`]) {
        row.insertCell().textContent = String(cell);
      }
      row.addEventListener("click", () => showPlan(p, row));
    }
    $("results").hidden = false;
    if (plans.length === 0) {
      setStatus("no feasible plan: every layout was pruned", true);
      return;
    }
    const stats = answer.stats || {};
    setStatus(`${plans.length} plans of ${stats.evaluated || 0} layouts estimated (${stats.enumerated || 0} enumerated)`);
    await Promise.all([
      showPlan(plans[0], body.rows[0]),
      call("/v1/pictures:pareto", req).then((r) => showSVG($("pareto"), r)),
    ]);
  } catch (e) {
    setStatus(e.message, true);
  } finally {
    $("submit").disabled = false;
  }
}

async function start() {
  $("job").addEventListener("submit", rank);
  try {
    const cat = await (await call("/v1/catalog")).json();
    fillSelect($("model"), (cat.models || []).map((m) => m.name).filter(Boolean), "llama3-8b");
    fillSelect($("cluster"), (cat.systems || []).map((s) => s.name).filter(Boolean), "dgx-h100");
    $("submit").disabled = false;
    setStatus("choose a job and rank its plans");
  } catch (e) {
    setStatus(e.message, true);
    return;
  }
  if (new URLSearchParams(location.search).get("auto") === "1") await rank();
}

start();
