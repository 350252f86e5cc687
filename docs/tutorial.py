# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Learning simdesign: what an annotation design does to your significance tests
#
# You have built a few NLP systems (say, five summarisers) and you want people to judge their outputs
# on a 1-7 Likert scale. Before paying anyone, two questions decide whether the study can answer
# anything:
#
# * **Type I error.** If the systems are in truth equally good, how often will your test still say
#   "significant"? It should be 5% at alpha = 0.05.
# * **Power.** If they do differ (by as much as the systems in Steen & Markert, 2021), how often will
#   your test find it?
#
# Both depend on the *annotation design*: how many annotators you hire and who judges which documents.
# simdesign answers them by simulation. It draws thousands of synthetic studies from a statistical
# model of Likert judgements (fitted to real ones), runs your tests on each, and counts.
#
# This notebook walks through the lessons of the paper with small simulations (a few hundred synthetic
# studies each, so it runs in a couple of minutes). Small runs mean wide uncertainty: every rate
# below comes with its 95% interval, and the committed figures in `figures/` (1000 studies per point)
# are the precise versions.
#
# Run it from the repository's root folder (where `configs/` is), or from `docs/`.

# %%
# %matplotlib inline
# (simdesign returns matplotlib Figures and leaves the backend alone; the line above shows them in Jupyter)
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore", message="IProgress not found")  # progress bars are off here anyway
import simdesign
from simdesign.outputs import precomputed_curves

if Path.cwd().name == "docs":  # opened from docs/: work from the repository root
    os.chdir("..")
JOBS = 2  # parallel workers; the results do not depend on it


# %% [markdown]
# ## 1. Why tests on dependent judgements lie (Figure 4 in miniature)
#
# Take 100 documents, each summarised by 5 systems, and let every summary be judged 3 times. There
# are many ways to hand out this work. At one extreme, **3 annotators judge everything** (a *crossed*
# design: one block of 100 documents). At the other, **300 annotators judge one document each**
# (100 blocks of one document, 3 annotators per block). Same number of judgements, very different
# studies.
#
# The usual analysis compares two systems with a paired t-test over all judgements (`ttest`) or over
# per-document averages (`ttest_doc`). Both assume the pairs are independent. But an annotator who is
# harsh on system A's summaries is harsh on all of them: with 3 annotators, every judgement of A
# shares one of only 3 such tastes. The test mistakes those shared tastes for a difference between
# the systems.
#
# We simulate the null hypothesis (`effect: zero`: the systems are equally good) with the
# `coherence` model, so every rejection is a false alarm.

# %%
figure4 = {
    "name": "fig4-mini",
    "model": "coherence",
    "effect": "zero",
    "designs": [{"kind": "block", "blocks": [1, 20, 100], "docs_per_block": [100, 5, 1],
                 "annotators_per_block": 3}],
    "tests": ["ttest", "ttest_doc"],
    "trials": 200,
    "seed": 2021,
}
null_run = simdesign.simulate(figure4, jobs=JOBS, progress=False)
null_run.table("type1", design_info=True)

# %% [markdown]
# `table` shows one estimand, designs by tests. Each cell is the share of tests that rejected a true
# null hypothesis (over 200 studies x 10 pairs of systems), with its 95% interval in brackets
# (`null_run.summary()` has every number: Monte-Carlo standard errors, failed tests, other estimands). With 3 annotators the tests say "significant" in roughly 40% of
# the comparisons where nothing differs, eight times the 5% they promise. With 60 annotators it is
# much better, and only with one document per annotator (300 annotators) are the per-document tests
# near 5%.
#
# The full-size figure (1000 studies per point, eight designs, two more tests) ships with simdesign,
# with its numbers:

# %%
curves = precomputed_curves("paper_fig4_coherence")
curves[curves["test"].isin(["ttest", "ttest_doc"])].pivot(index="annotators", columns="test",
                                                             values="rate").round(3)

# %%
null_run.plot()

# %% [markdown]
# ## 2. Why the total number of annotators matters (Figure 5)
#
# The fix is not to find a cleverer test on the same data, but to collect the data so that the
# units the test treats as independent really are. In a **block design** the documents are split
# into blocks, and each block gets its own annotators. Blocks share nobody, so a test on per-block
# averages (`ttest_block`, or the paper's randomisation test `art_block`, "ARTagg") holds its level.
# Its power then depends on the number of blocks, that is on how many annotators you hire in total,
# more than on the number of judgements.
#
# Here the systems *do* differ (`effect: fitted`, the differences the paper found), and every design
# has the same 100 documents with 3 judgements each: only the number of annotators changes, from 6
# to 60.

# %%
figure5 = {
    "name": "fig5-mini",
    "model": "coherence",
    "effect": "fitted",
    "designs": [{"kind": "block", "blocks": [2, 5, 10, 20], "docs_per_block": [50, 20, 10, 5],
                 "annotators_per_block": 3}],
    "tests": ["ttest_block", "art_block"],
    "trials": 100,
    "seed": 2021,
    "art_resamples": 200,
}
power_run = simdesign.simulate(figure5, jobs=JOBS, progress=False)
power_run.table("power", design_info=True)

# %% [markdown]
# The same number of judgements (so about the same pay), but power grows with the number of
# annotators. With 2 or 5 blocks `art_block` never rejects: an exact randomisation test over B
# blocks has 2^B sign patterns, so its p-value cannot go below 2 / 2^B (0.5 with 2 blocks, 0.0625
# with 5). Few blocks means few independent units, whatever the number of judgements.
#
# The paper's Figure 5 uses an ordinal mixed-effects regression instead (in simdesign:
# `{"name": "clmm_native", "structure": "paper"}`), which models each annotator and document. It is
# much slower per study, so it is left out here; see `figures/paper_fig5_coherence.png` for the full
# figure, and the README's "Reproducing the paper": the mixed model, too, rejects a true null too
# often when there are very few annotators.

# %% [markdown]
# ## 3. Nested or crossed? (Figure 7)
#
# Suppose you can afford a fixed number of judgements. Should each annotator judge *their own*
# documents (a **nested** design: one annotator per block), or should several annotators judge the
# *same* documents (a **crossed** design within each block: 3 annotators per block)? Both designs
# below have blocks of 5 documents; the nested one uses three times as many blocks, so the
# number of judgements is the same (750 and 1500).

# %%
figure7 = {
    "name": "fig7-mini",
    "model": "coherence",
    "effect": "fitted",
    "designs": [
        {"kind": "block", "blocks": [30, 60], "docs_per_block": 5, "annotators_per_block": 1},  # nested
        {"kind": "block", "blocks": [10, 20], "docs_per_block": 5, "annotators_per_block": 3},  # crossed
    ],
    "tests": ["ttest_block"],
    "trials": 200,
    "seed": 2021,
    "figure": {"x": "judgements", "estimand": "power", "colour": "shape"},
}
nested_run = simdesign.simulate(figure7, jobs=JOBS, progress=False)
nested_run.table("power", design_info=True)

# %%
nested_run.plot()

# %% [markdown]
# At the same number of judgements the nested design has more power: with as many annotators it
# sees three times as many documents, and each new document brings fresh information, while a
# second or third judgement of an already-judged document partly repeats what the first said.
# (The paper found the same with its mixed model; `figures/paper_fig7_coherence.png`.) The price:
# a nested design cannot tell you how much annotators agree, because nobody judges the same
# document twice.

# %% [markdown]
# ## 4. Planning a study on a budget
#
# `simdesign.plan` searches designs for you. Give it a cost model (pay per hour, seconds per
# judgement, a fixed cost per annotator), a budget, the tests you would use and a search space; it
# simulates every candidate briefly, spends more studies only on those that could still win, checks
# that the chosen test holds its type I error on that design, and confirms the winner on fresh
# studies. Here: the most powerful design for 150 EUR, judged by its weakest pair of systems, with
# effects scaled so that the two closest systems differ by half a Likert point.
#
# The search is kept tiny (8 candidates, one of them over budget; at most 80 studies each) so that
# it runs in well under a minute. With so few studies a test can only be *shown* to hold a loose
# type I limit, so we ask for 10% (`max_type1`); the default, 7.5%, needs several hundred studies
# per candidate, as in `configs/plan_budget.yaml`.

# %%
budget_plan = {
    "name": "plan-mini",
    "model": "repetition",
    "effect": {"min_difference": 0.5, "unit": "likert"},
    "tests": ["ttest_block"],
    "budget": 150,
    "power_over": "each_pair",
    "power_tolerance": 0.1,
    "cost": {"currency": "EUR", "pay_per_hour": 12.0, "seconds_per_judgement": "auto", "per_annotator": 3.0},
    "limits": {"max_judgements_per_annotator": 125},
    "search": {"shapes": ["nested", "block"], "docs": [40, 80], "docs_per_block": [4, 8],
               "annotators_per_block": [2]},
    "max_type1": 0.1,
    "screen_trials": 20,
    "max_trials": 80,
    "confirm_trials": 100,
    "seed": 2021,
}
outcome = simdesign.plan(budget_plan, jobs=JOBS, progress=False)
print(outcome.recommendation)

# %%
outcome.candidates[["design", "shape", "annotators", "judgements", "cost", "power", "ci_low", "ci_high", "trials",
                    "type1_high", "decision"]].round(3)

# %% [markdown]
# Each row is a candidate (design x test) with its cost, its power interval, the upper end of its
# type I error interval and what the search decided: `worse` (shown to have less power),
# `undecided` (too close to call with this many studies), `excluded` (over budget) and the
# `recommended` one. With so few studies the intervals are wide; the recommendation says how sure
# it is, and `outcome.plot("plan")` draws cost against power.

# %% [markdown]
# ## 5. Your own task: fit a pilot, check the fit, simulate from it
#
# The `coherence` and `repetition` models describe the paper's task. For your own, you would
# annotate a small pilot and fit the model to it. Here we *simulate* a pilot from the `repetition`
# preset, so we know the truth: 10 blocks of 5 documents, 3 annotators per block
# (750 judgements of 5 systems).

# %%
truth = simdesign.load_model("repetition")
pilot_design = simdesign.BlockDesign(blocks=10, docs_per_block=5, annotators_per_block=3)
pilot = truth.sample(pilot_design, np.random.default_rng(7)).to_frame()
pilot.head()

# %% [markdown]
# A real pilot would be a CSV with the columns `annotator, document, system, score`
# (`simdesign.fit_model("pilot.csv")`). How much do the annotators agree?

# %%
agreement = simdesign.reliability(pilot)
print(f"Krippendorff's alpha {agreement.krippendorff_alpha:.2f}, split-half reliability {agreement.shr:.2f}")

# %% [markdown]
# Now fit the model (a cumulative link mixed model; `structure="auto"` fits what this design
# can identify) and compare the fitted system effects (on the model's latent scale, relative to the
# reference system) with the truth. A status `singular` is normal for these models: some
# random-effect variance sits at its boundary; `not_converged` or `error` would mean no usable fit.
# The first fit on a fresh installation also compiles simdesign's fitting kernels (numba; about 40
# seconds of CPU, once: later fits, also in new sessions, take about a second).

# %%
fit = simdesign.fit_model(pilot, structure="auto", reference=truth.systems[0])
print("fit status:", fit.result.status)
standard_errors = np.sqrt(np.diag(fit.result.fixed_effects_cov))
pd.DataFrame({"true effect": pd.Series(truth.effects, index=truth.systems),
              "fitted effect": pd.Series(fit.model.effects, index=fit.model.systems),
              "standard error": pd.Series(standard_errors, index=fit.result.systems[1:])}).round(2)

# %% [markdown]
# A fit can be off (30 annotators is not many), so check it: `check_model` simulates studies with the
# pilot's own design from the fitted model and asks whether the pilot looks like them (score
# distributions, system means, spread of annotators and documents, agreement). Each statistic gets
# the range of 95% of the simulated studies; a few outside is expected by chance with this many
# statistics, many outside means the model misses something.

# %%
check = simdesign.check_model(fit, pilot, trials=50).statistics
print(f"{int(check['inside'].sum())} of {len(check)} statistics inside their simulated 95% range")
check[check["statistic"] != "share"]  # the score shares of every system and category are in the other rows

# %% [markdown]
# Note what the check does *not* test: it compares the model with the pilot, not with the truth
# (which you never know). The fitted effects above are estimates from 30 annotators, with the
# standard errors in the table, and can be off by more than one of them.
#
# Finally, simulate the study you plan from the fitted model, exactly as with a preset. Because we
# know the truth here, we can also see what that study would really achieve.

# %%
def planned_study(model):
    return simdesign.SimulationConfig(
        name="from-pilot",
        model=model,  # a fitted model object, a model file, or a preset name
        effect="fitted",
        designs=[{"kind": "block", "blocks": 20, "docs_per_block": 5, "annotators_per_block": 3}],
        tests=["ttest_block"],
        trials=100,
        seed=1,
    )


pd.concat({"planned from the pilot's fit": simdesign.simulate(planned_study(fit.model), jobs=JOBS,
                                                              progress=False).table("power"),
           "true": simdesign.simulate(planned_study(truth), jobs=JOBS, progress=False).table("power")})

# %% [markdown]
# The power planned from a pilot inherits the pilot's errors, in the system effects and in how much
# annotators and documents vary, so it can be off by several points either way. Plan for an effect
# you care about (`effect: {min_difference: 0.5, unit: likert}`, or a scale factor such as
# `effect: 0.7`), not only for the pilot's point estimates.

# %% [markdown]
# ## 6. Analyse your finished study
#
# Once the judgements are in, `simdesign.analyse` answers the question the study was for: which systems
# differ? It takes a table with one row per judgement (a path or a DataFrame) and fits the paper's model
# (the ordinal mixed model with Tukey-adjusted contrasts), with bootstrap intervals for the system means and
# the rank groups that the significant differences allow. `examples/study.csv` is a finished study,
# simulated: 750 judgements of 5 systems, 10 blocks of 5 documents with 3 annotators each.

# %%
analysis = simdesign.analyse("examples/study.csv", bootstrap=500)
analysis.table

# %% [markdown]
# A system's `groups` are the ranks it can take given the significant differences (`1/2`: first or
# second). Because the design has 10 independent blocks, the intervals come from a block bootstrap. The
# pairs, with their adjusted p-values, are in `analysis.pairs`; `analysis.summary()` says how the model fit
# went (its log-likelihood, whether it is singular, how many starts were tried).

# %%
analysis.pairs[["system_a", "system_b", "estimate", "p_value"]].round(4)

# %% [markdown]
# ## What this tutorial does not show, honestly
#
# * The trial counts here are small so that the notebook runs in seconds: the intervals beside every rate
#   say how much that costs. Run the same configs with `trials: 1000` before you decide anything.
# * The mixed model's type I error is itself too high with few annotators (about 15% with 3 crossed
#   annotators on the Figure-4 grid): read its power only where the same design's type I error is near
#   alpha.
# * Everything rests on the generator: a plan made from the presets assumes your annotators and documents
#   vary as the paper's did. Fit a pilot (section 5) when your task differs.
#
# To see the same trade-offs live in class, run `simdesign explore`: a page where every change of design,
# test or effect updates the type I error and power within a second or two.

# %% [markdown]
# ## Where next
#
# * The manual (`docs/`, or the documentation site): every test, model option and summary column;
#   "Reproducing the paper" for the full figures and their tables (`figures/<name>.csv`, also `simdesign.outputs.precomputed_curves(name)`).
# * The command line does the same from YAML files: `simdesign run configs/quick.yaml`,
#   `simdesign plan configs/plan_example.yaml`, `simdesign fit pilot.csv --check`.
