// nazar attention explorer: asks the server (POST /v1/translate with attention and hard
// alignments) and draws, per sentence and model, the translation, the n-best list and the
// attention heatmap (rows: target tokens, then </s>; columns: source tokens).
// Highlighting (docs/serve.md): hovering or focusing target token j marks the source tokens i
// with a[j][i] >= HIGHLIGHT * max_i a[j][i] (soft view) or the one it is aligned to (hard view);
// a source token marks the target tokens the same way along its column.
"use strict";

const HIGHLIGHT = 0.5;  // share of the largest weight a token needs to be highlighted
const $ = (id) => document.getElementById(id);
const state = { results: [], view: "soft" };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function setStatus(text) { $("status").textContent = text; }

function showError(message) {
  const e = $("error");
  e.textContent = message || "";
  e.hidden = !message;
}

// A server started with --api-key-file answers the API 401 without a key: ask for it once,
// keep it for this tab only (sessionStorage), and send it with every API call.
async function api(path, options) {
  for (;;) {
    const key = sessionStorage.getItem("nazar-api-key");
    const headers = Object.assign({}, (options || {}).headers);
    if (key) headers.Authorization = "Bearer " + key;
    const res = await fetch(path, Object.assign({}, options, { headers: headers }));
    if (res.status !== 401) return res;
    const typed = window.prompt(key ? "That API key was refused; API key:" : "This server needs an API key:");
    if (!typed) return res;
    sessionStorage.setItem("nazar-api-key", typed.trim());
  }
}

async function loadModels() {
  try {
    const res = await api("/v1/models");
    const info = await res.json();
    for (const sel of [$("model"), $("model2")]) {
      sel.textContent = "";
      for (const m of info.models) {
        const d = m.config.decoder.kind + (m.config.attention.local !== "global"
          ? " " + m.config.attention.local : " " + m.config.attention.score);
        sel.append(el("option", { value: m.name, text: m.name + " (" + d + ")" }));
      }
    }
    if (info.models.length > 1) $("model2").selectedIndex = 1;
    setStatus(info.models.length + " model" + (info.models.length > 1 ? "s" : "") + " loaded");
  } catch (err) {
    setStatus("server unreachable");
    showError("cannot read /v1/models: " + err.message);
  }
}

async function translate(model, lines) {
  const body = {
    text: lines, model: model, beam: Number($("beam").value), n_best: Number($("nbest").value),
    attention: true, alignment: "hard",
  };
  const res = await api("/v1/translate", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || ("HTTP " + res.status));
  return data;
}

// Indices of the largest entries of `weights`: >= HIGHLIGHT * max (soft) or exactly `hard`.
function marked(weights, hardIndices) {
  if (state.view === "hard") return new Set(hardIndices);
  let max = 0;
  for (const w of weights) max = Math.max(max, w);
  const out = new Set();
  weights.forEach((w, i) => { if (max > 0 && w >= HIGHLIGHT * max) out.add(i); });
  return out;
}

function drawHeatmap(src, hyp) {
  const rows = hyp.tokens.concat(hyp.finished ? ["</s>"] : []);
  const att = hyp.attention || [];
  const hard = new Map();  // target j -> source i
  for (const [i, j] of hyp.alignment || []) hard.set(j, i);
  const table = el("table", { class: "heatmap" + (state.view === "hard" ? " hard" : ""),
                              "aria-label": "attention: rows target tokens, columns source tokens" });
  const head = el("tr", {}, el("th", {}));
  src.forEach((s, i) => head.append(el("th", { class: "src", "data-i": i, tabindex: 0,
                                               scope: "col", text: s })));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  rows.forEach((t, j) => {
    const tr = el("tr", {}, el("th", { class: "tgt", "data-j": j, tabindex: 0, scope: "row",
                                        text: t }));
    src.forEach((_, i) => {
      const w = att[j] ? att[j][i] : 0;
      const td = el("td", { "data-i": i, "data-j": j, title: t + " ← " + src[i] + ": " + w.toFixed(3) });
      if (state.view === "soft") td.style.backgroundColor = "rgba(29, 78, 216, " + w.toFixed(3) + ")";
      else if (j < hyp.tokens.length && hard.get(j) === i) td.classList.add("on");
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);

  const clear = () => table.querySelectorAll(".hl, .active, .mark").forEach(
    (e) => e.classList.remove("hl", "active", "mark"));
  const fromTarget = (j) => {
    const hardI = j < hyp.tokens.length && hard.has(j) ? [hard.get(j)] : [];
    const set = marked(att[j] || [], hardI);
    table.querySelector('th.tgt[data-j="' + j + '"]').classList.add("active");
    for (const i of set) {
      table.querySelector('th.src[data-i="' + i + '"]').classList.add("hl");
      table.querySelector('td[data-i="' + i + '"][data-j="' + j + '"]').classList.add("mark");
    }
  };
  const fromSource = (i) => {
    const column = rows.map((_, j) => (att[j] ? att[j][i] : 0));
    const hardJ = [...hard].filter(([, si]) => si === i).map(([j]) => j);
    const set = marked(column, hardJ);
    table.querySelector('th.src[data-i="' + i + '"]').classList.add("active");
    for (const j of set) {
      table.querySelector('th.tgt[data-j="' + j + '"]').classList.add("hl");
      table.querySelector('td[data-i="' + i + '"][data-j="' + j + '"]').classList.add("mark");
    }
  };
  const enter = (ev) => {
    const cell = ev.target.closest("th, td");
    if (!cell || !table.contains(cell)) return;
    clear();
    if (cell.matches("th.tgt") || cell.matches("td")) fromTarget(Number(cell.dataset.j));
    else if (cell.matches("th.src")) fromSource(Number(cell.dataset.i));
  };
  table.addEventListener("mouseover", enter);
  table.addEventListener("focusin", enter);
  table.addEventListener("mouseleave", clear);
  table.addEventListener("focusout", clear);
  return table;
}

function drawPanel(result, k) {
  const t = result.translations[k];
  const best = t.hypotheses[0];
  const panel = el("div", { class: "panel", "data-model": result.model });
  panel.append(el("h3", {}, result.model + " ",
                  el("small", { text: "score " + best.score.toFixed(4) +
                                      (best.finished ? "" : " (cut at the length limit)") })));
  panel.append(el("p", { class: "best", lang: "", text: best.text === "" ? "(empty)" : best.text }));
  if (t.hypotheses.length > 1) {
    const ol = el("ol", { class: "nbest", "aria-label": "n-best list" });
    for (const h of t.hypotheses)
      ol.append(el("li", {}, h.text + " ", el("span", { class: "score", text: h.score.toFixed(4) })));
    panel.append(ol);
  }
  panel.append(el("div", { class: "scroll" }, drawHeatmap(t.source_tokens, best)));
  return panel;
}

function render() {
  const out = $("results");
  out.textContent = "";
  if (!state.results.length) return;
  const n = state.results[0].translations.length;
  for (let k = 0; k < n; ++k) {
    const sec = el("section", { class: "sentence" },
                   el("h2", { text: (k + 1) + ". " + state.lines[k] }));
    const panels = el("div", { class: "panels" });
    for (const r of state.results) panels.append(drawPanel(r, k));
    sec.append(panels);
    out.append(sec);
  }
}

async function submit(ev) {
  if (ev) ev.preventDefault();
  const lines = $("text").value.split("\n").map((s) => s.trim()).filter((s) => s.length);
  if (!lines.length) { showError("type a sentence first"); return; }
  const models = [$("model").value];
  if ($("compare").checked && $("model2").value) models.push($("model2").value);
  $("go").disabled = true;
  showError("");
  setStatus("translating…");
  const t0 = performance.now();
  try {
    state.results = await Promise.all(models.map((m) => translate(m, lines)));
    state.lines = lines;
    render();
    setStatus("translated " + lines.length + " sentence" + (lines.length > 1 ? "s" : "") +
              " in " + Math.round(performance.now() - t0) + " ms");
  } catch (err) {
    showError(err.message);
    setStatus("error");
  } finally {
    $("go").disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("form").addEventListener("submit", submit);
  $("text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) submit(ev);
  });
  $("compare").addEventListener("change", () => { $("model2").disabled = !$("compare").checked; });
  for (const r of document.querySelectorAll('input[name="view"]'))
    r.addEventListener("change", () => { state.view = r.value; render(); });
  loadModels();
});
