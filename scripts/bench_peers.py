"""simdesign's mixed models against MCPower, the fastest peer, timed in one invocation (issue 41).

    .venv/bin/python scripts/bench_peers.py [--mcpower-python /tmp/mcp/bin/python] [--repeats 3]
                                            [--seconds 1.5] [--power-trials 500] [--no-power]

MCPower is never installed by this script nor into the project's environment. Install it into a throwaway
venv and name that venv's python (without one, or when MCPower does not import there, simdesign alone is
timed)::

    python3 -m venv /tmp/mcp && /tmp/mcp/bin/pip install mcpower==1.4.1 numpy

What is timed: time per simulated study including data generation, one thread each (BLAS, OpenMP and numba
here, ``RAYON_NUM_THREADS=1`` and ``set_n_threads(1)`` for MCPower's engine), median of ``--repeats``
interleaved rounds (a round: every simdesign measurement, then MCPower's, in a child process), each
measurement as many studies as fill about ``--seconds``. The load average is printed with every round.

Designs, 1,500 judgements each (5 systems):

* crossed intercepts: 3 annotators x 100 documents. simdesign: lmm_native (REML, Satterthwaite t, the test
  MCPower runs on crossed groupings) and clmm_native, structure intercepts; MCPower:
  ``score = system + (1|annotator) + (1|document)``, system a 5-level factor.
* one random slope per annotator: simdesign: lmm_native with ``annotator: slopes, document: intercept``
  (a slope per system and annotator: a 5 x 5 covariance per annotator, 15 parameters besides the document
  variance), the same on the first 2 systems of 3 annotators x 250 documents (1,500 judgements, a 2 x 2
  covariance: MCPower's model) and clmm_native maximal (the issue's comparison); MCPower cannot put a
  random slope on a factor, so its design is ``score = treatment + (1 + treatment|annotator) +
  (1|document)`` with a binary treatment (and, for reference, without the document term).
* nested: documents nested in annotators, 3 annotators x 100 documents each. simdesign: lmm_native and
  clmm_native, structure intercepts; MCPower: ``score = system + (1|annotator/document)``.

MCPower's study is its own generator and fit (``find_power`` with n simulations, divided by n: its set-up is
included, amortised over the simulations). simdesign's is ``model.sample`` of the coherence model plus
``run_analysis`` (the fit, the df and the p-values of all 10 pairs; MCPower tests 4 effects).

Power agreement (``--power-trials``): on the crossed design, MCPower's power for each system effect (its
own data and fits) against lmm_native's on data drawn in this script from MCPower's model, as MCPower
states it: ``score = sum_s beta_s [system = s] + u_annotator + v_document + e``, ``e ~ N(0, 1)``, effects
in units of the residual sd, a random intercept's variance ``ICC / (1 - ICC)`` (MCPower's conditional ICC),
the system drawn for each judgement with equal probabilities, the judgements spread evenly over the
annotator x document pairs (5 per pair). Both test each system against the first at 0.05 with Satterthwaite
df. The two powers agree when they differ by less than 2.6 standard errors of the difference (binomial,
99%). A second check sets every effect to 0.2: the model then says the four powers are equal, and each
tool's four are tested for it (MCPower's were not, on 2026-11-28: 0.640, 0.603, 0.608, 0.648 over 3,000
studies; lmm_native's 0.662, 0.671, 0.673, 0.657).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simdesign import BlockDesign, Judgements, load_model  # noqa: E402
from simdesign.significance import ANALYSES, run_analysis  # noqa: E402
from simdesign.core.threads import single_threaded  # noqa: E402

EFFECTS = (0.0, 0.1, 0.15, 0.2, 0.25)  # per system, residual sd units (MCPower: system[2..5])
ICC = 0.2
N_JUDGEMENTS = 1500

SIMDESIGN = {  # design -> [(label, design, test, options)]
    "crossed intercepts": [
        ("lmm_native intercepts", BlockDesign(1, 100, 3), "lmm_native", {"structure": "intercepts"}),
        ("clmm_native intercepts", BlockDesign(1, 100, 3), "clmm_native", {"structure": "intercepts"})],
    "one random slope per annotator": [
        ("lmm_native annotator slopes + document intercepts", BlockDesign(1, 100, 3), "lmm_native",
         {"structure": {"annotator": "slopes", "document": "intercept"}}),
        ("lmm_native 2 systems (MCPower's binary treatment), 3 x 250", BlockDesign(1, 250, 3), "lmm_native",
         {"structure": {"annotator": "slopes", "document": "intercept"}, "systems": 2}),
        ("clmm_native maximal", BlockDesign(1, 100, 3), "clmm_native", {"structure": "maximal"})],
    "nested": [
        ("lmm_native intercepts", BlockDesign(3, 100, 1), "lmm_native", {"structure": "intercepts"}),
        ("clmm_native intercepts", BlockDesign(3, 100, 1), "clmm_native", {"structure": "intercepts"})],
}

# MCPower's half: run in its own environment (a child process); prints one JSON line.
MCPOWER_CHILD = r'''
import json, sys, time
from mcpower import MCPower, _engine
_engine.set_n_threads(1)
effects, icc, n, seconds = json.loads(sys.argv[1])
system_effects = ", ".join(f"system[{k + 2}]={value}" for k, value in enumerate(effects[1:]))

def crossed():
    m = MCPower("score = system + (1|annotator) + (1|document)", family="lme")
    m.set_variable_type("system=(factor,5)"); m.set_effects(system_effects)
    m.set_cluster("annotator", ICC=icc, n_clusters=3); m.set_cluster("document", ICC=icc, n_clusters=100)
    return m

def slope_document():
    m = MCPower("score = treatment + (1 + treatment|annotator) + (1|document)", family="lme")
    m.set_variable_type("treatment=binary"); m.set_effects("treatment=0.2")
    m.set_cluster("annotator", ICC=icc, n_clusters=3, random_slopes=["treatment"], slope_variance=0.1)
    m.set_cluster("document", ICC=icc, n_clusters=100)
    return m

def slope_alone():
    m = MCPower("score = treatment + (1 + treatment|annotator)", family="lme")
    m.set_variable_type("treatment=binary"); m.set_effects("treatment=0.2")
    m.set_cluster("annotator", ICC=icc, n_clusters=3, random_slopes=["treatment"], slope_variance=0.1)
    return m

def nested():
    m = MCPower("score = system + (1|annotator/document)", family="lme")
    m.set_variable_type("system=(factor,5)"); m.set_effects(system_effects)
    m.set_cluster("annotator", ICC=icc, n_clusters=3); m.set_cluster("annotator:document", ICC=icc, n_per_parent=100)
    return m

def timed(build, sims, seed):
    model = build(); model.set_seed(seed); model.set_simulations(sims)
    start = time.perf_counter()
    result = model.find_power(sample_size=n, progress_callback=False, verbose=False)
    return time.perf_counter() - start, result

out = {}
designs = {"crossed intercepts": crossed, "one random slope per annotator": slope_document,
           "one random slope per annotator (no document term)": slope_alone, "nested": nested}
if len(sys.argv) > 2:  # the power check: one long run of the crossed design
    elapsed, result = timed(crossed, int(sys.argv[2]), 2021)
    print(json.dumps({"power": result["power_uncorrected"][0], "sims": int(sys.argv[2])})); sys.exit()
for name, build in designs.items():
    elapsed, _ = timed(build, 5, 1)  # warm-up, and the size of the real run
    sims = max(5, min(2000, int(seconds / max(elapsed / 5, 1e-6))))
    elapsed, _ = timed(build, sims, 2)
    out[name] = {"ms": 1000 * elapsed / sims, "sims": sims}
print(json.dumps(out))
'''


def _mcpower_round(python: str, seconds: float) -> dict | None:
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    done = subprocess.run([python, "-c", MCPOWER_CHILD, json.dumps([EFFECTS, ICC, N_JUDGEMENTS, seconds])],
                          capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        print(f"MCPower failed: {done.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mcpower_available(python: str | None) -> bool:
    if not python:
        return False
    try:
        done = subprocess.run([python, "-c", "import mcpower; print(mcpower.__version__ if hasattr(mcpower, "
                               "'__version__') else 'installed')"], capture_output=True, text=True, timeout=120)
    except OSError as exc:
        print(f"MCPower's python {python} cannot run ({exc}): simdesign alone")
        return False
    if done.returncode != 0:
        print(f"MCPower does not import in {python}: simdesign alone")
        return False
    print(f"MCPower {done.stdout.strip()} in {python}")
    return True


def lmm_native_pairs(judgements, structure) -> "PairwiseResult":
    """lmm_native's analysis (REML, Satterthwaite t of every pair) for any structure, a term -> form mapping
    too (the registry takes only the named structures): the fit, lmm_native's df step, the pairwise t."""
    from simdesign import lmm
    from simdesign.significance.base import FAILURES, PairwiseResult, pairwise_from_fit, system_pairs
    from simdesign.significance.lmm_native import _tested

    fit = lmm.fit(judgements, structure)
    n_pairs = len(system_pairs(len(fit.systems)))
    if fit.status in FAILURES:
        return PairwiseResult.failed(n_pairs, fit.status, fit.message)
    covariance, pair_df, status, message = _tested(fit, "satterthwaite")
    if status in FAILURES:
        return PairwiseResult.failed(n_pairs, status, message)
    return pairwise_from_fit(np.concatenate([[0.0], fit.beta[1:]]), covariance[1:, 1:], pair_df, "none", status,
                             message)


def _simdesign_study(model, design, info, options, seed) -> None:
    study = model.sample(design, np.random.default_rng(seed))
    if "systems" in options:  # the study's first systems only (2: a binary treatment)
        keep = options["systems"]
        study = Judgements(scores=study.scores[:, :keep], annotator=study.annotator, document=study.document,
                           block=study.block, systems=tuple(study.systems[:keep]))
    if isinstance(options["structure"], dict):
        lmm_native_pairs(study, options["structure"])
    else:
        run_analysis(info, study, None, options)


def _simdesign_round(model, counts: dict, seconds: float) -> dict:
    """Milliseconds per study of every simdesign measurement (studies drawn inside the timing)."""
    out = {}
    for design_name, entries in SIMDESIGN.items():
        for label, design, test, options in entries:
            key = (design_name, label)
            info = ANALYSES[test]
            if key not in counts:  # first round: warm-up (imports, compiled kernels) and the run's size
                _simdesign_study(model, design, info, options, 0)
                start = time.perf_counter()
                _simdesign_study(model, design, info, options, 1)
                counts[key] = int(max(3, min(2000, seconds / max(time.perf_counter() - start, 1e-6))))
            start = time.perf_counter()
            for seed in range(counts[key]):
                _simdesign_study(model, design, info, options, 1000 + seed)
            out[key] = 1000 * (time.perf_counter() - start) / counts[key]
    return out


def _mcpower_like_study(rng, effects=None) -> "pandas.DataFrame":
    """One study of MCPower's crossed model (the module docstring), as a long table."""
    import pandas as pd

    effects = EFFECTS if effects is None else effects
    n = N_JUDGEMENTS
    annotator = np.arange(n) % 3
    document = (np.arange(n) // 3) % 100
    system = rng.integers(0, len(effects), n)
    system[:len(effects)] = np.arange(len(effects))  # lmm_native orders the systems as they appear: s1 first
    tau = np.sqrt(ICC / (1.0 - ICC))
    score = (np.asarray(effects)[system] + tau * rng.standard_normal(3)[annotator]
             + tau * rng.standard_normal(100)[document] + rng.standard_normal(n))
    return pd.DataFrame({"annotator": annotator, "document": document, "system": [f"s{k + 1}" for k in system],
                         "score": score})


def _lmm_native_power(trials: int, effects=None) -> tuple:
    """Per system 2..5, the share of studies whose lmm_native Satterthwaite test against system 1 rejects."""
    from simdesign.stats.contrasts import system_pairs

    rng = np.random.default_rng(41)
    rejections = np.zeros(len(EFFECTS) - 1)
    usable = 0
    pairs = system_pairs(len(EFFECTS))
    against_first = [pairs.index((0, j)) for j in range(1, len(EFFECTS))]
    for _ in range(trials):
        result = lmm_native_pairs(_mcpower_like_study(rng, effects), "intercepts")
        if result.fit_status in ("ok", "singular"):
            usable += 1
            rejections += result.p_value[against_first] < 0.05
    return rejections / max(usable, 1), usable


EQUAL_EFFECTS = (0.0, 0.2, 0.2, 0.2, 0.2)  # every system 0.2 above the first: the four powers must be equal


def _power_check(python: str | None, trials: int, effects=EFFECTS) -> None:
    """Both tools' power per system on the crossed design; with EQUAL_EFFECTS also whether each tool's four
    powers are equal, as the model says (a chi-square test of homogeneity of the four rejection counts, which
    treats them as independent: conservative, as they share the reference system)."""
    print(f"\npower on the crossed design (effects {effects[1:]} residual sd, ICC {ICC} for both terms, "
          f"alpha 0.05, Satterthwaite df):")
    ours, usable = _lmm_native_power(trials, effects)
    line = "  system     " + "  ".join(f"s{k + 2:<6d}" for k in range(len(ours)))
    print(line)
    print(f"  lmm_native {'  '.join(f'{value:.3f}  ' for value in ours)}({usable} studies)")
    if not python:
        return
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    done = subprocess.run([python, "-c", MCPOWER_CHILD, json.dumps([effects, ICC, N_JUDGEMENTS, 1.0]), str(trials)],
                          capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        print(f"  MCPower failed: {done.stderr.strip().splitlines()[-1:]}")
        return
    theirs = np.asarray(json.loads(done.stdout.strip().splitlines()[-1])["power"], float)
    print(f"  MCPower    {'  '.join(f'{value:.3f}  ' for value in theirs)}({trials} studies)")
    se = np.sqrt(ours * (1 - ours) / max(usable, 1) + theirs * (1 - theirs) / trials)
    z = np.abs(ours - theirs) / np.maximum(se, 1e-12)
    verdict = "agree" if np.all(z < 2.6) else "DIFFER"
    print(f"  |difference| / se: {'  '.join(f'{value:.2f}' for value in z)}  -> {verdict} within Monte-Carlo error")
    if effects == EQUAL_EFFECTS:
        from scipy import stats

        for name, power, n in (("lmm_native", ours, max(usable, 1)), ("MCPower", theirs, trials)):
            counts = np.round(power * n)
            table = np.stack([counts, n - counts])
            p_value = stats.chi2_contingency(table)[1]
            print(f"  {name}: the four equal effects' powers {'differ' if p_value < 0.01 else 'agree'} "
                  f"(homogeneity p = {p_value:.2g})")


def _print_round(label: str, times: dict) -> None:
    print(f"  {label}: " + ", ".join(f"{key if isinstance(key, str) else key[1]} {value:.3f}"
                                    for key, value in times.items()) + f"  (load {os.getloadavg()})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mcpower-python", default=os.environ.get("MCPOWER_PYTHON", "/tmp/mcp/bin/python"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5, help="length of each measurement")
    parser.add_argument("--power-trials", type=int, default=500)
    parser.add_argument("--no-power", action="store_true")
    args = parser.parse_args()
    python = args.mcpower_python if _mcpower_available(args.mcpower_python) else None
    model = load_model("coherence")
    counts, ours, theirs = {}, [], []
    print(f"ms per simulated study with data generation, one thread; load before {os.getloadavg()}")
    with single_threaded():
        for round_number in range(args.repeats):
            ours.append(_simdesign_round(model, counts, args.seconds))
            _print_round(f"round {round_number + 1} simdesign", ours[-1])
            if python:
                theirs.append(_mcpower_round(python, args.seconds) or {})
                _print_round(f"round {round_number + 1} MCPower", {k: v["ms"] for k, v in theirs[-1].items()})
    _report(ours, theirs, counts)
    if not args.no_power:
        _power_check(python, args.power_trials)
        _power_check(python, args.power_trials, EQUAL_EFFECTS)
    print(f"load after {os.getloadavg()}")


def _report(ours: list, theirs: list, counts: dict) -> None:
    print(f"\nmedian of {len(ours)} interleaved rounds (ms per study; studies per measurement in brackets):")
    for design_name, entries in SIMDESIGN.items():
        peer = [round_[design_name]["ms"] for round_ in theirs if design_name in round_]
        peer_ms = statistics.median(peer) if peer else None
        print(f"{design_name}: MCPower " + (f"{peer_ms:.3f}" if peer_ms else "not run"))
        extra = f"{design_name} (no document term)"
        alone = [round_[extra]["ms"] for round_ in theirs if extra in round_]
        if alone:
            print(f"  MCPower without the document term {statistics.median(alone):.3f}")
        for label, *_ in entries:
            ms = statistics.median(round_[(design_name, label)] for round_ in ours)
            ratio = f"  = {ms / peer_ms:.3g} x MCPower" if peer_ms else ""
            print(f"  simdesign {label} {ms:.3f} [{counts[(design_name, label)]}]{ratio}")


if __name__ == "__main__":
    main()
