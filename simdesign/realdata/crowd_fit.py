"""Fit the worker-level crowd model (:mod:`simdesign.model.crowd`) to a real crowd pilot table.

Input: a long CSV table, one row per judgement, with columns ``item``, ``worker``, ``score`` (values of
the scale, default 1..5) and optionally ``seconds`` (time per judgement). One criterion per table.

The fit is maximum likelihood of the module's single-output model with its cut points fixed (they fix the
latent scale's origin and unit): every item has a latent quality mu_i; a worker is a spammer (probability
pi, answers from a distribution of their own as MACE models spammers: the uniform one or, with equal prior
weight, any other, integrated over a uniform Dirichlet prior) or answers the category of mu_i + b_w + s_w e (e standard logistic,
ordinal logit). EM over the workers' spammer status, with the M-step as coordinate ascent: each worker's
(b_w, log s_w) by a 2-parameter Newton-type optimisation (scipy's L-BFGS-B), each item's mu_i by a
1-parameter one, weighted by the workers' posterior probabilities of being honest. The worker model's
values follow: ``spammer_share`` = pi, ``noise`` = the geometric mean of the honest workers' s_w,
``noise_spread`` = the SD of their log s_w, ``leniency_sd`` = the SD of their b_w, and each criterion's
``item_sd`` = the SD of the mu_i. With some 26 judgements per worker each s_w and b_w carries estimation
error, so both spreads are biased upwards (the SDs of estimates, not of the true values; a simulated pilot
shows how much: tests/test_crowd_fit.py). Also per worker: MACE's competence theta_w
(:func:`simdesign.stats.aggregation.mace`) and the agreement of their scores with the other workers' mean on
the same items (Pearson).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special

from simdesign.core.errors import DataError
from simdesign.model.crowd import ItemStructure
from simdesign.stats.aggregation import mace_fit

COLUMNS = ("item", "worker", "score")
SPAM_CONCENTRATION = 1.0  # symmetric Dirichlet prior of a spammer's own answer distribution (uniform on the simplex)


def read_crowd_pilot(path, scale=(1, 2, 3, 4, 5)) -> pd.DataFrame:
    """Read and check a crowd pilot CSV (module docstring); DataError naming the column or the lines."""
    from simdesign.tables.judgements import read_table_csv

    frame = read_table_csv(path, required=COLUMNS)
    return check_crowd_pilot(frame, scale)


def check_crowd_pilot(frame: pd.DataFrame, scale=(1, 2, 3, 4, 5)) -> pd.DataFrame:
    """The table with ``score`` (and ``seconds``) numeric; DataError naming missing columns or bad lines."""
    from simdesign.tables.judgements import _rows

    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise DataError(f"The crowd pilot table needs the columns {list(COLUMNS)} (optional: seconds); missing "
                        f"{missing}; its columns: {list(frame.columns)}")
    problems = []
    for column in ("item", "worker"):
        empty = frame[column].isna() | (frame[column].astype(str).str.strip() == "")
        if empty.any():
            problems.append(f"The '{column}' column is empty on line(s) {_rows(frame, empty)}")
    score = pd.to_numeric(frame["score"], errors="coerce")
    off = score.isna() | ~score.isin(list(scale))
    if off.any():
        problems.append(f"The 'score' column must hold values of the scale {list(scale)}; line(s) "
                        f"{_rows(frame, off)} do not (e.g. {frame['score'][off].iloc[0]!r})")
    if "seconds" in frame.columns:
        seconds = pd.to_numeric(frame["seconds"], errors="coerce")
        bad = seconds.isna() | (seconds <= 0)
        if bad.any():
            problems.append(f"The 'seconds' column must hold numbers > 0; line(s) {_rows(frame, bad)} do not")
    twice = frame.duplicated(["item", "worker"], keep=False)
    if twice.any():
        problems.append(f"A worker judges an item once; line(s) {_rows(frame, twice)} repeat an (item, worker)")
    if problems:
        raise DataError(problems)
    out = frame.assign(score=score.astype(int))
    if "seconds" in frame.columns:
        out["seconds"] = pd.to_numeric(frame["seconds"])
    if out["worker"].nunique() < 3 or out["item"].nunique() < 3:
        raise DataError(f"The crowd pilot table needs at least 3 items and 3 workers; got "
                        f"{out['item'].nunique()} items and {out['worker'].nunique()} workers")
    if out["score"].nunique() == 1:
        # Refused, not warned about: with no variation nothing is estimable (item spread, leniency, noise and
        # spammers all fit a constant), and the fit printed SDs of 1e-11 as config values a crowd study
        # would then simulate, a crowd that never disagrees.
        raise DataError(f"Every score in the crowd pilot table is {out['score'].iloc[0]} ({len(out)} judgements): "
                        "with no variation the worker model cannot be estimated (item spread, leniency, noise and "
                        "the spammer share all fit a constant); check the 'score' column and the export")
    return out


@dataclass
class CrowdFit:
    """A fitted worker model.

    Attributes
    ----------
    workers : pandas.DataFrame
        Per worker: judgements, leniency b, noise s, honest (posterior probability), mace_competence,
        agreement, and median seconds when the table has them.
    items : pandas.DataFrame
        Per item: judgements, mu.
    settings : dict
        The ``workers`` values for a crowd config (spammer_share, noise, noise_spread, leniency_sd) and the
        criterion's ``item_sd``.
    log_likelihood : float
    mace_starts : tuple of int or None
        (EM starts of MACE that reached its best log-likelihood, starts run); None when MACE was not fitted
        (items with different numbers of judgements).
    """

    workers: pd.DataFrame
    items: pd.DataFrame
    settings: dict
    log_likelihood: float
    mace_starts: tuple | None = None

    def config_text(self) -> str:
        """The fitted values as the ``workers`` and ``criteria`` blocks of a crowd-study config."""
        s = self.settings
        return (f"workers: {{spammer_share: {s['spammer_share']:.3g}, noise: {s['noise']:.3g}, noise_spread: "
                f"{s['noise_spread']:.3g}, leniency_sd: {s['leniency_sd']:.3g}}}\n"
                f"criteria: {{pilot: {{item_sd: {s['item_sd']:.3g}}}}}")


def _ordinal_terms(latent_mean, log_noise, category, cuts):
    """log P(answer category) of the ordinal logit with fixed cut points, and its derivatives in the latent
    mean and in log noise (for the analytic gradient)."""
    noise = np.exp(log_noise)
    upper = np.append(cuts, np.inf)[category]
    lower = np.insert(cuts, 0, -np.inf)[category]
    z_high, z_low = (upper - latent_mean) / noise, (lower - latent_mean) / noise
    f_high, f_low = special.expit(z_high), special.expit(z_low)
    probability = np.clip(f_high - f_low, 1e-300, None)
    d_high, d_low = f_high * (1 - f_high), f_low * (1 - f_low)
    # z * density is 0 at an infinite cut
    with np.errstate(invalid="ignore"):
        zd_high = np.where(np.isfinite(z_high), z_high * d_high, 0.0)
        zd_low = np.where(np.isfinite(z_low), z_low * d_low, 0.0)
    return np.log(probability), -(d_high - d_low) / (noise * probability), -(zd_high - zd_low) / probability


def _m_step(mu, leniency, log_noise, weight, items, workers, category, cuts):
    """Maximise the honest-weighted log-likelihood over (mu, b, log s) jointly (L-BFGS, analytic gradient).

    The latent origin is fixed by the cut points up to a shift between items and workers: a penalty holds the
    workers' mean leniency at 0; a weak ridge (0.01) keeps the parameters of workers with weight near 0 finite.
    """
    n_items, n_workers = len(mu), len(leniency)

    def objective(params):
        m, b, lam = params[:n_items], params[n_items:n_items + n_workers], params[n_items + n_workers:]
        log_p, d_mean, d_lam = _ordinal_terms(m[items] + b[workers], lam[workers], category, cuts)
        w = weight[workers]
        value = -(w * log_p).sum() + 0.5 * 0.01 * ((b ** 2).sum() + (lam ** 2).sum()) + 50.0 * n_workers * b.mean() ** 2
        grad_m = -np.bincount(items, weights=w * d_mean, minlength=n_items)
        grad_b = -np.bincount(workers, weights=w * d_mean, minlength=n_workers) + 0.01 * b + 100.0 * b.mean()
        grad_lam = -np.bincount(workers, weights=w * d_lam, minlength=n_workers) + 0.01 * lam
        return value, np.concatenate([grad_m, grad_b, grad_lam])

    start = np.concatenate([mu, leniency, log_noise])
    bounds = [(-8, 8)] * n_items + [(-5, 5)] * n_workers + [(-3, 3)] * n_workers
    found = optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds).x
    return found[:n_items], found[n_items:n_items + n_workers], found[n_items + n_workers:]


def _spam_log_likelihood(workers, category, n_workers: int, n_categories: int,
                         concentration: float = SPAM_CONCENTRATION) -> np.ndarray:
    """Per worker, log P(their answers | spammer): answers drawn from a distribution xi_w of their own.

    As in MACE (Hovy et al. 2013), a spammer answers from a distribution of their own, not necessarily
    uniform: a spammer who favours one end of the scale is far from uniform, and an honest worker with much
    noise explains their answers better than the uniform distribution does, so a uniform-only model finds
    none of them. xi_w is the uniform distribution or, with equal prior probability, any other, integrated
    out over a uniform Dirichlet prior (the Dirichlet-multinomial probability of the worker's answers), rather
    than set to the worker's answer shares: with some 10-30 answers per worker the shares fit any worker's
    answers closely (K - 1 free values): in 6 simulated pilots (40 workers judging 10 of 40 items each, 20%
    spammers) the maximised spam likelihood flagged 89 workers, 56 of them honest. The mixture found 47 of
    51 skewed spammers in 6 paper-sized pilots (46 workers, 24 per item, 50 items; the uniform-spammer model:
    13) with 2 honest workers flagged, and 9 of the 13 uniform spammers of examples/crowd_pilot.csv (none
    honest).
    """
    counts = np.bincount(workers * n_categories + category,
                         minlength=n_workers * n_categories).reshape(n_workers, n_categories).astype(float)
    alpha = concentration
    own = (special.gammaln(n_categories * alpha) - special.gammaln(counts.sum(axis=1) + n_categories * alpha)
           + (special.gammaln(counts + alpha) - special.gammaln(alpha)).sum(axis=1))
    uniform = counts.sum(axis=1) * np.log(1.0 / n_categories)
    # half the prior mass on the uniform distribution itself: integrating costs a uniform spammer about
    # (K - 1)/2 log n nats of evidence, which hid most of the uniform spammers of examples/crowd_pilot.csv
    return np.logaddexp(np.log(0.5) + uniform, np.log(0.5) + own)


def fit_crowd_pilot(frame: pd.DataFrame, scale=(1, 2, 3, 4, 5), cuts=None, iterations: int = 50,
                    tol: float = 1e-4) -> CrowdFit:
    """Fit the worker model to a checked pilot table (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns item, worker, score (and optionally seconds); see :func:`check_crowd_pilot`.
    scale : sequence of int, default 1..5
    cuts : sequence of float, optional
        The latent cut points; default :class:`~simdesign.model.crowd.ItemStructure`'s for the scale's length.
    iterations : int, default 50
        EM iterations at most.
    tol : float, default 1e-4
        Stop when the log-likelihood improves by less.

    Returns
    -------
    CrowdFit
    """
    frame = check_crowd_pilot(frame, scale)
    scale = np.asarray(list(scale))
    cuts = ItemStructure(points=len(scale)).cuts() if cuts is None else np.asarray(cuts, dtype=float)
    item_codes, item_names = pd.factorize(frame["item"])
    worker_codes, worker_names = pd.factorize(frame["worker"])
    category = np.searchsorted(scale, frame["score"].to_numpy())
    n_items, n_workers = len(item_names), len(worker_names)
    # start: items at their mean score's latent position, workers honest with noise 1 and no leniency
    centre = (cuts[:-1] + cuts[1:]) / 2
    positions = np.concatenate([[cuts[0] - 1], centre, [cuts[-1] + 1]])
    mu = np.bincount(item_codes, weights=positions[category], minlength=n_items) / np.bincount(item_codes)
    leniency, log_noise = np.zeros(n_workers), np.zeros(n_workers)
    spam_share, honest = 0.1, np.full(n_workers, 0.9)
    spam_ll = _spam_log_likelihood(worker_codes, category, n_workers, len(scale))
    previous = -np.inf
    for _ in range(iterations):
        log_p = _ordinal_terms(mu[item_codes] + leniency[worker_codes], log_noise[worker_codes], category, cuts)[0]
        honest_ll = np.bincount(worker_codes, weights=log_p, minlength=n_workers)
        a, b = np.log1p(-spam_share) + honest_ll, np.log(spam_share) + spam_ll
        total = np.logaddexp(a, b)
        log_likelihood = float(total.sum())
        honest = np.exp(a - total)
        spam_share = float(np.clip(1 - honest.mean(), 1e-4, 1 - 1e-4))
        if log_likelihood - previous < tol:
            break
        previous = log_likelihood
        mu, leniency, log_noise = _m_step(mu, leniency, log_noise, honest, item_codes, worker_codes, category, cuts)
    is_honest = honest >= 0.5
    workers = pd.DataFrame({"worker": worker_names, "judgements": np.bincount(worker_codes, minlength=n_workers),
                            "leniency": leniency, "noise": np.exp(log_noise), "honest": honest})
    workers["mace_competence"], mace_starts = _mace_competence(item_codes, worker_codes, frame["score"].to_numpy(),
                                                               scale, n_workers)
    workers["agreement"] = _agreement(item_codes, worker_codes, frame["score"].to_numpy(float), n_workers)
    if "seconds" in frame.columns:
        workers["median_seconds"] = frame.groupby(worker_codes)["seconds"].median().to_numpy()
    kept = is_honest if is_honest.sum() >= 2 else np.ones(n_workers, dtype=bool)
    settings = {"spammer_share": spam_share, "noise": float(np.exp(log_noise[kept].mean())),
                "noise_spread": float(log_noise[kept].std(ddof=1)), "leniency_sd": float(leniency[kept].std(ddof=1)),
                "item_sd": float(mu.std(ddof=1))}
    items = pd.DataFrame({"item": item_names, "judgements": np.bincount(item_codes, minlength=n_items), "mu": mu})
    return CrowdFit(workers=workers, items=items, settings=settings, log_likelihood=log_likelihood,
                    mace_starts=mace_starts)


def _mace_competence(items, workers, scores, scale, n_workers) -> tuple[np.ndarray, tuple | None]:
    """MACE's theta per worker when every item has the same number of judgements (mace takes a rectangular
    table), and (starts that reached the best log-likelihood, starts); NaN and None for a table whose items
    have different counts."""
    counts = np.bincount(items)
    if np.all(counts == counts[0]):
        order = np.lexsort((workers, items))
        ratings = scores[order].reshape(len(counts), -1)
        who = workers[order].reshape(len(counts), -1)
        fit = mace_fit(ratings, who, scale)
        present = np.unique(who)
        out = np.full(n_workers, np.nan)
        out[present] = fit.competence
        return out, (fit.agreed, fit.starts)
    return np.full(n_workers, np.nan), None


def _agreement(items, workers, scores, n_workers) -> np.ndarray:
    """Pearson correlation of each worker's scores with the mean of the other workers on the same items."""
    total = np.bincount(items, weights=scores)
    count = np.bincount(items)
    with np.errstate(invalid="ignore", divide="ignore"):
        others = (total[items] - scores) / (count[items] - 1)
    out = np.full(n_workers, np.nan)
    for w in range(n_workers):
        rows = workers == w
        if rows.sum() > 2 and np.ptp(scores[rows]) > 0 and np.ptp(others[rows]) > 0:
            out[w] = np.corrcoef(scores[rows], others[rows])[0, 1]
    return out
