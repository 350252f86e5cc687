"""Short views of the planner's results: one-line reprs and the notebook HTML of a finished plan."""
from __future__ import annotations

import html

# The plan table's columns a person reads first (plan.csv has them all).
SHOWN_COLUMNS = ("rank", "design", "shape", "test", "cost", "power", "ci_low", "ci_high", "trials", "type1",
                 "type1_high", "decision")


def candidate_repr(r) -> str:
    """A candidate's evaluation in one line: design, test, cost, power [interval], type I error, decision."""
    c = r.candidate
    text = f"<CandidateResult {c.design.label} / {c.test.label}: cost {c.total_cost:.2f}"
    if r.trials:
        text += f", power {r.power:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] ({r.trials} trials)"
    if r.type1_trials:
        text += f", type I {r.type1:.3f} [{r.type1_low:.3f}, {r.type1_high:.3f}] ({r.type1_trials} trials)"
    if r.confirmation:
        text += f", {r.confirmation}"
    return text + f", {r.decision or 'not evaluated'}>"


def plan_html(outcome, rows: int = 10) -> str:
    """A :class:`~simdesign.api.PlanOutcome` in a notebook: the answer in words, then the first ranked rows."""
    table = outcome.candidates[[c for c in SHOWN_COLUMNS if c in outcome.candidates]].head(rows)
    numbers = {c: "{:.3f}".format for c in ("power", "ci_low", "ci_high", "type1", "type1_high")}
    numbers["cost"] = "{:.2f}".format
    first = outcome.recommendation.split("\n\n")[0]
    shown = table.to_html(index=False, formatters=numbers, na_rep="", float_format=lambda v: f"{v:g}")
    more = len(outcome.candidates) - len(table)
    return (f"<p>{html.escape(first)}</p>{shown}"
            + (f"<p>... {more} more candidate(s) in <code>.candidates</code>; the whole reasoning in "
               "<code>.recommendation</code>.</p>" if more > 0 else ""))
