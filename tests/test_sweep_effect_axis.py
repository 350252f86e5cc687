"""A sweep over effect sizes alone (issue 31 part 3, configs/replication_effects.yaml) draws its figure."""
import pandas as pd

from simdesign.simulation.sweep import draw_sweep


def test_an_effect_sweep_of_a_replication_draws_against_the_effect_multiple(tmp_path, monkeypatch):
    import simdesign.simulation.sweep as sweep

    raw = {"name": "effects", "model": "coherence", "sweep": {"effect": ["zero", 0.25, 1]}}
    rows = [{"design": "d", "test": "ttest_doc", "estimand": "power", "effect": label, "rate": rate,
             "ci_low": rate - 0.01, "ci_high": rate + 0.01, "trials": 10}
            for label, rate in (("zero", 0.05), ("x0.25", 0.3), ("x1", 0.8))]
    # a replication's rows without a test, and rates held as objects (as a summary built in memory may hold them)
    rows.append({"design": "d", "test": None, "estimand": "replication_r", "effect": "x1", "rate": 0.9,
                 "ci_low": None, "ci_high": None, "trials": 10})
    summary = pd.DataFrame(rows).astype({"rate": object, "ci_low": object, "ci_high": object})
    seen = {}
    original = sweep.plot_sweep

    def spy(frame, x, *args, **kwargs):
        seen["x"] = frame.loc[frame["estimand"] == "power"].sort_values("effect")[x].tolist()
        return original(frame, x, *args, **kwargs)

    monkeypatch.setattr(sweep, "plot_sweep", spy)
    paths = draw_sweep(raw, summary, tmp_path / "effects")
    assert [path.exists() for path in paths] == [True]
    # sorted by label: x0.25, x1, zero -> their multiples of the fitted effects
    assert seen["x"] == [0.25, 1.0, 0.0]
