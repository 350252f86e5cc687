"""A native linear mixed model (``lmm_native``), fitted as ``lme4::lmer`` fits it.

The model, for judgement i of system s by annotator a on document d, the score taken as interval data::

    y_i = beta_s + z_s . u_a + z_s . v_d + e_i,     z_s = (1, e_s) (treatment coding), or z_s = 1
    u_a ~ N(0, sigma^2 L_A L_A'),  v_d ~ N(0, sigma^2 L_D L_D'),  e_i ~ N(0, sigma^2)

with the structures of ``clmm_native`` and ``lmer`` ('maximal', 'intercepts', 'paper' or a mapping
term -> form; :func:`simdesign.clmm.term_forms`), is fitted by REML (default) or ML.

Method (Bates, Maechler, Bolker and Walker 2015, "Fitting linear mixed-effects models using lme4", JSS
67(1), section 3): theta holds the lower-triangular relative covariance factors ``L`` of the terms
(column-major, lme4's order within a term; diagonals bounded below by 0, lme4's convention), ``Lambda``
is their block-diagonal expansion and ``A = Lambda' Z' Z Lambda + I``. The penalised least-squares
problem gives, with ``W = Lambda' Z' [X y]``, the reduced matrix ``M = [X y]'[X y] - W' A^-1 W``, whose
X block is ``R_X' R_X``, the fixed effects ``beta = M_XX^-1 M_Xy`` and the penalised residual sum of
squares ``r^2 = M_yy - M_yX beta``. The profiled criteria are lme4's::

    REML: log|A| + log|M_XX| + (n - p) (1 + log(2 pi r^2 / (n - p)))
    ML:   log|A| + n (1 + log(2 pi r^2 / n))

Structure: with two terms, the one with more levels (documents, usually) is eliminated block by block
(its q x q diagonal blocks of A are independent given the other term), and only the Schur complement
of the other term (annotators x q) is factorised densely; all sums over judgements are made once per
study, per (annotator, document) pair, so an evaluation costs O(pairs q^3), not O(n).

Random intercepts only (crossed or nested, or one term) take a fast path, :mod:`simdesign.lmm.structured`:
the profiled deviance from sufficient statistics grouped by level count (one q x q matrix in a balanced
design), optimised by projected Newton in the variance ratios with analytic Hessian, and lmerTest's
Satterthwaite pieces by the chain rule; compiled by numba when installed (:mod:`simdesign.lmm.compiled`),
the same numbers as the general path below (``fit(..., fast=False)``; tests/test_lmm_structured.py).
One term with random slopes and at most one intercept term (``{'annotator': 'slopes', 'document':
'intercept'}``, lme4's ``(1 + system | annotator) + (1 | document)``, or 'paper' on nested data) takes the
slopes path, :mod:`simdesign.lmm.slopes`: the intercept term profiled out per level in closed form from the
same kind of sufficient statistics, a trust-region Newton method in theta with the analytic Hessian (lme4's
bounds only fix the signs of L's columns: they are set after the fit), lmerTest's Satterthwaite pieces from
the same forms (tests/test_lmm_slopes.py).

theta is optimised by L-BFGS-B with the analytic gradient below, from lme4's start (identity factors);
a fit stuck where a factor's diagonal element is 0 is refitted from there with that element moved off
the boundary (``fitting.ESCAPE_*``), and the lowest criterion is kept. Status as lme4: 'singular' when
a bounded element of theta is below 1e-4 (isSingular), 'not_converged' when the projected gradient
exceeds 0.002, 'error' when lme4 would refuse the data (a grouping factor with one level, or at least as
many random effects as judgements).

Small-sample df (:mod:`simdesign.lmm.small_sample`): lmerTest's Satterthwaite df (Hessian of the (RE)ML
deviance in (theta, sigma) and Jacobian of the fixed effects' covariance, both analytic here where
lmerTest differentiates numerically) and pbkrtest's Kenward-Roger adjusted covariance and df. Both use
quadratic forms in powers of ``V^-1`` reduced to the random effects' size (never n x n).

Notes
-----
The gradient. For ``theta_k`` with ``Lambda_k = dLambda/dtheta_k`` (``I (x) e_r e_c'`` on its term),
``Gamma = A^-1 W`` and ``R = Z'([X y] - Z Lambda Gamma)``::

    d log|A| = 2 tr(A^-1 Lambda' Z' Z Lambda_k)
    dM       = -(R' Lambda_k Gamma + Gamma' Lambda_k' R)
    d r^2    = c' dM c,  c = (-beta, 1)
    d REML   = d log|A| + tr(M_XX^-1 dM_XX) + (n - p) d r^2 / r^2

(ML: no middle term, n for n - p). Only the diagonal level blocks of ``A^-1 Lambda' Z' Z`` are needed;
they come from the same block elimination (the eliminated term's diagonal blocks of ``A^-1`` and its
blocks at observed (annotator, document) pairs).

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> from simdesign import lmm
>>> study = load_model("coherence").sample(BlockDesign(2, 10, 3), np.random.default_rng(1))
>>> fit = lmm.fit(study, "intercepts")
>>> fit.status in ("ok", "singular"), len(fit.beta)
(True, 5)
"""
from simdesign.lmm.fitting import LmmResult, fit, warm_up  # noqa: F401

__all__ = ["LmmResult", "fit", "warm_up"]
