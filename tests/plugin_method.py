"""An annotation method defined outside simdesign, as a user would write one (tests/test_methods_contract.py).

Pass/fail: each annotator marks every output of a document as passing (1) or failing (0). It is generated
from a Likert model: an output passes when its latent value (plus the annotator's logistic noise) lies
above the model's middle threshold. Its tables have a ``passed`` column of 0/1. Everything the package
needs from a method is here: one module and one :func:`~simdesign.methods.register_method` call (made by
the tests in a ``with registered(PASS_FAIL)`` block, so the other tests see only the built-in methods).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.core.errors import DataError
from simdesign.methods import AnnotationMethod

COLUMNS = ("annotator", "document", "system", "passed")


def pass_mark(model) -> float:
    """The threshold an output's latent value must exceed to pass: the model's middle one."""
    return float(model.thresholds[len(model.thresholds) // 2])


def orient_pass_fail(frame: pd.DataFrame, base=None, scale=None, read_form: bool = False):
    """A pass/fail table in the common form: ``score`` = passed (1 = better), checked."""
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise DataError(f"A pass/fail table needs the columns {list(COLUMNS)}; missing {missing}")
    values = pd.to_numeric(frame["passed"], errors="coerce")
    bad = frame.index[~values.isin([0, 1])]
    if len(bad):
        raise DataError(f"The 'passed' column must hold 0 or 1; line {int(bad[0]) + 2} has {frame.loc[bad[0], 'passed']!r}")
    out = frame[list(COLUMNS)].copy()
    out["score"] = values.astype(np.int64)
    return out[["annotator", "document", "system", "score", "passed"]], {"method": "passfail", "scale": (0, 1)}


def read_pass_fail(path, columns: dict, scale=None):
    return orient_pass_fail(pd.read_csv(path).rename(columns=columns))


def check_pass_fail(model, frame: pd.DataFrame, trials: int = 200, seed: int = 0):
    """Predictive check: each system's share of passes against ``trials`` studies simulated from ``model``
    with the table's own design (the method's ``check`` step; table and simulated values as the built-in
    checks return them)."""
    from simdesign.realdata.check import observed_design

    design, observed = observed_design(frame, model.systems)
    streams = np.random.SeedSequence(seed).spawn(trials)
    simulated = np.array([model.sample(design, np.random.default_rng(stream), method=PASS_FAIL).scores.mean(axis=0)
                          for stream in streams])
    low, high = np.percentile(simulated, [2.5, 97.5], axis=0)
    table = pd.DataFrame({"statistic": "share_passing", "system": list(model.systems),
                          "observed": np.nanmean(observed, axis=0), "sim_mean": simulated.mean(axis=0),
                          "sim_low": low, "sim_high": high})
    table["inside"] = (table["observed"] >= table["sim_low"]) & (table["observed"] <= table["sim_high"])
    return table, simulated


class PassFail(AnnotationMethod):
    name = "passfail"
    label = "Pass/fail"
    colour = "tab:green"
    value_column = "passed"
    value_name = "share passing"
    stream_suffix = ("passfail",)
    result_suffix = "@passfail"
    model_requirement = "a Likert model (its middle threshold is the pass mark)"
    steps = {"read_table": read_pass_fail, "orient": orient_pass_fail,
             "describe": lambda info: "Pass/fail judgements (1 = passed)", "check": check_pass_fail}

    def can_generate(self, model) -> bool:
        return getattr(model, "thresholds", None) is not None

    def responses(self, model, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        latent = eta + rng.logistic(size=eta.shape)
        return (latent > pass_mark(model)).astype(np.int64)


PASS_FAIL = PassFail()
