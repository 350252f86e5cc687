// simdesign explorer: the page's controls, sent to the server on every change; the server checks them
// (with the config's rules), draws the design and computes the rates; this script only shows them.
"use strict";

const state = { options: null, seq: 0, key: null, pollTimer: null, lastPosition: 0, positionTrials: -1,
                picture: null, pictureLarge: null, debounce: null, sent: null, inflight: Promise.resolve(), estimand: null };

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
  let data;
  try {
    data = await response.json();
  } catch (error) {
    data = { error: `HTTP ${response.status}` };
  }
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
    // A kind without a starting value (a design kind of a plugin) leaves the field empty: its message waits
    // until the user has typed in it, rather than greeting the choice of a kind with one message per field.
    if (!input.value) input.dataset.untouched = "1";
    input.addEventListener("input", () => { delete input.dataset.untouched; });
    box.appendChild(input);
    box.appendChild(el("div", { class: "error", id: `error-${field}` }));
  }
  // A kind for one kind of judgement (battles: pairwise preferences) starts with that method and its tests.
  if (spec.defaults.method) $("control-method").value = spec.defaults.method;
  if (spec.defaults.tests) {
    for (const box of document.querySelectorAll("input[name=tests]")) box.checked = spec.defaults.tests.includes(box.value);
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
    // a test taking one method's judgements only (Likert scores; pairwise preferences) says which
    if (test.methods.length === 1) notes.push(`${o.methods.find((m) => m.name === test.methods[0])?.label || test.methods[0]} only`);
    if (notes.length) label.appendChild(el("small", {}, `(${notes.join(", ")})`));
    label.title = test.description;
    $("tests").appendChild(label);
  }
  for (const name of ["model", "method", "effect", "effect_scale", "kind", "trials", "seed", "alpha", "pay_per_hour",
                      "seconds_per_judgement", "per_annotator", "currency"]) {
    if (o.defaults[name] !== undefined) $(`control-${name}`).value = o.defaults[name];
  }
  designFields($("control-kind").value);
  const c = o.ceilings;
  $("ceilings").textContent = `The server takes at most ${c.trials.toLocaleString("en")} trials, ` +
    `${c.blocks.toLocaleString("en")} blocks, ${c.docs.toLocaleString("en")} documents, ` +
    `${c.annotators.toLocaleString("en")} annotators and ${c.judgements_per_trial.toLocaleString("en")} ` +
    "judgements per trial ('simdesign run' has no such ceilings).";
  for (const scenario of o.scenarios) {
    const button = el("button", { type: "button", id: `scenario-${scenario.name}`, title: scenario.title },
                      scenario.label);
    button.addEventListener("click", () => applyScenario(scenario));
    $("scenarios").appendChild(button);
  }
  // A text field fires 'input' on every keystroke and 'change' when it loses focus (e.g. to the Cancel
  // button): check() sends only values that differ from the last ones sent, so the second is a no-op.
  $("controls").addEventListener("input", scheduleCheck);
  $("controls").addEventListener("change", (event) => {
    if (event.target.id === "control-kind") designFields(event.target.value);
    scheduleCheck();
  });
  $("cancel").addEventListener("click", cancelRun);
  $("run-again").addEventListener("click", () => { clearTimeout(state.debounce); check({ force: true }); });
  $("curve-table").addEventListener("change", () => refreshPosition(true));
  $("enlarge-design").addEventListener("click", openEnlarged);
  $("design-picture").addEventListener("click", openEnlarged);
  $("overlay").addEventListener("click", closeEnlarged); // anywhere, the picture too: nothing in it is clickable
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") closeEnlarged(); });
}

function applyScenario(scenario) {
  const values = scenario.values;
  if (values.kind !== undefined && values.kind !== $("control-kind").value) {
    $("control-kind").value = values.kind;
    designFields(values.kind);
  }
  for (const [name, value] of Object.entries(values)) {
    if (name === "tests") {
      for (const box of document.querySelectorAll("input[name=tests]")) box.checked = value.includes(box.value);
    } else if (name !== "kind" && $(`control-${name}`)) {
      $(`control-${name}`).value = value;
    }
  }
  for (const button of document.querySelectorAll("#scenarios button")) {
    button.classList.toggle("active", button.id === `scenario-${scenario.name}`);
  }
  clearTimeout(state.debounce);
  check();
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
  // a change on its way can be cancelled too (leaving a field without changing it is none)
  if (JSON.stringify(formValues()) !== state.sent) $("cancel").disabled = false;
}

// Show each control's messages next to it; the number shown (an untouched empty design field's wait).
function showErrors(errors) {
  for (const node of document.querySelectorAll(".error[id^=error-]")) node.textContent = "";
  for (const node of document.querySelectorAll(".bad")) node.classList.remove("bad");
  let shown = 0;
  for (const [control, messages] of Object.entries(errors || {})) {
    if ($(`control-${control}`)?.dataset.untouched && !$(`control-${control}`).value) continue;
    shown++;
    const target = $(`error-${control}`) || $("error-general");
    target.textContent = (target.textContent ? target.textContent + "\n" : "") + messages.join("\n");
    const input = $(`control-${control}`);
    if (input) input.classList.add("bad");
  }
  return shown;
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
  const box = $("totals");
  box.textContent = "";
  if (!totals) return;
  const money = (v) => `${Number(v).toFixed(2)} ${totals.currency || ""}`;
  const items = [["design", `${totals.design} (${totals.description})`], ["annotation method", totals.method],
    ["documents", totals.documents], ["annotators", totals.annotators],
    ["judgements per output", totals.judgements_per_output],
    ["judgements", `${totals.judgements.toLocaleString("en")} (${totals.systems} systems)`],
    ["most judgements per annotator", totals.max_judgements_per_annotator]];
  if (totals.cost !== undefined) {
    items.push(["hours", `${Number(totals.hours).toFixed(1)} (${totals.seconds_per_judgement} s per judgement)`],
               ["labour", money(totals.labour_cost)], ["annotators' fixed cost", money(totals.annotator_cost)],
               ["cost", money(totals.cost)]);
  }
  for (const [name, value] of items) {
    const item = el("span", { "data-total": name }, `${name} `);
    item.appendChild(el("span", { class: "value" }, String(value)));
    box.appendChild(item);
    box.appendChild(document.createTextNode(" "));
  }
}

function showPicture(picture, large) {
  state.pictureLarge = large || null;
  $("enlarge-design").disabled = !picture;
  if (picture && picture !== state.picture) {
    state.picture = picture;
    $("design-picture").src = picture;
    $("design-picture").style.display = "";
    if (!$("overlay").hidden) openEnlarged(); // an open enlarge view follows the design
  } else if (!picture) {
    // a bad design (its message is next to its control), or one too large to draw
    state.picture = null;
    $("design-picture").removeAttribute("src");
    $("design-picture").style.display = "none";
    closeEnlarged();
  }
}

// The enlarge view: the design picture drawn for a projector's width (the server's large picture), over the page.
function openEnlarged() {
  if (!state.picture) return;
  $("overlay-picture").src = state.pictureLarge || state.picture;
  $("overlay").hidden = false;
}

function closeEnlarged() {
  $("overlay").hidden = true;
}

// Send the controls. start: false (after Cancel) checks and draws without computing; force: true sends
// values already sent (the Run button).
function check(options) {
  const { start = true, force = false } = options || {};
  const values = formValues();
  const text = JSON.stringify(values);
  if (!force && text === state.sent) return state.inflight;
  state.sent = text;
  const seq = ++state.seq;
  const previous = state.inflight;
  // One check at a time, in order: the server's threads would otherwise start the runs in any order, and an
  // older setting's run could replace (cancel) the newer one. A check overtaken while waiting is not sent.
  state.inflight = (async () => {
    await previous;
    if (seq !== state.seq) return;
    let answer;
    try {
      answer = await getJSON("/api/check", { ...values, start });
    } catch (error) {
      if (seq === state.seq) $("error-general").textContent = `the server did not answer: ${error}`;
      return;
    }
    if (seq !== state.seq) return; // a newer change is on its way
    if (answer.error) { $("error-general").textContent = answer.error; return; }
    const shownErrors = showErrors(answer.errors);
    showMethods(answer.methods);
    $("warnings").textContent = (answer.warnings || []).join("\n");
    showTotals(answer.totals);
    showPicture(answer.picture, answer.picture_large);
    if (!answer.run) {
      clearTimeout(state.pollTimer);
      state.key = null;
      clearResults();
      if (answer.totals) {
        setStatus("not computed (cancelled): press Run to compute this setting", "cancelled");
        $("run-again").disabled = false;
      } else {
        if (shownErrors) setStatus("fix the controls marked in red", "invalid");
        else setStatus("fill in the design's empty fields", "incomplete");
        $("run-again").disabled = true;
      }
      $("cancel").disabled = true;
      return;
    }
    state.key = answer.run.key;
    state.positionTrials = -1;
    showRun(answer.run);
    if (answer.run.status === "running") poll();
  })();
  return state.inflight;
}

function setStatus(text, status) {
  $("status").textContent = text;
  $("status").setAttribute("data-status", status);
}

function pct(v) { return v === null || v === undefined ? "-" : `${(100 * v).toFixed(1)}%`; }

function clearResults() {
  $("results").querySelector("tbody").textContent = "";
  $("results").removeAttribute("data-key");
  $("results").setAttribute("data-trials", "0");
  $("first-result").textContent = "";
  $("run-error").textContent = "";
  $("progress-bar").value = 0;
  // the position figure showed the cleared run's design: not the one in the controls now
  $("position-picture").removeAttribute("src");
  $("position-picture").style.display = "none";
  $("position-caveat").textContent = "";
}

function rateBar(row, alpha, showAlpha) {
  const bar = el("div", { class: "bar" });
  if (row.ci_low !== null && row.ci_high !== null) {
    bar.appendChild(el("div", { class: "interval",
                                style: `left:${100 * row.ci_low}%;width:${100 * (row.ci_high - row.ci_low)}%` }));
  }
  if (row.rate !== null) bar.appendChild(el("div", { class: "point", style: `left:${100 * row.rate}%` }));
  if (showAlpha && alpha > 0 && alpha < 1) {
    bar.appendChild(el("div", { class: "alpha", style: `left:${100 * alpha}%`, title: "alpha" }));
  }
  return bar;
}

// The type I error of the same design beside a power: flagged when its whole interval is above alpha.
function type1Cell(row, alpha) {
  if (!row) return el("td", { class: "type1" }, "computing");
  const liberal = row.ci_low !== null && row.ci_low > alpha;
  const cell = el("td", { class: liberal ? "type1 liberal" : "type1", "data-type1": row.rate },
                  `${pct(row.rate)} [${pct(row.ci_low)}, ${pct(row.ci_high)}]${liberal ? " liberal" : ""}`);
  cell.title = liberal ? `above alpha ${alpha}: this test rejects true nulls too often, so its power is not ` +
                         "comparable with the others'" : `over ${row.trials} trials with effect zero`;
  return cell;
}

function showRun(run) {
  if (run.key !== state.key) return;
  const power = run.estimand === "power";
  const estimandName = power ? "power" : "type I error";
  const alpha = Number($("control-alpha").value);
  $("estimand-name").textContent = `${estimandName} (alpha ${$("control-alpha").value})`;
  $("rate-heading").textContent = estimandName;
  for (const node of document.querySelectorAll(".type1-column")) node.style.display = power ? "" : "none";
  const streams = power ? 2 : 1;
  $("progress-bar").max = run.trials_total * streams;
  $("progress-bar").value = run.trials_done + (power ? run.null_trials_done || 0 : 0);
  const what = { running: "computing", done: "done", cancelled: "cancelled", error: "failed" }[run.status];
  setStatus(`${what}: ${run.trials_done} of ${run.trials_total} trials` +
            (power ? ` (+${run.null_trials_done} at effect zero)` : "") + `, ${run.elapsed.toFixed(1)} s` +
            (run.classical ? "" : " (model fits: slow)"), run.status);
  $("cancel").disabled = run.status !== "running";
  $("run-again").disabled = run.status === "running" || run.status === "done";
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
  $("results").setAttribute("data-estimand", run.estimand);
  const type1 = new Map(run.rows.filter((r) => r.estimand === "type1").map((r) => [`${r.test}@${r.method}`, r]));
  for (const row of run.rows.filter((r) => r.estimand === run.estimand)) {
    const tr = el("tr", { "data-test": row.test, "data-rate": row.rate });
    tr.appendChild(el("td", {}, row.test));
    tr.appendChild(el("td", {}, pct(row.rate)));
    tr.appendChild(el("td", {}, `[${pct(row.ci_low)}, ${pct(row.ci_high)}]`));
    tr.appendChild(el("td", {}, pct(row.mcse)));
    tr.appendChild(el("td", {}, String(row.n_failed)));
    const cell = el("td");
    cell.appendChild(rateBar(row, alpha, !power));
    tr.appendChild(cell);
    if (power) tr.appendChild(type1Cell(type1.get(`${row.test}@${row.method}`), alpha));
    body.appendChild(tr);
  }
  const now = Date.now();
  const finished = run.status !== "running";
  if (run.trials_done > 0 && (run.trials_done !== state.positionTrials || run.estimand !== state.estimand) &&
      (finished || now - state.lastPosition > 2500)) {
    state.positionTrials = run.trials_done;
    state.estimand = run.estimand;
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
    if (key !== state.key) return;
    if (run.error) { setStatus(run.error, "error"); return; }
    showRun(run);
    if (run.status === "running") poll();
  }, 300);
}

// Cancel always cancels: a change not sent yet is not computed, a check on its way is waited for, and then
// whatever the server computes is cancelled. Leaving the edited field (its 'change' event) sends nothing new.
async function cancelRun() {
  clearTimeout(state.debounce);
  $("cancel").disabled = true;
  await state.inflight;
  await getJSON("/api/cancel", {});
  if (JSON.stringify(formValues()) !== state.sent) {
    await check({ start: false }); // the edited setting's totals, picture and messages, without computing it
  }
  if (state.key) poll();
}

async function refreshPosition(userChoice) {
  if (!state.key) return;
  const select = $("curve-table");
  const chosen = userChoice ? select.value : (select.dataset.user || "");
  if (userChoice) select.dataset.user = chosen;
  const key = state.key;
  const answer = await getJSON(`/api/position/${key}?table=${encodeURIComponent(chosen)}`);
  if (key !== state.key) return; // the run was replaced or cleared while the picture was drawn: it is not shown
  if (answer.error) { $("position-message").textContent = answer.error; return; }
  // the tables with rows of the run's estimand are offered; the others are shown greyed
  select.textContent = "";
  for (const table of answer.tables) {
    const offered = table.estimands.includes(answer.estimand);
    const option = el("option", { value: table.name },
                      table.name + (table.path ? "" : " (not computed)") +
                      (offered ? "" : ` (no ${answer.estimand === "type1" ? "type I error" : "power"} curves)`));
    option.disabled = !offered;
    select.appendChild(option);
  }
  if (answer.table) select.value = answer.table;
  $("position-message").textContent = answer.message;
  $("position-caveat").textContent = answer.caveat || "";
  if (answer.picture) {
    $("position-picture").src = answer.picture;
    $("position-picture").dataset.trials = answer.trials;
    $("position-picture").dataset.table = answer.table;
    // the colours drawn (curve -> colour, star -> colour): the picture's key, read by the browser test
    $("position-picture").dataset.colours = JSON.stringify(answer.colours || {});
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
