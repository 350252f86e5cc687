"""The same seed draws the same study on every machine: no draw depends on the BLAS/LAPACK kernel (issue 38).

tests/kernel_draws.py simulates one study with every generator (every study kind and annotation method,
and the committed example table) and writes what it drew. It runs here twice, in subprocesses: under the
kernel this machine picks (with the environment as it is) and under another OpenBLAS core type with one
thread. Latent values must agree to 1e-12 and responses (integer scores, ranks, assignments) exactly.
Generator version 1 failed this test: its covariance roots came from LAPACK's eigenvectors, and 20 of the
43 recorded arrays differed between the SkylakeX and the Prescott (Katmai) kernels.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve().parent / "kernel_draws.py"
# Core types every x86-64 CPU can run (SSE3, SSE4.2): forcing a newer one could stop on an illegal instruction.
OTHER_KERNELS = ("Prescott", "Nehalem")
OLD_KERNEL_NAMES = {"Prescott": "Katmai"}  # OpenBLAS reports Prescott's kernels under this name


def _start(out: Path, environment: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPT), str(out)], env=environment, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> None:
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, f"tests/kernel_draws.py failed:\n{err[-3000:]}"


@pytest.fixture(scope="module")
def draws(tmp_path_factory):
    """(draws under this machine's kernel, draws under another core type with one thread)."""
    directory = tmp_path_factory.mktemp("kernels")
    here = dict(os.environ)
    current = here.get("OPENBLAS_CORETYPE", "")
    other = next(k for k in OTHER_KERNELS if k.lower() != current.lower())
    forced = {**here, "OPENBLAS_CORETYPE": other, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    first = _start(directory / "here.npz", here)
    second = _start(directory / "other.npz", forced)
    _finish(first)
    _finish(second)
    return np.load(directory / "here.npz"), np.load(directory / "other.npz")


def _is_response(values: np.ndarray) -> bool:
    """Integer arrays and float arrays whose finite values are all whole numbers (scores with NaN gaps)."""
    if values.dtype.kind in "iub":
        return True
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite)))


def test_the_two_runs_used_two_kernels(draws):
    here, other = draws
    if str(here["kernel"]) in ("", "None") or str(here["kernel"]) == str(other["kernel"]):
        pytest.skip(f"OPENBLAS_CORETYPE changed nothing here (kernel {here['kernel']}): numpy is not linked to a "
                    "dynamic-architecture OpenBLAS, so no second kernel can be compared")
    assert str(here["kernel"]) != str(other["kernel"])


def test_every_generator_draws_the_same_values_on_both_kernels(draws):
    here, other = draws
    assert sorted(here.files) == sorted(other.files)
    names = [name for name in here.files if name != "kernel"]
    # every study kind's generator and both methods are there (see tests/kernel_draws.py)
    for expected in ("coherence-block-scores", "repetition-pool-scores", "coherence-coverage-scores",
                     "coherence-pair-rank", "rank_repetition-block", "panel-crowd-scores", "crowd_paper-crowd",
                     "crowd_systems-truth", "metric-example", "tac-scores", "pairwise-all-preferences",
                     "pairwise-subset-preferences", "pairwise-battles-preferences", "judge-quality",
                     "judge-ordinal-scores", "judge-continuous-scores"):
        assert expected in names
    assert any(name.endswith("-likert") for name in names) and any(name.endswith("-rank") for name in names)
    differing = []
    for name in names:
        a, b = here[name], other[name]
        if a.shape != b.shape:
            differing.append(f"{name}: shapes {a.shape} and {b.shape}")
        elif _is_response(a) or _is_response(b):
            if not np.array_equal(a, b, equal_nan=True):
                differing.append(f"{name}: {int(np.sum(a != b))} responses differ")
        elif not np.allclose(a, b, rtol=0, atol=1e-12, equal_nan=True):
            differing.append(f"{name}: latent values differ by up to {np.nanmax(np.abs(a - b)):.3g}")
    assert not differing, "; ".join(differing)


def test_the_committed_metric_example_is_drawn_on_the_other_kernel_too(draws):
    _, other = draws
    committed = pd.read_csv(ROOT / "examples" / "metric_scores.csv")[["metric_a", "metric_b", "human"]]
    np.testing.assert_array_equal(np.round(other["metric-example"], 4), committed.to_numpy(dtype=float))


def test_every_committed_figure_table_says_which_generator_drew_it():
    import yaml

    from simdesign.core.seeds import GENERATOR_VERSION

    versions = yaml.safe_load((ROOT / "figures" / "generator_versions.yaml").read_text())
    tables = sorted(path.stem for path in (ROOT / "figures").glob("*.csv"))
    assert sorted(versions) == tables, "figures/generator_versions.yaml must name every figures/*.csv, no other"
    assert all(version in range(1, GENERATOR_VERSION + 1) for version in versions.values()), versions
    # the Figure-4 tables were redrawn by version 2 (issue 38)
    assert versions["paper_fig4_coherence"] == versions["paper_fig4_repetition"] == GENERATOR_VERSION
