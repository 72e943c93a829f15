// kvplan's calculator: reads the form, asks the JSON API (POST api/estimate), draws the answer as inline SVG.
// No libraries and nothing from another origin: the page works offline, where kvplan does. The inputs live in the
// address bar (?model=...&seq=...), so a copied link reproduces the answer.
"use strict";

const FIELDS = ["model", "gpu", "gpus", "engine", "engine_version", "seq", "batch", "kv_dtype", "dtype"];
const DEFAULTS = { model: "llama-3.1-8b", gpu: "h100-sxm-80gb", gpus: "1", engine: "vllm", engine_version: "",
                   seq: "32K", batch: "8", kv_dtype: "auto", dtype: "" };
const SVG = "http://www.w3.org/2000/svg";
const GiB = 1024 ** 3;
const $ = (id) => document.getElementById(id);
let models = new Map();   // name -> entry of GET api/models
let generation = 0;       // the newest question: older answers are dropped when they arrive late
let timer = null;

// ------------------------------------------------------------------ the address bar

function encodeConfig(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  bytes.forEach((b) => { bin += String.fromCharCode(b); });
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeConfig(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

function readAddress() {
  const params = new URLSearchParams(location.search);
  for (const name of FIELDS) {
    const value = params.has(name) ? params.get(name) : DEFAULTS[name];
    const field = $(name);
    if (field.tagName === "SELECT" && value && ![...field.options].some((o) => o.value === value)) {
      field.add(new Option(value, value));  // a GPU alias from a link: kept as given
    }
    field.value = value;
  }
  if (params.has("config")) {
    try { $("config").value = decodeConfig(params.get("config")); $("config-box").open = true; } catch (e) { /* a bad link */ }
  }
}

function writeAddress() {
  const params = new URLSearchParams();
  for (const name of FIELDS) {
    const value = $(name).value.trim();
    if (value !== DEFAULTS[name]) params.set(name, value);
  }
  const config = $("config").value.trim();
  if (config) params.set("config", encodeConfig(config));
  const query = params.toString();
  history.replaceState(null, "", query ? `?${query}` : location.pathname);
}

// ------------------------------------------------------------------ the question

function question(overrides = {}) {
  const body = { engine: $("engine").value, seq: $("seq").value.trim(), batch: Number($("batch").value),
                 gpu: $("gpu").value, gpus: Number($("gpus").value), kv_dtype: $("kv_dtype").value };
  const config = $("config").value.trim();
  if (config) {
    body.config = JSON.parse(config);  // a syntax error is shown by ask()
  } else {
    body.model = $("model").value.trim();
  }
  if ($("dtype").value) body.dtype = $("dtype").value;
  if ($("engine_version").value.trim() && body.engine !== "static") body.engine_version = $("engine_version").value.trim();
  return Object.assign(body, overrides);
}

async function estimate(body) {
  const response = await fetch("api/estimate", { method: "POST", headers: { "Content-Type": "application/json" },
                                                 body: JSON.stringify(body) });
  const data = await response.json();
  return { ok: response.ok, data };
}

async function ask() {
  const mine = ++generation;
  writeAddress();
  $("verdict").className = "verdict pending";
  $("verdict").textContent = "Working…";
  let body;
  try {
    body = question();
  } catch (err) {
    return showError({ error: { where: "config.json", what: `is not JSON: ${err.message}`, hint: null }, exit_code: 2 });
  }
  let answer;
  try {
    answer = await estimate(body);
  } catch (err) {
    return showError({ error: { where: "api/estimate", what: "no answer from the server", hint: String(err) }, exit_code: 2 });
  }
  if (mine !== generation) return;
  if (!answer.ok) return showError(answer.data);
  $("error").hidden = true;
  $("curve").dataset.state = "drawing";  // until the curve of this answer is drawn (tests and screenshots wait on it)
  show(answer.data, body);
  await drawCurve(body, answer.data, mine);
}

// ------------------------------------------------------------------ the answer

function gib(bytes) { return `${(bytes / GiB).toFixed(2)} GiB`; }
function count(n) { return Number(n).toLocaleString("en-US"); }

function showError(data) {
  const e = data.error || {};
  $("verdict").className = "verdict " + (data.exit_code === 3 ? "unknown" : "no");
  $("verdict").textContent = data.exit_code === 3 ? "kvplan cannot judge this" : "Cannot answer: check the inputs";
  const box = $("error");
  box.hidden = false;
  box.textContent = `${e.where ? e.where + " — " : ""}${e.what || "error"}${e.hint ? " (" + e.hint + ")" : ""}`;
  for (const id of ["figures", "waterfall", "curve", "fixes"]) $(id).replaceChildren();
  $("waterfall-desc").textContent = "";
  $("curve-desc").textContent = "";
  $("launch").value = "";
  $("cli").textContent = "";
}

function verdictText(r) {
  const shape = `${r.batch} × ${count(r.seq)} tokens`;
  if (r.starts === false) return { cls: "no", text: `Does not start: ${r.model} on ${r.gpus || 1} × ${r.gpu}` };
  if (r.fits === true) {
    return { cls: "fits", text: `Fits: ${shape} on ${r.gpus || 1} × ${r.gpu}` +
                                 (r.marginal ? " (only inside the budget's error band)" : "") };
  }
  if (r.fits === false) return { cls: "no", text: `Does not fit: ${shape} on ${r.gpus || 1} × ${r.gpu}` };
  return { cls: "unknown", text: "No GPU given: sizes only" };
}

function show(r, body) {
  const v = verdictText(r);
  $("verdict").className = `verdict ${v.cls}`;
  $("verdict").textContent = v.text;
  const figures = [
    ["KV per token", `${count(r.kv_bytes_per_token)} B`],
    ["Cache for the request", gib(r.cache_bytes)],
    ["Weights", gib(r.weights_bytes)],
    ["Most sequences at this length", r.max_batch == null ? "—" : count(r.max_batch)],
    ["Longest context at this batch", r.max_seq == null ? "—" : `${count(r.max_seq)} tokens`],
  ];
  if (r.max_concurrency != null) figures.push(["Engine's max concurrency", `${Number(r.max_concurrency).toFixed(2)}×`]);
  if (r.kv_cache_tokens != null) figures.push(["KV pool", `${count(r.kv_cache_tokens)} tokens`]);
  $("figures").replaceChildren(...figures.map(([k, val]) => {
    const div = document.createElement("div");
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k; dd.textContent = val;
    div.append(dt, dd);
    return div;
  }));
  drawWaterfall(r);
  const fixes = (r.suggestions || []).slice();
  if (!fixes.length) fixes.push(r.fits === false ? "No single change found: try more GPUs, fp8 KV, or a shorter length."
                                                 : "None needed.");
  $("fixes").replaceChildren(...fixes.map((text) => {
    const li = document.createElement("li");
    li.textContent = text;
    return li;
  }));
  const launch = $("launch");
  launch.value = launchCommand(r, body);
  launch.style.height = "auto";  // the whole command in view, however narrow the screen (CSSOM: allowed by the CSP)
  launch.style.height = `${launch.scrollHeight + 4}px`;
  $("cli").textContent = kvplanCommand(body);
  $("copied").textContent = "";
}

// ------------------------------------------------------------------ the charts

// charts are drawn in the units of their width on screen, so their text stays 13 px on a phone as on a desktop
function drawnWidth(svg) {
  const shown = Math.round(svg.getBoundingClientRect().width);
  return shown >= 300 ? Math.min(shown, 960) : 640;
}

function el(name, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  return node;
}

// The budget of the most loaded GPU, top to bottom: what the GPU has, what the engine keeps back, the weights, the
// engine's own overheads, the KV pool left, and what this request's cache needs (the whole cache over the GPUs).
function budgetRows(r, narrow) {
  const g = r.per_gpu;
  if (!g) return [];
  const cap = g.capacity_bytes, usable = g.usable_bytes, weights = g.weights_bytes;
  const pool = r.available_kv_bytes != null ? r.available_kv_bytes : Math.max(usable - weights, 0);
  const overhead = Math.max(usable - weights - pool, 0);
  const need = r.cache_bytes / Math.max((r.tp || 1) * (r.pp || 1), 1);
  return [
    { label: "GPU memory", from: 0, to: cap, fill: "#8c959f" },
    { label: "kept back", from: usable, to: cap, fill: "#afb8c1" },
    { label: "weights", from: usable - weights, to: usable, fill: "#6e7781" },
    { label: narrow ? "overheads" : "engine overheads", from: pool, to: pool + overhead, fill: "#bf8700" },
    { label: "KV pool", from: 0, to: pool, fill: "#0b5cad" },
    { label: "this request", from: 0, to: need, fill: need <= pool ? "#1a7f37" : "#cf222e" },
  ];
}

function drawWaterfall(r) {
  const svg = $("waterfall");
  svg.replaceChildren();
  const rows = budgetRows(r, drawnWidth(svg) < 480);
  if (!rows.length) {
    svg.append(el("text", { x: 12, y: 30 }, "Give a GPU to see its budget."));
    $("waterfall-desc").textContent = "";
    return;
  }
  const width = drawnWidth(svg), left = width < 480 ? 112 : 130, right = width < 480 ? 78 : 96, top = 10, rowH = 36;
  const scale = Math.max(...rows.map((x) => x.to), 1);
  const x = (b) => left + (Math.max(b, 0) / scale) * (width - left - right);
  svg.setAttribute("viewBox", `0 0 ${width} ${top + rows.length * rowH + 8}`);
  rows.forEach((row, i) => {
    const y = top + i * rowH;
    svg.append(el("text", { x: left - 8, y: y + 21, "text-anchor": "end" }, row.label));
    svg.append(el("rect", { x: x(row.from), y: y + 6, width: Math.max(x(row.to) - x(row.from), 1), height: 22,
                            fill: row.fill, rx: 3 }));
    svg.append(el("text", { x: x(row.to) + 6, y: y + 21, class: "muted" }, gib(row.to - row.from)));
  });
  const pool = rows[4].to, need = rows[5].to;
  $("waterfall-desc").textContent = `Per GPU: ${gib(rows[0].to)} in all, ${gib(rows[1].to - rows[1].from)} kept back, ` +
    `${gib(rows[2].to - rows[2].from)} of weights, ${gib(rows[3].to - rows[3].from)} of engine overheads, ` +
    `a KV pool of ${gib(pool)}; the request's cache needs ${gib(need)}.`;
}

function curveLengths(maxContext) {
  const top = Math.max(maxContext || 131072, 2048);
  const out = [];
  for (let n = 1024; n < top && out.length < 9; n *= 2) out.push(n);
  out.push(top);
  return out;
}

async function drawCurve(body, r, mine) {
  const entry = models.get(r.model) || models.get(body.model);
  const lengths = curveLengths((entry && entry.max_context) || r.max_context);
  const answers = await Promise.all(lengths.map((n) => estimate({ ...body, seq: n, batch: 1 })
    .then((a) => (a.ok ? a.data.max_batch : null)).catch(() => null)));
  if (mine !== generation) return;
  const points = lengths.map((n, i) => [n, answers[i]]).filter(([, m]) => m != null);
  const svg = $("curve");
  svg.replaceChildren();
  svg.dataset.state = "drawn";
  if (!points.length) {
    svg.append(el("text", { x: 12, y: 30 }, "Give a GPU to see how many sequences fit."));
    $("curve-desc").textContent = "";
    return;
  }
  const width = drawnWidth(svg), height = 260, left = 52, right = 18, top = 14, bottom = 44;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const lx = (n) => Math.log2(n);
  const x0 = lx(points[0][0]), x1 = lx(points[points.length - 1][0]);
  const yMax = Math.max(...points.map(([, m]) => m), 1);
  const px = (n) => left + ((lx(n) - x0) / Math.max(x1 - x0, 1)) * (width - left - right);
  const py = (m) => top + (1 - m / yMax) * (height - top - bottom);
  for (let k = 0; k <= 4; k++) {
    const m = Math.round((yMax * k) / 4);
    svg.append(el("line", { x1: left, x2: width - right, y1: py(m), y2: py(m), class: "grid" }));
    svg.append(el("text", { x: left - 6, y: py(m) + 4, "text-anchor": "end", class: "muted" }, count(m)));
  }
  const every = Math.ceil(38 / Math.max((width - left - right) / Math.max(points.length - 1, 1), 1));
  points.forEach(([n], i) => {
    if (i % every !== 0 && i !== points.length - 1) return;  // labels 38 px apart at least: none overlaps on a phone
    svg.append(el("text", { x: px(n), y: height - bottom + 18, "text-anchor": "middle", class: "muted" },
                  n >= 1024 ? `${Math.round(n / 1024)}K` : String(n)));
  });
  svg.append(el("text", { x: (left + width) / 2, y: height - 6, "text-anchor": "middle" }, "tokens per sequence"));
  svg.append(el("line", { x1: left, x2: left, y1: top, y2: height - bottom, class: "axis" }));
  svg.append(el("line", { x1: left, x2: width - right, y1: height - bottom, y2: height - bottom, class: "axis" }));
  svg.append(el("polyline", { points: points.map(([n, m]) => `${px(n)},${py(m)}`).join(" "), class: "curve" }));
  points.forEach(([n, m]) => {
    const dot = el("circle", { cx: px(n), cy: py(m), r: 4, class: "point" });
    dot.append(el("title", {}, `${count(n)} tokens: ${count(m)} sequences`));
    svg.append(dot);
  });
  if (r.seq >= points[0][0] && r.seq <= points[points.length - 1][0]) {
    svg.append(el("line", { x1: px(r.seq), x2: px(r.seq), y1: top, y2: height - bottom, class: "here" }));
  }
  $("curve-desc").textContent = "Most sequences that fit at once: " +
    points.map(([n, m]) => `${count(m)} at ${count(n)} tokens`).join(", ") + ` (dashed: ${count(r.seq)} tokens).`;
}

// ------------------------------------------------------------------ the commands to copy

function quote(word) { return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`; }

function servedName(r, body) {
  if (body.config) return quote(body.config._name_or_path || "MODEL_FOLDER");
  const entry = models.get(r.model);
  const hub = entry && entry.aliases.find((a) => a.includes("/"));
  return quote(hub || body.model);
}

function launchCommand(r, body) {
  const tp = String(r.tp || body.gpus || 1), seq = String(r.seq), batch = String(r.batch);
  const kv = body.kv_dtype !== "auto" ? body.kv_dtype : null;
  const model = servedName(r, body);
  if (r.engine === "vllm") {
    return ["vllm serve", model, "--max-model-len", seq, "--tensor-parallel-size", tp, "--max-num-seqs", batch]
      .concat(kv ? ["--kv-cache-dtype", kv] : []).join(" ");
  }
  if (r.engine === "sglang") {
    return ["python -m sglang.launch_server --model-path", model, "--context-length", seq, "--tp-size", tp,
            "--max-running-requests", batch].concat(kv ? ["--kv-cache-dtype", kv === "fp8" ? "fp8_e4m3" : kv] : []).join(" ");
  }
  if (r.engine === "trtllm") {
    return ["trtllm-serve", model, "--tp_size", tp, "--max_seq_len", seq, "--max_batch_size", batch].join(" ");
  }
  return kvplanCommand(body);
}

function kvplanCommand(body) {
  const words = ["kvplan estimate", body.config ? "config.json" : quote(body.model), "--seq", quote(body.seq),
                 "--batch", String(body.batch), "--gpu", quote(body.gpu), "--gpus", String(body.gpus),
                 "--engine", body.engine];
  if (body.engine_version) words.push("--engine-version", quote(body.engine_version));
  if (body.kv_dtype !== "auto") words.push("--kv-dtype", body.kv_dtype);
  if (body.dtype) words.push("--dtype", body.dtype);
  return words.join(" ");
}

async function copyLaunch() {
  const text = $("launch").value;
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {  // no clipboard API (an insecure origin): the selection and the old command
    $("launch").select();
    document.execCommand("copy");
  }
  $("copied").textContent = "Copied to the clipboard.";
}

// ------------------------------------------------------------------ start

async function catalogs() {
  const [m, g] = await Promise.all([fetch("api/models").then((x) => x.json()), fetch("api/gpus").then((x) => x.json())]);
  models = new Map(m.models.map((entry) => [entry.name, entry]));
  $("model-names").replaceChildren(...m.models.map((entry) => new Option(entry.name, entry.name)));
  const gpu = $("gpu");
  gpu.replaceChildren(...g.gpus.map((entry) => new Option(`${entry.name} (${gib(entry.capacity_bytes)})`, entry.name)));
}

function later() {
  clearTimeout(timer);
  timer = setTimeout(ask, 250);
}

document.addEventListener("DOMContentLoaded", async () => {
  try { await catalogs(); } catch (err) { /* the estimate below says what is wrong */ }
  readAddress();
  $("inputs").addEventListener("input", later);
  $("inputs").addEventListener("change", later);
  $("inputs").addEventListener("submit", (event) => { event.preventDefault(); ask(); });
  $("copy").addEventListener("click", copyLaunch);
  let width = window.innerWidth;
  window.addEventListener("resize", () => { if (window.innerWidth !== width) { width = window.innerWidth; later(); } });
  ask();
});
