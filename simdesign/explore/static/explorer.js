// simdesign explorer: the page's controls, sent to the server on every change; the server checks them
// (with the config's rules), draws the design and computes the rates; this script only shows them.
"use strict";

const state = { options: null, seq: 0, key: null, pollTimer: null, lastPosition: 0, positionTrials: -1,
                picture: null, debounce: null };

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

async function getJSON(url, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" },
                                           body: JSON.stringify(body) };
  const response = await fetch(url, init);
  const data = await response.json();
  if (!response.ok && !data.error) data.error = `HTTP ${response.status}`;
  return data;
}

function designFields(kind) {
  const box = $("design-fields");
  box.textContent = "";
  const spec = state.options.designs[kind];
  if (!spec) return;
  for (const field of spec.fields) {
    box.appendChild(el("label", { for: `control-${field}` }, field.replaceAll("_", " ")));
    const input = el("input", { id: `control-${field}`, name: field, "data-design-field": "1" });
    input.value = spec.defaults[field] || "";
    box.appendChild(input);
    box.appendChild(el("div", { class: "error", id: `error-${field}` }));
  }
}

function buildControls() {
  const o = state.options;
  for (const name of o.presets) $("presets").appendChild(el("option", { value: name }));
  for (const [kind, spec] of Object.entries(o.designs)) {
    $("control-kind").appendChild(el("option", { value: kind }, `${kind} (${spec.label})`));
  }
  for (const method of o.methods) {
    $("control-method").appendChild(el("option", { value: method.name }, method.label));
  }
  for (const test of o.tests) {
    const label = el("label", { class: "test-choice" });
    const box = el("input", { type: "checkbox", name: "tests", value: test.name, id: `test-${test.name}` });
    box.checked = o.defaults.tests.includes(test.name);
    label.appendChild(box);
    label.appendChild(document.createTextNode(` ${test.name} `));
    const notes = [];
    if (!test.classical) notes.push("model fit: slow");
    if (test.needs) notes.push(`needs ${test.needs}`);
    if (test.needs_blocks) notes.push("block designs");
    if (!test.methods.includes("rank")) notes.push("Likert only");
    if (notes.length) label.appendChild(el("small", {}, `(${notes.join(", ")})`));
    label.title = test.description;
    $("tests").appendChild(label);
  }
  for (const name of ["model", "method", "effect", "effect_scale", "kind", "trials", "seed", "alpha", "pay_per_hour",
                      "seconds_per_judgement", "per_annotator", "currency"]) {
    const control = $(`control-${name}`);
    if (o.defaults[name] !== undefined && control.tagName !== "SELECT") control.value = o.defaults[name];
    if (o.defaults[name] !== undefined && control.tagName === "SELECT") control.value = o.defaults[name];
  }
  designFields($("control-kind").value);
  $("controls").addEventListener("input", scheduleCheck);
  $("controls").addEventListener("change", (event) => {
    if (event.target.id === "control-kind") designFields(event.target.value);
    scheduleCheck();
  });
  $("cancel").addEventListener("click", cancelRun);
  $("curve-table").addEventListener("change", () => refreshPosition(true));
}

function formValues() {
  const values = {};
  for (const control of $("controls").querySelectorAll("input[name], select[name]")) {
    if (control.name === "tests") continue;
    values[control.name] = control.value;
  }
  values.tests = [...document.querySelectorAll("input[name=tests]:checked")].map((box) => box.value);
  return values;
}

function scheduleCheck() {
  clearTimeout(state.debounce);
  state.debounce = setTimeout(check, 250);
}

function showErrors(errors) {
  for (const node of document.querySelectorAll(".error[id^=error-]")) node.textContent = "";
  for (const node of document.querySelectorAll(".bad")) node.classList.remove("bad");
  for (const [control, messages] of Object.entries(errors || {})) {
    const target = $(`error-${control}`) || $("error-general");
    target.textContent = (target.textContent ? target.textContent + "\n" : "") + messages.join("\n");
    const input = $(`control-${control}`);
    if (input) input.classList.add("bad");
  }
}

// Offer only the methods the model generates (a model without 'rank_noise' scores on its Likert scale only).
// A method already chosen stays chosen, so the config's refusal is shown next to the control.
function showMethods(methods) {
  if (!methods) return; // the model could not be loaded: its own message says why
  const select = $("control-method");
  for (const option of select.options) {
    const offered = methods.includes(option.value);
    option.hidden = !offered;
    option.disabled = !offered && option.value !== select.value;
  }
  const labels = methods.map((m) => state.options.methods.find((o) => o.name === m)?.label || m);
  $("method-note").textContent = methods.length > 1 ? "" :
    `this model generates ${labels.join(", ")} judgements only (Rank needs a model with 'rank_noise')`;
}

function showTotals(totals) {
  const table = $("totals");
  table.textContent = "";
  if (!totals) return;
  const money = (v) => `${Number(v).toFixed(2)} ${totals.currency || ""}`;
  const rows = [["design", totals.design], ["", totals.description], ["annotation method", totals.method],
    ["documents", totals.documents],
    ["annotators", totals.annotators], ["judgements per output", totals.judgements_per_output],
    ["judgements", `${totals.judgements.toLocaleString("en")} (${totals.systems} systems)`],
    ["most judgements per annotator", totals.max_judgements_per_annotator]];
  if (totals.cost !== undefined) {
    rows.push(["hours", `${Number(totals.hours).toFixed(1)} (${totals.seconds_per_judgement} s per judgement)`],
              ["labour", money(totals.labour_cost)], ["annotators' fixed cost", money(totals.annotator_cost)],
              ["cost", money(totals.cost)]);
  }
  for (const [name, value] of rows) {
    const tr = el("tr", { "data-total": name });
    tr.appendChild(el("th", {}, name));
    tr.appendChild(el("td", {}, String(value)));
    table.appendChild(tr);
  }
}

async function check() {
  const seq = ++state.seq;
  let answer;
  try {
    answer = await getJSON("/api/check", formValues());
  } catch (error) {
    if (seq === state.seq) $("error-general").textContent = `the server did not answer: ${error}`;
    return;
  }
  if (seq !== state.seq) return; // a newer change is on its way
  if (answer.error) { $("error-general").textContent = answer.error; return; }
  showErrors(answer.errors);
  showMethods(answer.methods);
  $("warnings").textContent = (answer.warnings || []).join("\n");
  showTotals(answer.totals);
  if (answer.picture && answer.picture !== state.picture) {
    state.picture = answer.picture;
    $("design-picture").src = answer.picture;
    $("design-picture").style.display = "";
  } else if (!answer.picture) {
    // a bad design (its message is next to its control), or one too large to draw
    state.picture = null;
    $("design-picture").removeAttribute("src");
    $("design-picture").style.display = "none";
  }
  if (!answer.run) {
    setStatus("fix the controls marked in red", "invalid");
    return;
  }
  state.key = answer.run.key;
  state.positionTrials = -1;
  showRun(answer.run);
  poll();
}

function setStatus(text, status) {
  $("status").textContent = text;
  $("status").setAttribute("data-status", status);
}

function pct(v) { return v === null || v === undefined ? "-" : `${(100 * v).toFixed(1)}%`; }

function showRun(run) {
  if (run.key !== state.key) return;
  const estimandName = run.estimand === "type1" ? "type I error" : "power";
  $("estimand-name").textContent = `(${estimandName} of each test, alpha ${$("control-alpha").value})`;
  $("progress-bar").max = run.trials_total;
  $("progress-bar").value = run.trials_done;
  const what = { running: "computing", done: "done", cancelled: "cancelled", error: "failed" }[run.status];
  setStatus(`${what}: ${run.trials_done} of ${run.trials_total} trials, ${run.elapsed.toFixed(1)} s` +
            (run.classical ? "" : " (model fits: slow)"), run.status);
  $("cancel").disabled = run.status !== "running";
  $("run-error").textContent = run.status === "error" || run.status === "cancelled" ? run.message : "";
  if (run.first_result_seconds !== null) {
    let note = `first result after ${run.first_result_seconds.toFixed(2)} s`;
    if (run.first_stage_seconds !== null) {
      note += `; the first ${Math.min(200, run.trials_total)} trials after ${run.first_stage_seconds.toFixed(2)} s`;
    }
    $("first-result").textContent = note;
    $("first-result").setAttribute("data-first-result", run.first_result_seconds);
  } else {
    $("first-result").textContent = "";
    $("first-result").removeAttribute("data-first-result");
  }
  const body = $("results").querySelector("tbody");
  body.textContent = "";
  $("results").setAttribute("data-trials", run.trials_done);
  $("results").setAttribute("data-key", run.key);
  const alpha = Number($("control-alpha").value);
  for (const row of run.rows.filter((r) => r.estimand === run.estimand)) {
    const tr = el("tr", { "data-test": row.test, "data-rate": row.rate });
    tr.appendChild(el("td", {}, row.test));
    tr.appendChild(el("td", {}, pct(row.rate)));
    tr.appendChild(el("td", {}, `[${pct(row.ci_low)}, ${pct(row.ci_high)}]`));
    tr.appendChild(el("td", {}, pct(row.mcse)));
    tr.appendChild(el("td", {}, String(row.n_failed)));
    const cell = el("td");
    const bar = el("div", { class: "bar" });
    if (row.ci_low !== null && row.ci_high !== null) {
      bar.appendChild(el("div", { class: "interval",
                                  style: `left:${100 * row.ci_low}%;width:${100 * (row.ci_high - row.ci_low)}%` }));
    }
    if (row.rate !== null) bar.appendChild(el("div", { class: "point", style: `left:${100 * row.rate}%` }));
    if (run.estimand === "type1" && alpha > 0 && alpha < 1) {
      bar.appendChild(el("div", { class: "alpha", style: `left:${100 * alpha}%`, title: "alpha" }));
    }
    cell.appendChild(bar);
    tr.appendChild(cell);
    body.appendChild(tr);
  }
  const now = Date.now();
  const finished = run.status !== "running";
  if (run.trials_done > 0 && run.trials_done !== state.positionTrials &&
      (finished || now - state.lastPosition > 2500)) {
    state.positionTrials = run.trials_done;
    state.lastPosition = now;
    refreshPosition(false);
  }
}

function poll() {
  clearTimeout(state.pollTimer);
  const key = state.key;
  state.pollTimer = setTimeout(async () => {
    if (key !== state.key) return;
    let run;
    try {
      run = await getJSON(`/api/run/${key}`);
    } catch (error) {
      setStatus(`the server did not answer: ${error}`, "error");
      return;
    }
    if (run.error) { setStatus(run.error, "error"); return; }
    showRun(run);
    if (run.status === "running") poll();
  }, 300);
}

async function cancelRun() {
  if (!state.key) return;
  await getJSON(`/api/cancel/${state.key}`, {});
  poll();
}

async function refreshPosition(userChoice) {
  if (!state.key) return;
  const chosen = userChoice ? $("curve-table").value : ($("curve-table").dataset.user || "");
  if (userChoice) $("curve-table").dataset.user = chosen;
  const answer = await getJSON(`/api/position/${state.key}?table=${encodeURIComponent(chosen)}`);
  if (answer.error) { $("position-message").textContent = answer.error; return; }
  const select = $("curve-table");
  if (select.options.length !== answer.tables.length) {
    select.textContent = "";
    for (const table of answer.tables) {
      select.appendChild(el("option", { value: table.name },
                            table.name + (table.path ? "" : " (not computed)")));
    }
  }
  if (answer.table) select.value = answer.table;
  $("position-message").textContent = answer.message;
  if (answer.picture) {
    $("position-picture").src = answer.picture;
    $("position-picture").dataset.trials = answer.trials;
    $("position-picture").style.display = "";
  } else {
    $("position-picture").removeAttribute("src");
    $("position-picture").style.display = "none";
  }
}

async function start() {
  state.options = await getJSON("/api/options");
  buildControls();
  check();
}

start();
