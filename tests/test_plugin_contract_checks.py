"""A plug-in package outside the repository runs simdesign.testing's contract checks on its own annotation method,
design kind and test, as a plug-in author would (issue 40), and a broken plug-in fails them."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PLUGIN = '''
"""A plug-in of its own: a two-grade method, a block design kind of twins and a sign test over documents."""
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import stats

from simdesign.significance import register, system_pairs
from simdesign.significance.base import AnalysisInfo, PairwiseResult
from simdesign.core.designs import BlockDesign, register_design_kind
from simdesign.methods import AnnotationMethod, register_method


class Grade(AnnotationMethod):
    name, label, value_column, value_name = "grade", "Grade", "grade", "share good"
    stream_suffix, result_suffix = ("grade",), "@grade"

    def can_generate(self, model):
        return getattr(model, "thresholds", None) is not None

    def responses(self, model, eta, rng):
        return (eta + rng.logistic(size=eta.shape) > 0).astype(np.int64){BROKEN}


@dataclass(frozen=True)
class Twins(BlockDesign):
    kind: ClassVar[str] = "twins"

    @property
    def label(self):
        return "twins-" + super().label

    @classmethod
    def example(cls):
        return cls(3, 4, 2)


def sign_test(judgements, rng, **options):
    pairs = system_pairs(judgements.n_systems)
    counts = np.bincount(judgements.document)
    means = np.stack([np.bincount(judgements.document, weights=judgements.scores[:, s]) / counts
                      for s in range(judgements.n_systems)], axis=1)
    estimate, p_value = [], []
    for i, j in pairs:
        diff = means[:, i] - means[:, j]
        diff = diff[diff != 0]
        estimate.append(float(np.mean(diff)) if diff.size else 0.0)
        p_value.append(stats.binomtest(int((diff > 0).sum()), diff.size).pvalue if diff.size else 1.0)
    return PairwiseResult(np.array(estimate), np.array(p_value), np.array(["ok"] * len(pairs), dtype=object))


GRADE = register_method(Grade())
register_design_kind(Twins)
SIGN = register(AnalysisInfo("sign_doc", sign_test, description="sign test over per-document means"))
'''

TEST = '''
import my_plugin
from simdesign.testing import (check_analysis, check_design_kind, check_method, parametrize_with_checks)


@parametrize_with_checks([("method", my_plugin.GRADE, check_method),
                          ("design_kind", my_plugin.Twins.example(), check_design_kind),
                          ("test", my_plugin.SIGN, check_analysis)])
def test_my_plugin_keeps_simdesigns_contracts(entry, check):
    check(entry)


@parametrize_with_checks()
def test_everything_registered_keeps_its_contract(entry, check):
    check(entry)
'''


def _run(tmp_path, broken: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "my_plugin.py").write_text(PLUGIN.replace("{BROKEN}", broken))
    (tmp_path / "test_my_plugin.py").write_text(TEST)
    return subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_my_plugin.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # a pytest run in a subprocess: about 10 s
def test_a_plugin_outside_the_repository_runs_the_contract_checks(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert "failed" not in last and " passed" in last, last
    # its own 3 entries, and every registered one: the plug-in's among the built-in ones
    for test_id in ("method-grade", "design_kind-twins", "test-sign_doc", "method-likert", "design_kind-block",
                    "test-ttest_doc"):
        assert f"test_everything_registered_keeps_its_contract[{test_id}] PASSED" in done.stdout, test_id
    broken = _run(tmp_path, broken="[:, :1]")  # one response per judged pair instead of one per output
    assert broken.returncode == 1 and "responses of shape" in broken.stdout, broken.stdout[-3000:]


def test_the_plugin_text_is_a_valid_module():
    compile(textwrap.dedent(PLUGIN.replace("{BROKEN}", "")), "my_plugin.py", "exec")
    compile(TEST, "test_my_plugin.py", "exec")
