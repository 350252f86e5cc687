"""No module outside the method modules names an annotation method (issue 28, part 1).

What differs between annotation methods lives in their objects (:mod:`simdesign.methods`); everything else
asks the method. This test reads the source with ``ast`` and flags every string literal outside the method
modules that *is* a registered method's name or label (``"likert"``, ``'Rank'``, ``"@rank"``, ``"-rank"``...)
or that a comparison holds with a method's name in it, so a branch on a method cannot hide behind a
rewording (``x == "rank"``, ``"rank" in methods``, ``{"likert": ...}[m]``, ``m != 'Likert'``). Docstrings
are prose and not flagged; the few literals that are not about the method are listed in
:data:`ALLOWED` with the reason.

The method modules are :mod:`simdesign.methods` and the modules its methods name for their upper-layer
steps (:attr:`simdesign.methods.AnnotationMethod.steps`, e.g. the Rank table reader in the pilot layer);
a step module may name its own method only.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from simdesign.methods import all_methods

PACKAGE = Path(__file__).resolve().parents[1] / "simdesign"

# (file under simdesign/, literal) -> (how many times it may occur, why it is not a method's name).
# May only shrink (a new entry needs a reason that is not "this code branches on a method").
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("planning/plan_report.py", "rank"): (2, "the plan table's position column (1 = the best candidate)"),
    ("planning/plan_views.py", "rank"): (1, "the plan table's position column"),
    ("cli/plan.py", "rank"): (2, "the plan table's position column, printed by `simdesign plan` for an ordinary and "
                               "a replication plan (the latter moved here from planning/replication_plan.py)"),
    ("planning/planner.py", "likert"): (2, "min_difference's unit: expected Likert scores (EFFECT_UNITS and one call: a "
                                          "scale, not an annotation method)"),
}


def method_modules() -> dict[Path, set[str]]:
    """Each method module -> the methods it belongs to: every file of simdesign/methods (all methods), and
    every module a registered method names for one of its steps (that method)."""
    everyone = {method.name for method in all_methods()}
    found = {path: set(everyone) for path in (PACKAGE / "methods").rglob("*.py")}
    import simdesign.cli.fit_ranks  # noqa: F401 -- the modules that give the built-in methods their steps
    import simdesign.realdata.method_steps  # noqa: F401
    import simdesign.tables.steps  # noqa: F401

    for method in all_methods():
        for step in method.steps.values():
            module = step.partition(":")[0] if isinstance(step, str) else step.__module__
            found.setdefault(PACKAGE.parent / (module.replace(".", "/") + ".py"), set()).add(method.name)
    for registrar in (PACKAGE / "realdata" / "method_steps.py", PACKAGE / "tables" / "steps.py"):
        found.setdefault(registrar, set()).update(everyone)  # registers every built-in one
    return found


def _words(methods=None) -> set[str]:
    """The names and labels of ``methods`` (default: every registered method), case-folded."""
    return {word.casefold() for method in all_methods() if methods is None or method.name in methods
            for word in (method.name, method.label)}


def _names_a_method(value: str, words: set[str]) -> bool:
    """The literal is a method's name or label, give or take punctuation ('@rank', '-rank', ' Likert')."""
    return value.strip(" @-_.:=/'\"").casefold() in words


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def flagged_literals(source: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of every string literal naming a method, and of comparisons with a method's name."""
    tree = ast.parse(source)
    docstrings = _docstring_nodes(tree)
    found = []
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(words)) + r")\b", re.IGNORECASE)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _names_a_method(node.value, words):
                found.append((node.lineno, node.value.strip(" @-_.:=/'\"").casefold()))
        elif isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, str) and pattern.search(side.value) \
                        and not _names_a_method(side.value, words):
                    found.append((node.lineno, f"comparison with {side.value!r}"))
    return found


def test_the_check_catches_planted_branches():
    words = {"likert", "rank"}
    planted = ("def f(method, methods, names):\n"
               "    '''Likert or rank: a docstring is prose.'''\n"
               "    if method == 'rank': pass\n"
               "    if 'Likert' in methods: pass\n"
               "    suffix = '' if method != \"likert\" else '@rank'\n"
               "    return {'likert': 1}.get(method), names == '--method rank'\n")
    found = flagged_literals(planted, words)
    assert sorted(line for line, _ in found) == [3, 4, 5, 5, 6, 6]
    assert flagged_literals("x = 'The rank table lacks a column'\ny = 'ranked'\n", words) == []


def test_no_module_outside_the_method_modules_names_a_method():
    """Outside the method modules no module names a method; a module of one method's steps (Rank's table
    reader, its fit) may name that method (its own column), never another (no branching between methods)."""
    owners = method_modules()
    counts: Counter = Counter()
    where: dict = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        own = owners.get(path, set())
        words = _words() - _words(own)
        if not words:
            continue
        relative = path.relative_to(PACKAGE).as_posix()
        for line, literal in flagged_literals(path.read_text(), words):
            counts[(relative, literal)] += 1
            where.setdefault((relative, literal), []).append(line)
    over = {f"{file}:{where[(file, literal)]} {literal!r}": count for (file, literal), count in counts.items()
            if count > ALLOWED.get((file, literal), (0, ""))[0]}
    assert over == {}, ("source lines naming an annotation method outside its method modules (ask the method "
                        f"object instead: simdesign.methods.get_method(name)...): {over}")
    stale = {key: allowed for key, (allowed, _) in ALLOWED.items() if counts[key] < allowed}
    assert stale == {}, f"ALLOWED lists more than the source has (shrink it): {stale}"


def test_the_method_modules_are_those_the_methods_name():
    owners = method_modules()
    assert owners[PACKAGE / "tables" / "ranks.py"] == {"rank"}
    assert owners[PACKAGE / "realdata" / "fit.py"] == {"likert"}  # Likert's fit step: it may not name Rank
    assert PACKAGE / "realdata" / "analyse.py" not in owners and PACKAGE / "tables" / "recognise.py" not in owners
