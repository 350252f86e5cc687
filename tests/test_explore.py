"""The explorer without a browser: its rates are the engine's, its messages the CLI's, its server never falls."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml

import simdesign
from simdesign import cli
from simdesign.significance import ANALYSES
from simdesign.explore import controls, curves
from simdesign.explore.live import ChunkPool, LiveRun, Runs
from simdesign.model import load_model

flask = pytest.importorskip("flask", reason="the explorer needs the 'explore' extra (flask)")

FORM = {"model": "coherence", "effect": "zero", "kind": "block", "blocks": "4", "docs_per_block": "5",
        "annotators_per_block": "3", "tests": ["ttest", "ttest_doc", "art_block"], "trials": "60", "seed": "7"}


def cli_error(tmp_path, capsys, **changes) -> str:
    """What 'simdesign run' prints for the config the form describes, changed by ``changes`` (YAML values)."""
    mapping = controls.config_mapping(FORM)
    mapping["designs"][0].update(changes.pop("design", {}))
    mapping.update(changes)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(mapping))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    return capsys.readouterr().err


def summaries_equal(ours: pd.DataFrame, engine: pd.DataFrame) -> None:
    # mean_fit_seconds is a wall time: it differs between any two runs
    pd.testing.assert_frame_equal(ours.drop(columns="mean_fit_seconds").reset_index(drop=True),
                                  engine.drop(columns="mean_fit_seconds").reset_index(drop=True))


def test_the_explorers_rates_are_simulates_for_the_same_config_seed_and_trials():
    checked = controls.check_controls(FORM)
    assert checked.errors == {}
    run = LiveRun(checked.config, ChunkPool(workers=0), "k").start()
    run.join(timeout=300)
    assert run.status == "done" and run.trials_done == 60
    engine = simdesign.simulate(checked.config, jobs=1, progress=False).summary()
    summaries_equal(run.summary, engine)
    shown = {(r["test"], r["estimand"]): r for r in run.snapshot()["rows"]}
    for row in engine[engine["estimand"] == "type1"].itertuples():
        assert shown[(row.test, "type1")]["rate"] == row.rate
        assert (shown[(row.test, "type1")]["ci_low"], shown[(row.test, "type1")]["ci_high"]) == (row.ci_low,
                                                                                                 row.ci_high)


def test_rank_rates_are_simulates_too_through_the_configs_method():
    checked = controls.check_controls({**FORM, "method": "rank"})
    assert checked.errors == {} and checked.config.methods == ("rank",)
    run = LiveRun(checked.config, ChunkPool(workers=0), "k").start()
    run.join(timeout=300)
    assert run.status == "done", run.message
    engine = simdesign.simulate(checked.config, jobs=1, progress=False).summary()
    assert set(engine["method"]) == {"rank"}
    summaries_equal(run.summary, engine)
    shown = [r for r in run.snapshot()["rows"] if r["estimand"] == "type1"]
    assert {r["method"] for r in shown} == {"rank"} and len(shown) == len(FORM["tests"])
    # a different study from the Likert one: the method reaches the engine
    likert = controls.check_controls(FORM).config
    assert not engine.equals(simdesign.simulate(likert, jobs=1, progress=False).summary())


def test_the_method_control_offers_what_the_model_generates(tmp_path):
    # the presets have a fitted rank_noise; pairwise preferences come from any Likert model with assumed values
    assert controls.check_controls(FORM).methods == ["likert", "rank", "pairwise"]
    likert_only = {key: value for key, value in load_model("coherence").to_dict().items() if key != "rank_noise"}
    path = tmp_path / "likert_only.yaml"
    path.write_text(yaml.safe_dump(likert_only))
    # a model file is offered by the server ('simdesign explore --model FILE'), under its name
    own_model = {**FORM, "model": "likert_only", "seconds_per_judgement": "25"}  # 'auto' knows the presets' tasks only
    models = {"likert_only": path}
    assert controls.check_controls(own_model, models).methods == ["likert", "pairwise"]
    checked = controls.check_controls({**own_model, "method": "rank"}, models)
    assert checked.config is None and list(checked.errors) == ["method"]
    assert "rank" in checked.errors["method"][0] and "rank_noise" in checked.errors["method"][0]


def test_a_test_that_cannot_take_ranks_is_refused_at_the_tests(tmp_path, capsys):
    assert "rank" not in ANALYSES["art"].methods  # what the registry declares, not the explorer
    form = {**FORM, "method": "rank", "tests": ["ttest", "art"]}
    checked = controls.check_controls(form)
    assert checked.config is None and list(checked.errors) == ["tests"]
    (message,) = checked.errors["tests"]
    assert "art" in message and "rank" in message
    mapping = controls.config_mapping(form)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(mapping))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_the_rates_computed_in_worker_processes_are_the_engines_too():
    checked = controls.check_controls({**FORM, "trials": "40", "effect": "fitted"})
    pool = ChunkPool(workers=2)
    try:
        run = LiveRun(checked.config, pool, "k").start()
        run.join(timeout=600)
    finally:
        pool.close()
    assert run.status == "done", run.message
    summaries_equal(run.summary, simdesign.simulate(checked.config, jobs=1, progress=False).summary())


def test_a_bad_value_gets_the_message_the_cli_gives_next_to_its_control(tmp_path, capsys):
    checked = controls.check_controls({**FORM, "blocks": "-1"})
    assert checked.config is None
    assert list(checked.errors) == ["blocks"]
    (message,) = checked.errors["blocks"]
    assert "'blocks'" in message and "-1" in message
    assert message in cli_error(tmp_path, capsys, design={"blocks": -1})


def test_a_test_that_does_not_fit_the_design_is_shown_at_the_tests(tmp_path, capsys):
    form = {**FORM, "kind": "pool", "docs": "100", "annotators": "30", "judgements_per_output": "3"}
    checked = controls.check_controls(form)
    assert list(checked.errors) == ["tests"]
    assert "art_block" in checked.errors["tests"][0]
    mapping = controls.config_mapping(form)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(mapping))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert checked.errors["tests"][0] in capsys.readouterr().err


@pytest.mark.parametrize("control, value, word", [("trials", "0", "'trials'"), ("trials", "abc", "'trials'"),
                                                  ("docs_per_block", "", "'docs_per_block'"),
                                                  ("alpha", "2", "'alpha'"), ("model", "nosuch.yaml", "nosuch"),
                                                  ("pay_per_hour", "-3", "pay_per_hour"),
                                                  ("seconds_per_judgement", "soon", "seconds_per_judgement")])
def test_every_bad_control_is_named(control, value, word):
    checked = controls.check_controls({**FORM, control: value})
    assert checked.config is None
    assert control in checked.errors, checked.errors
    assert word in " ".join(checked.errors[control])


def test_totals_use_the_planners_cost_model():
    checked = controls.check_controls({**FORM, "blocks": "20", "pay_per_hour": "12", "per_annotator": "2"})
    totals = controls.totals(checked.config, checked.cost)
    # the paper's design: 20 blocks x 5 documents x 3 annotators x 5 systems; 30.53 s per Likert coherence
    # judgement (the paper's capped mean), 12 per hour, 2 per annotator
    assert totals["judgements"] == 1500 and totals["annotators"] == 60
    assert math.isclose(totals["hours"], round(1500 * 30.53 / 3600, 2))
    assert math.isclose(totals["cost"], round(1500 * 30.53 / 3600 * 12 + 60 * 2, 2))
    # Rank: the paper's capped mean per ranked output of coherence is 26.67 s (annotation_times.yaml)
    checked = controls.check_controls({**FORM, "blocks": "20", "method": "rank"})
    totals = controls.totals(checked.config, checked.cost)
    assert totals["method"] == "Rank" and math.isclose(totals["hours"], round(1500 * 26.67 / 3600, 2))


def test_a_slow_run_can_be_cancelled():
    # clm (statsmodels, a fraction of a second per fit) rather than clmm_native, whose first fit after an
    # install compiles numba kernels for about a minute
    checked = controls.check_controls({**FORM, "tests": ["clm"], "trials": "500"})
    run = LiveRun(checked.config, ChunkPool(workers=0), "k").start()
    run.cancel()
    run.join(timeout=120)
    assert run.status == "cancelled" and run.trials_done < 500
    assert not run.classical


def test_a_new_setting_replaces_the_running_one_and_an_old_one_is_kept():
    runs = Runs(ChunkPool(workers=0))
    first = controls.check_controls({**FORM, "trials": "20"}).config
    second = controls.check_controls({**FORM, "trials": "20", "blocks": "2"}).config
    run_a = runs.start("a", first)
    run_b = runs.start("b", second)
    run_b.join(timeout=300)
    assert run_b.status == "done"
    assert runs.start("b", second) is run_b  # done: kept, not recomputed
    assert run_a.status in ("done", "cancelled")


@pytest.fixture
def client(tmp_path):
    from simdesign.explore.app import create_app

    app = create_app(workers=0, figures_dir=tmp_path / "figures", configs_dir=curves.DEFAULT_CONFIGS)
    yield app.test_client()
    app.extensions["simdesign_pool"].close()


def test_the_server_answers_bad_requests_with_messages(client):
    assert client.post("/api/check", data="not json", content_type="application/json").status_code == 400
    answer = client.post("/api/check", json={**FORM, "blocks": "-1", "trials": "x"}).get_json()
    assert set(answer["errors"]) == {"blocks", "trials"} and answer["run"] is None
    assert client.get("/api/run/nosuch").status_code == 404
    assert client.get("/picture/nosuch.png").status_code == 404
    assert client.get("/static/../../etc/passwd").status_code == 404
    page = client.get("/").get_data(as_text=True)
    assert "http://" not in page and "https://" not in page  # nothing from elsewhere
    assert client.get("/static/explorer.js").status_code == 200


def test_a_good_setting_draws_its_design_and_computes(client, tmp_path):
    answer = client.post("/api/check", json={**FORM, "trials": "20"}).get_json()
    assert answer["errors"] == {} and answer["totals"]["design"] == "block-B4-D5-A3"
    assert client.get(answer["picture"]).data[:8] == b"\x89PNG\r\n\x1a\n"
    key = answer["run"]["key"]
    for _ in range(600):
        state = client.get(f"/api/run/{key}").get_json()
        if state["status"] != "running":
            break
        import time
        time.sleep(0.1)
    assert state["status"] == "done" and state["trials_done"] == 20
    # without precomputed tables the second view says which file it would read
    view = client.get(f"/api/position/{key}").get_json()
    assert view["picture"] is None and "paper_fig4_coherence" in view["message"]


@pytest.mark.slow
def test_the_second_view_places_the_design_on_a_table(client, tmp_path):
    checked = controls.check_controls({**FORM, "trials": "20"})
    figures = tmp_path / "figures"
    figures.mkdir()
    simdesign.simulate(checked.config, jobs=1, progress=False).summary().to_csv(
        figures / "paper_fig4_coherence.csv", index=False)
    key = client.post("/api/check", json={**FORM, "trials": "20"}).get_json()["run"]["key"]
    view = client.get(f"/api/position/{key}").get_json()
    assert view["table"] == "paper_fig4_coherence" and view["message"] == ""
    assert client.get(view["picture"]).data[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_table_of_two_methods_draws_one_curve_per_test_and_method():
    rows = [{"design": f"d{a}", "annotators": a, "test": "ttest_doc", "method": method, "estimand": "type1",
             "rate": rate, "ci_low": rate - 0.01, "ci_high": rate + 0.01}
            for a in (3, 30, 60) for method, rate in (("likert", 0.4), ("rank", 0.2))]
    current = [{"test": "ttest_doc", "method": "rank", "estimand": "type1", "rate": 0.21, "ci_low": 0.2,
                "ci_high": 0.22}]
    figure = curves.draw_position(pd.DataFrame(rows), "type1", current, 60, "t")
    lines = {line.get_label(): list(line.get_ydata()) for line in figure.axes[0].get_lines()
             if not line.get_label().startswith("_")}
    assert lines["ttest_doc (precomputed)"] == [0.4] * 3
    assert lines["ttest_doc@rank (precomputed)"] == [0.2] * 3
    assert "ttest_doc@rank: your design" in [t.get_text() for t in figure.axes[0].get_legend().get_texts()]


# --- issue 33 part 5 (the explorer in class) and issue 29 BAD 5 (limits) -------------------------------------------

def summary_table(estimands=("type1",)) -> pd.DataFrame:
    """A small table with the columns of a run's summary.csv (what the figures' tables hold)."""
    return pd.DataFrame([{"design": f"block-B{b}-D5-A3", "kind": "block", "annotators": 3 * b, "test": "ttest_doc",
                          "estimand": estimand, "rate": 0.05, "ci_low": 0.04, "ci_high": 0.06, "mcse": 0.005,
                          "trials": 1000} for b in (1, 2, 4) for estimand in estimands])


def test_only_curve_tables_are_offered_by_their_columns(tmp_path):
    figures, configs = tmp_path / "figures", tmp_path / "configs"
    figures.mkdir()
    configs.mkdir()
    summary_table(("type1", "failure_rate")).to_csv(figures / "my_curves.csv", index=False)
    # the columns of figures/crowd_knee_sensitivity.csv and figures/plan_mixed.csv: not curves
    pd.DataFrame([{"setting": "s", "noise": 1, "method": "mace", "estimand": "accuracy", "k": 3, "trials": 10,
                   "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6}]).to_csv(figures / "crowd.csv", index=False)
    pd.DataFrame([{"rank": 1, "design": "d", "test": "ttest_doc", "annotators": 3, "power": 0.8, "ci_low": 0.7,
                   "ci_high": 0.9}]).to_csv(figures / "plan.csv", index=False)
    (figures / "broken.csv").write_bytes(b"\xff\xfe not a table")
    tables = {t["name"]: t for t in curves.curve_tables(figures, configs)}
    assert "my_curves" in tables and tables["my_curves"]["estimands"] == ["type1"]
    assert not {"crowd", "plan", "broken"} & set(tables)
    # the paper's figures are named although missing (the view says how to make them), with what they hold
    assert tables["paper_fig4_coherence"]["path"] is None
    for name, table in tables.items():
        if table["path"]:
            assert curves.curve_problem(pd.read_csv(table["path"]).columns) is None


def test_the_shipped_tables_offered_are_curves_and_the_table_follows_the_estimand():
    tables = curves.curve_tables()
    names = [t["name"] for t in tables]
    assert not {"crowd_knee_sensitivity", "crowd_vs_expert", "metric_bootstrap_coverage", "plan_mixed",
                "plan_methods_coherence", "plan_methods_repetition"} & set(names), names
    assert names[:2] == ["paper_fig4_coherence", "paper_fig4_repetition"]  # the paper's figures first
    assert curves.best_table(tables, "coherence", "type1") == "paper_fig4_coherence"
    assert curves.best_table(tables, "coherence", "power") == "paper_fig5_coherence"
    assert curves.best_table(tables, "repetition", "power") == "paper_fig5_repetition"
    for table in tables:
        frame = pd.read_csv(table["path"])
        assert set(table["estimands"]) == set(frame["estimand"]) & {"type1", "power"}


def finished(client, key, timeout=600):
    import time

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        state = client.get(f"/api/run/{key}").get_json()
        if state["status"] != "running":
            return state
        time.sleep(0.1)
    raise AssertionError(f"run {key} did not finish")


@pytest.fixture
def shipped_client():
    from simdesign.explore.app import create_app

    app = create_app(workers=0)
    yield app.test_client()
    app.extensions["simdesign_pool"].close()


@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_a_power_run_is_shown_on_power_curves_whatever_table_was_chosen_before(shipped_client):
    client = shipped_client
    key = client.post("/api/check", json={**FORM, "effect": "fitted", "trials": "20"}).get_json()["run"]["key"]
    assert finished(client, key)["status"] == "done"
    for asked in ("", "paper_fig4_coherence", "crowd_knee_sensitivity", "nosuch"):
        view = client.get(f"/api/position/{key}?table={asked}").get_json()
        assert (view["table"], view["estimand"], view["message"]) == ("paper_fig5_coherence", "power", ""), view
        assert client.get(view["picture"]).data[:8] == b"\x89PNG\r\n\x1a\n"
    # a table with power rows that was chosen is kept
    view = client.get(f"/api/position/{key}?table=paper_fig7_coherence").get_json()
    assert view["table"] == "paper_fig7_coherence" and view["message"] == ""


@pytest.mark.slow  # moved from the fast tier (about 0.4-0.7 s; the tier's budget is 60 s)
def test_the_type1_error_beside_power_is_the_engines_for_the_same_design_with_effect_zero():
    checked = controls.check_controls({**FORM, "effect": "fitted"})
    run = LiveRun(checked.config, ChunkPool(workers=0), "k").start()
    run.join(timeout=300)
    assert run.status == "done" and run.trials_done == run.null_trials_done == 60
    power = simdesign.simulate(checked.config, jobs=1, progress=False).summary()
    null_config = controls.check_controls({**FORM, "effect": "zero"}).config
    null = simdesign.simulate(null_config, jobs=1, progress=False).summary()
    summaries_equal(run.summary, power)
    summaries_equal(run.null_summary, null)
    rows = run.snapshot()["rows"]
    for estimand, engine in (("power", power), ("type1", null)):
        shown = {r["test"]: (r["rate"], r["ci_low"], r["ci_high"]) for r in rows if r["estimand"] == estimand}
        expected = {row.test: (row.rate, row.ci_low, row.ci_high)
                    for row in engine[engine["estimand"] == estimand].itertuples()}
        assert shown == expected and set(shown) == set(FORM["tests"])
    # a run under the null computes nothing beside it
    run = LiveRun(null_config, ChunkPool(workers=0), "n").start()
    run.join(timeout=300)
    assert run.null_summary is None and run.snapshot()["null_trials_done"] is None


def test_cancel_stops_the_run_computing_now_and_a_check_can_leave_it_stopped(client):
    answer = client.post("/api/check", json={**FORM, "tests": ["clm"], "trials": "500"}).get_json()
    key = answer["run"]["key"]
    assert client.post("/api/cancel").get_json() == {"cancelled": True}
    assert finished(client, key, 120)["status"] == "cancelled"
    assert client.post("/api/cancel").get_json() == {"cancelled": False}  # nothing runs now
    # the page's check after Cancel (start: false): totals and picture, the cancelled run, nothing restarted
    again = client.post("/api/check", json={**FORM, "tests": ["clm"], "trials": "500", "start": False}).get_json()
    assert again["run"]["key"] == key and again["run"]["status"] == "cancelled" and again["totals"]
    other = client.post("/api/check", json={**FORM, "trials": "7", "start": False}).get_json()
    assert other["run"] is None and other["errors"] == {} and other["totals"]["design"] == "block-B4-D5-A3"


@pytest.mark.parametrize("changes, control", [
    ({"blocks": "100000000"}, "blocks"),  # issue 29: the server grew from 1.3 to 5 GB in 16 s
    ({"blocks": "10001", "docs_per_block": "1", "annotators_per_block": "1"}, "blocks"),
    # one block: a test on documents (a block-level test with one block is refused by its own rule)
    ({"blocks": "1", "docs_per_block": "10001", "annotators_per_block": "1", "tests": "ttest_doc"},
     "docs_per_block"),
    ({"blocks": "1", "docs_per_block": "2", "annotators_per_block": "10001", "tests": "ttest_doc"},
     "annotators_per_block"),
    ({"blocks": "100", "docs_per_block": "100", "annotators_per_block": "7"}, "blocks"),  # 350,000 judgements
    ({"kind": "pool", "docs": "20000", "annotators": "30", "judgements_per_output": "3", "tests": ["ttest"]}, "docs"),
    ({"trials": "100001"}, "trials"), ({"trials": "10000000000000"}, "trials"),
    ({"trials": "90000", "blocks": "100", "effect": "fitted"}, "trials"),  # 1.35e9 judgements in all
])
def test_a_study_beyond_the_servers_ceilings_is_refused_naming_the_field(changes, control):
    checked = controls.check_controls({**FORM, **changes})
    assert checked.config is None
    assert list(checked.errors) == [control], checked.errors
    assert "at most" in checked.errors[control][0]


def test_the_ceilings_themselves_are_accepted():
    at = {"blocks": "10000", "docs_per_block": "1", "annotators_per_block": "1", "trials": "1000"}
    checked = controls.check_controls({**FORM, **at})
    assert checked.errors == {} and checked.config.designs[0].docs == controls.CEILINGS["docs"]
    assert controls.check_controls({**FORM, "trials": "100000"}).errors == {}
    assert controls.check_controls({**FORM, "blocks": "100", "docs_per_block": "100", "annotators_per_block": "6"
                                    }).errors == {}  # 300,000 judgements per trial


@pytest.mark.parametrize("control, value", [
    ("trials", "1e20"), ("trials", 1e20), ("trials", ".inf"), ("trials", ".nan"), ("trials", "2.5"), ("trials", 2.5),
    ("trials", True), ("blocks", "1e3"), ("blocks", float("inf")), ("blocks", "[1, 2]"), ("seed", "1e5"),
    ("blocks", "9" * 5000), ("currency", "x" * 1000),
])
def test_non_integer_non_finite_and_overlong_values_are_refused(control, value):
    checked = controls.check_controls({**FORM, control: value})
    assert checked.config is None
    (messages,) = checked.errors.values()
    assert control in " ".join(messages) or control in checked.errors, checked.errors


def test_an_oversized_request_is_answered_with_an_error_and_the_server_goes_on(client):
    answer = client.post("/api/check", json={**FORM, "blocks": "100000000", "trials": "1000"})
    assert answer.status_code == 200
    body = answer.get_json()
    assert body["run"] is None and "at most" in body["errors"]["blocks"][0] and body["picture"] is None
    assert client.post("/api/check", data="{" + " " * 100_000 + "}", content_type="application/json"
                       ).status_code == 413
    assert "error" in client.post("/api/check", json={**FORM, "blocks": "9" * 10**5}).get_json()
    normal = client.post("/api/check", json={**FORM, "trials": "20"}).get_json()
    assert normal["errors"] == {} and finished(client, normal["run"]["key"])["trials_done"] == 20


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"), reason="reads /proc")
@pytest.mark.slow  # a second or more: the fast tier stays under a minute
def test_the_real_server_refuses_an_oversized_study_keeps_answering_and_logs_no_polls():
    import json
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    process = subprocess.Popen([sys.executable, "-m", "simdesign.cli", "explore", "--port", "0", "--workers", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo)
    try:
        url = process.stdout.readline().split(" at ", 1)[1].split()[0]

        def post(path, body):
            request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)

        def get(path):
            with urllib.request.urlopen(url + path, timeout=60) as response:
                return json.load(response)

        get("api/options")
        before = rss_mb(process.pid)
        started = time.perf_counter()
        refused = post("api/check", {**FORM, "blocks": "100000000"})
        assert refused["run"] is None and "at most" in refused["errors"]["blocks"][0]
        assert time.perf_counter() - started < 30
        key = post("api/check", {**FORM, "trials": "20"})["run"]["key"]
        for _ in range(600):
            state = get(f"api/run/{key}")  # a poll, as the page's
            if state["status"] != "running":
                break
            time.sleep(0.1)
        assert state["status"] == "done" and state["trials_done"] == 20
        assert rss_mb(process.pid) - before < 300  # nothing of the refused study's size was built
        try:
            get("api/run/nosuch")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    # quiet: no line per answered request (polls, checks), but a request answered with an error is logged
    assert "GET /api/run/" + key not in stderr and "POST /api/check" not in stderr, stderr
    assert "GET /api/run/nosuch" in stderr and " 404 " in stderr, stderr


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"), reason="reads /proc")
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_ctrl_c_or_a_signal_to_the_process_group_stops_the_server_and_its_workers(signal_name):
    # Ctrl-C in a terminal sends SIGINT to the server and its workers alike ('timeout' or a service manager
    # send SIGTERM so); an idle worker that died of it held the pool's task lock and the server hung for ever
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    process = subprocess.Popen([sys.executable, "-m", "simdesign.cli", "explore", "--port", "0", "--workers", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo,
                               start_new_session=True)
    try:
        assert "http://" in process.stdout.readline()
        children = []
        deadline = time.perf_counter() + 120
        while len(children) < 2 and time.perf_counter() < deadline:  # the two workers (and the resource tracker)
            time.sleep(0.5)
            children = [int(pid) for pid in open(f"/proc/{process.pid}/task/{process.pid}/children").read().split()]
        time.sleep(5)  # the workers are idle, waiting for a task
        os.killpg(process.pid, getattr(signal, signal_name))
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    time.sleep(1)
    alive = [pid for pid in children if os.path.exists(f"/proc/{pid}") and
             "Z" not in open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0]]
    assert alive == [], f"workers left running: {alive}"
