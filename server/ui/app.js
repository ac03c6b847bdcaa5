// The stepcost page: lists from GET /v1/catalog, the ranked plans from
// POST /v1/plans:estimate, pictures from POST /v1/pictures:schedule and
// POST /v1/pictures:pareto; calibration from POST /v1/clusters:calibrate and
// POST /v1/pictures:calibration. Plain JavaScript, no build step. The form's fields
// can be given in the address (?model=llama3-70b&gpus=64&precision=fp8…); the job
// in the form is ranked as soon as the catalog is loaded (not with ?auto=0), and
// every ranked job is written back into the address so that a link reproduces it.
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

// The form's fields that travel in the page's address, by input id.
const fields = ["model", "cluster", "gpus", "seq", "gbs", "precision", "top", "objective", "price", "tokens",
  "slow_gpu", "degraded_nic", "degraded_link", "exclude"];

// numberOr0 is the number in an optional input, 0 when it is empty (the API's
// "not set").
function numberOr0(id) {
  const v = $(id).value.trim();
  return v === "" ? 0 : Number(v);
}

// jobRequest is the EstimatePlan request of the form. A field the service
// refuses comes back as its error, named; nothing is dropped here.
function jobRequest() {
  const req = {
    model: { name: $("model").value },
    cluster: { name: $("cluster").value },
    training: { seq_len: Number($("seq").value), global_batch: Number($("gbs").value), precision: $("precision").value },
    gpus: Number($("gpus").value),
    top_k: Number($("top").value),
    objective: $("objective").value,
  };
  const optional = { price_per_gpu_hour: "price", token_budget: "tokens", slow_gpu_speed: "slow_gpu",
    degraded_nic_speed: "degraded_nic", degraded_link_speed: "degraded_link" };
  for (const [key, id] of Object.entries(optional)) {
    const v = numberOr0(id);
    if (v !== 0) req[key] = v;
  }
  const ex = $("exclude").value.split(/[\s,]+/).filter(Boolean);
  if (ex.length > 0) req.exclude_nodes = ex.map(Number);
  return req;
}

// Short names for the selects' values in the address (precision=fp8).
const short = { precision: "PRECISION_", objective: "OBJECTIVE_" };

function fromAddress(params) {
  for (const id of fields) {
    const v = params.get(id);
    if (v === null) continue;
    const el = $(id);
    if (el.tagName === "SELECT") {
      const want = short[id] ? short[id] + v.toUpperCase() : v;
      if ([...el.options].some((o) => o.value === want)) el.value = want;
    } else {
      el.value = v;
    }
  }
}

function toAddress() {
  const params = new URLSearchParams();
  for (const id of fields) {
    let v = $(id).value.trim();
    if (v === "") continue;
    if (short[id]) v = v.replace(short[id], "").toLowerCase();
    params.set(id, v);
  }
  history.replaceState(null, "", "?" + params.toString());
}

// duration is the time to train the token budget at a plan's throughput.
function duration(s) {
  if (!(s > 0) || !isFinite(s)) return "–";
  if (s >= 86400) return (s / 86400).toFixed(1) + " days";
  if (s >= 3600) return (s / 3600).toFixed(1) + " h";
  return (s / 60).toFixed(1) + " min";
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
    toAddress();
    const plans = answer.plans || [];
    const tokens = req.token_budget || 0;
    const price = req.price_per_gpu_hour || 0;
    const head = ["#", "GPUs", "layout", "step time", "tokens/s/GPU", "exposed comm", "bubble", "memory / GPU", "MFU"];
    if (tokens > 0) head.push("duration");
    if (tokens > 0 && price > 0) head.push("cost");
    const headRow = $("plans").tHead.rows[0];
    headRow.replaceChildren();
    for (const h of head) {
      const th = document.createElement("th");
      th.textContent = h;
      headRow.appendChild(th);
    }
    const body = $("plans").tBodies[0];
    body.replaceChildren();
    for (const p of plans) {
      const e = p.estimate || {};
      const b = e.breakdown || {};
      const t = e.throughput || {};
      const exposed = Object.values(b.exposed_comm_s || {}).reduce((a, x) => a + x, 0);
      const m = e.memory || {};
      const row = body.insertRow();
      row.className = "plan";
      const cells = [p.rank, p.gpus, layoutText(p.layout || {}), seconds(e.step_time_s), (t.tokens_per_s_per_gpu || 0).toFixed(0),
        seconds(exposed), seconds(b.bubble_s), `${(m.total_gb || 0).toFixed(1)} / ${(m.capacity_gb || 0).toFixed(0)} GB`,
        `${(100 * (t.mfu || 0)).toFixed(1)} %`];
      // Time and cost to train the token budget at this plan's throughput: GPUs ×
      // hours × price, as the service's cost objective counts it.
      const secs = t.tokens_per_s > 0 ? tokens / t.tokens_per_s : 0;
      if (tokens > 0) cells.push(duration(secs));
      if (tokens > 0 && price > 0) cells.push("$" + Math.round(p.cost_usd || (p.gpus * price * secs) / 3600).toLocaleString("en-US"));
      for (const cell of cells) row.insertCell().textContent = String(cell);
      row.addEventListener("click", () => showPlan(p, row));
    }
    $("results").hidden = false;
    if (plans.length === 0) {
      // The answer says why (no_plan_reason); the pruning counts only if it does not.
      const pruned = Object.entries((answer.stats || {}).pruned || {}).map(([k, v]) => `${k} ${v}`).join(", ");
      setStatus(answer.no_plan_reason || "no feasible plan" + (pruned ? ": pruned " + pruned : ""), true);
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

function percent(x) {
  return (100 * (x || 0)).toFixed(1) + " %";
}

// calibrateRequest reads the chosen files as text into a CalibrateCluster request.
async function calibrateRequest() {
  const op = $("calib-op").value;
  const nodes = Number($("calib-nodes").value) || 0;
  const gpn = Number($("calib-gpn").value) || 0;
  const inputs = [];
  for (const f of $("calib-files").files) {
    const input = { name: f.name, content: await f.text() };
    if (op) input.op = op;
    if (nodes > 0) input.nodes = nodes;
    if (gpn > 0) input.gpus_per_node = gpn;
    inputs.push(input);
  }
  return { cluster: { name: $("calib-cluster").value }, inputs };
}

async function calibrateCluster(event) {
  if (event) event.preventDefault();
  $("calib-submit").disabled = true;
  setStatus("calibrating…");
  try {
    const req = await calibrateRequest();
    const answer = await (await call("/v1/clusters:calibrate", req)).json();
    const consts = $("calib-constants").tBodies[0];
    consts.replaceChildren();
    for (const k of answer.constants || []) {
      const row = consts.insertRow();
      for (const cell of [k.name, k.field, Number(k.base || 0).toPrecision(4), Number(k.fitted || 0).toPrecision(4), `${k.min}–${k.max}`]) {
        row.insertCell().textContent = String(cell);
      }
    }
    const findings = $("calib-findings");
    findings.replaceChildren();
    for (const [what, list] of [["moved far", answer.moved], ["at a bound", answer.at_bound], ["declined", answer.declined],
      ["contradiction", answer.contradictions], ["another algorithm", answer.mismatches], ["note", answer.notes]]) {
      for (const text of list || []) {
        const li = document.createElement("li");
        li.textContent = `${what}: ${text}`;
        findings.appendChild(li);
      }
    }
    const errs = $("calib-errors").tBodies[0];
    errs.replaceChildren();
    for (const e of answer.errors || []) {
      const row = errs.insertRow();
      for (const cell of [e.label, e.rows || 0, percent(e.before_median), percent(e.after_median), percent(e.before_mean), percent(e.after_mean)]) {
        row.insertCell().textContent = String(cell);
      }
    }
    $("calib-results").hidden = false;
    setStatus(`calibrated ${answer.cluster ? answer.cluster.name : ""} on ${req.inputs.length} file(s)`);
    await showSVG($("calib-picture"), await call("/v1/pictures:calibration", req));
  } catch (e) {
    setStatus(e.message, true);
  } finally {
    $("calib-submit").disabled = false;
  }
}

async function start() {
  $("job").addEventListener("submit", rank);
  $("calib").addEventListener("submit", calibrateCluster);
  try {
    const cat = await (await call("/v1/catalog")).json();
    fillSelect($("model"), (cat.models || []).map((m) => m.name).filter(Boolean), "llama3-8b");
    fillSelect($("cluster"), (cat.systems || []).map((s) => s.name).filter(Boolean), "dgx-h100");
    fillSelect($("calib-cluster"), (cat.systems || []).map((s) => s.name).filter(Boolean), "dgx-h100");
    $("objective").addEventListener("change", () => {
      const cost = $("objective").value === "OBJECTIVE_COST";
      $("price").required = cost;
      $("tokens").required = cost;
    });
    $("submit").disabled = false;
    $("calib-submit").disabled = false;
    setStatus("choose a job and rank its plans");
  } catch (e) {
    setStatus(e.message, true);
    return;
  }
  const params = new URLSearchParams(location.search);
  fromAddress(params);
  if (params.get("auto") !== "0") await rank();
}

start();
