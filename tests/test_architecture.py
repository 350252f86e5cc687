"""The package's shape: no import cycles, no overlong functions.

Both are read from the source with ``ast``, so imports inside functions (which Python resolves only at
call time, and which hid the cycles this test was written against) count like top-level ones.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "simdesign"
MAX_FUNCTION_LINES = 80
# Argument-parser builders are long lists of options, not logic.
LONG_FUNCTIONS_ALLOWED = {"build_parser", "add_parser"}
# Functions over the limit when this test was written, still to be split (issue 11). The list may only
# shrink: a new long function, or one of these growing, fails the test.
KNOWN_LONG_FUNCTIONS: dict[str, int] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """simdesign modules one import statement names (resolving relative imports and 'from pkg import module')."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    found = {target} if target in known else set()
    for alias in node.names:
        if f"{target}.{alias.name}" in known:
            found.add(f"{target}.{alias.name}")
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node of the tree except the bodies of ``if TYPE_CHECKING:`` blocks, which never run."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=None)  # every check reads the same sources: parse each once per run
def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), filename=str(path))


@functools.lru_cache(maxsize=None)
def import_graph() -> dict[str, set[str]]:
    """Module -> the simdesign modules it imports anywhere in its source.

    Importing ``simdesign.pkg.mod`` also runs ``simdesign/pkg/__init__.py``, so that package is a target
    too, unless the importer lives inside it (Python has loaded it already then).
    """
    modules = _modules()
    known = set(modules)
    graph = {}
    for module, path in modules.items():
        tree = _tree(path)
        targets = set()
        for node in _runtime_nodes(tree):
            targets |= _imported(node, module, path.name == "__init__.py", known)
        for target in list(targets):
            parts = target.split(".")
            targets |= {".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in known}
        # Importing simdesign.x.y runs simdesign.x's __init__ too; an edge to a parent package of the importer
        # itself is not a dependency of the importer's own code.
        graph[module] = {t for t in targets if t != module and not module.startswith(t + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of modules (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_import_graph_sees_imports_inside_functions_but_not_type_checking_blocks():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from simdesign.studies.rates.config import X\n"
              "def f():\n    from simdesign.model import load_model\n")
    found = set()
    for node in _runtime_nodes(ast.parse(source)):
        found |= _imported(node, "simdesign.cli", False, {"simdesign.model", "simdesign.cli", "simdesign.studies.rates.config"})
    assert found == {"simdesign.model"}


def test_no_import_cycles_in_simdesign():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def long_functions() -> dict[str, int]:
    """'path:function' -> lines, for every function over :data:`MAX_FUNCTION_LINES` (parser builders aside)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        tree = _tree(path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in LONG_FUNCTIONS_ALLOWED:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found[f"{path.relative_to(PACKAGE.parent)}:{node.name}"] = length
    return found


def test_no_new_function_is_longer_than_80_lines():
    grown = {name: length for name, length in long_functions().items()
             if length > KNOWN_LONG_FUNCTIONS.get(name, MAX_FUNCTION_LINES)}
    assert grown == {}, f"functions over {MAX_FUNCTION_LINES} lines (split them): {grown}"


# Module prefix -> layer (the folders of simdesign/, see its __init__ docstring). A module may import its own
# layer and lower ones only. The longest matching prefix wins, so "simdesign" alone is the package's top.
LAYERS = {
    "simdesign.core": 0, "simdesign.runner": 0,  # the runner imports only core (issue 27)
    "simdesign.model": 1, "simdesign.methods": 1,  # the model asks a method for its responses (issue 28)
    "simdesign.stats": 2, "simdesign.tables": 2,  # every method's tables, read and validated (issue 40)
    "simdesign.clmm": 3, "simdesign._clmm_numba": 3, "simdesign.lmm": 3,
    "simdesign.significance": 4,
    "simdesign.studies": 5,
    "simdesign.planning": 6, "simdesign.realdata": 6,
    "simdesign.outputs": 7, "simdesign.api": 7, "simdesign.cli": 7, "simdesign": 7,
    "simdesign.testing": 7,  # the contract checks plug-in authors run (issue 40)
}


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest prefix in :data:`LAYERS` (``simdesign.cli`` is not
    ``simdesign.clinic``'s prefix: prefixes match whole dotted parts)."""
    matches = [prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")]
    if not matches:
        raise KeyError(f"{module} has no layer in LAYERS: add its folder")
    return LAYERS[max(matches, key=len)]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
                  for module, targets in graph.items() for target in targets if layer_of(target) > layer_of(module))


def test_layer_check_catches_a_planted_upward_import():
    assert upward_imports({"simdesign.core.designs": {"simdesign.studies.rates.config"}}) == [
        "simdesign.core.designs (layer 0) imports simdesign.studies.rates.config (layer 5)"]
    assert upward_imports({"simdesign.studies.rates.config": {"simdesign.core.designs"}}) == []
    assert layer_of("simdesign.cli.analyse") == 7 and layer_of("simdesign.clmm.laplace") == 3


def test_every_module_has_a_layer():
    for module in _modules():
        layer_of(module)


def test_every_import_goes_to_the_same_or_a_lower_layer():
    assert upward_imports(import_graph()) == []


# A string that names a module ("simdesign.tables.ranks:read_rank_table", "simdesign.cli.fit_ranks"): code that
# imports it later (importlib) depends on it as an import does, though no import statement shows it.
MODULE_REFERENCE = re.compile(r"^(simdesign(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?$")


def string_references(source, module: str, known: set[str]) -> set[str]:
    """simdesign modules a module's string literals name as a whole (a module path, or 'module:function');
    ``source`` is the module's text or its parsed tree."""
    found = set()
    for node in _runtime_nodes(ast.parse(source) if isinstance(source, str) else source):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = MODULE_REFERENCE.match(node.value.strip())
            if match and match.group(1) in known and match.group(1) != module:
                found.add(match.group(1))
    return found


def upward_string_references() -> list[str]:
    modules = _modules()
    known = set(modules)
    return sorted(f"{module} (layer {layer_of(module)}) names '{target}' (layer {layer_of(target)}) in a string"
                  for module, path in modules.items()
                  for target in string_references(_tree(path), module, known)
                  if layer_of(target) > layer_of(module))


def test_the_string_reference_check_catches_a_planted_one():
    source = 'STEPS = {"read": "simdesign.tables.ranks:read_rank_table"}\nNOTE = "see simdesign.tables.ranks"\n'
    known = {"simdesign.tables.ranks", "simdesign.methods.rank"}
    assert string_references(source, "simdesign.methods.rank", known) == {"simdesign.tables.ranks"}


def test_no_string_names_a_module_of_a_higher_layer():
    """Issue 40: the built-in methods named 13 functions of the pilot and command-line layers as strings,
    resolved with importlib, invisible to the import checks above; the layers that own them now register them."""
    assert upward_string_references() == []


def test_only_the_runner_computes_in_parallel():
    """One runner (issue 27): joblib's ``Parallel(``, process pools and the chunk loop over an executor appear
    only in simdesign/runner; every study kind goes through :func:`simdesign.runner.execute.run_chunks`.
    (The web explorer keeps a warm pool of its own for interactive requests, simdesign/explore/live.py.)"""
    outside = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "runner":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if code.lstrip().startswith((">>>", "...")):  # a doctest shows how to call the executor
                continue
            if any(marker in code for marker in ("Parallel(", "ProcessPoolExecutor(", "executor.run(")):
                outside.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert outside == [], "parallel work outside simdesign/runner:\n" + "\n".join(outside)


# Issue 40: one seeding convention. Only simdesign/core/seeds.py makes random streams (label-keyed spawn keys);
# anywhere else a SeedSequence, a bit generator, a positional .spawn( or default_rng( of something else than a
# sequence from core.seeds would be a stream of its own convention (a fixed number, a position in a list).
SEEDS_MODULE = "simdesign.core.seeds"
STREAM_MAKERS = {"SeedSequence", "PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937", "RandomState", "Generator",
                 "spawn"}


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _from_seeds(tree: ast.AST) -> set[str]:
    """Names a module imports from simdesign.core.seeds (the module itself as 'seeds', if imported whole)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == SEEDS_MODULE:
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "simdesign.core":
            names |= {alias.asname or alias.name for alias in node.names if alias.name == "seeds"}
    return names


def _is_seeds_call(node: ast.expr, seeds_names: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in seeds_names
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in seeds_names


def ad_hoc_streams(source) -> list[tuple[int, str]]:
    """(line, call) of every random stream a module makes by hand: ``SeedSequence(``, a bit generator,
    ``Generator(``, ``.spawn(``, or ``default_rng(`` of anything but a call of a core.seeds function. Read from the
    code's tree, so docstring examples (``>>> np.random.default_rng(1)``) are prose, not calls."""
    tree = ast.parse(source) if isinstance(source, str) else source
    seeds_names = _from_seeds(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name in STREAM_MAKERS:
            found.append((node.lineno, f"{name}("))
        elif name == "default_rng" and not (len(node.args) == 1 and not node.keywords
                                              and _is_seeds_call(node.args[0], seeds_names)):
            found.append((node.lineno, "default_rng(" + ", ".join(ast.unparse(a) for a in node.args) + ")"))
    return found


def test_the_stream_check_catches_planted_streams():
    source = ('"""Example: np.random.default_rng(1) in a docstring is prose."""\n'
              "import numpy as np\n"
              "from simdesign.core.seeds import seed_sequence, stream\n"
              "def f(seed, position, rng):\n"
              "    a = np.random.default_rng(np.random.SeedSequence([seed, 1_000_003]))\n"
              "    b = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]\n"
              "    c = rng.spawn(2)\n"
              "    d = np.random.Generator(np.random.PCG64(seed))\n"
              "    e = np.random.default_rng(seed_sequence(seed, 'x'))\n"
              "    g = np.random.default_rng()\n"
              "    return stream(seed, 'analyse/bootstrap', position)\n")
    found = ad_hoc_streams(source)
    assert sorted(line for line, _ in found) == [5, 5, 6, 6, 6, 7, 8, 8, 10]
    assert ad_hoc_streams("from simdesign.core.seeds import stream\nrng = stream(1, 'a', 2)\n") == []


def test_random_streams_are_made_only_in_core_seeds():
    """Issue 40: three seeding conventions lived side by side (spawn keys in core/seeds.py, an entropy list in the
    runner, fixed numbers and positional ``.spawn(n)`` in the pilot analyses); now every stream comes from
    simdesign/core/seeds.py (``stream(root_seed, *labels_or_indices)`` and its named forms)."""
    seeds_path = PACKAGE / "core" / "seeds.py"
    outside = [f"{path.relative_to(PACKAGE.parent)}:{line}: {call}"
               for path in sorted(PACKAGE.rglob("*.py")) if path != seeds_path
               for line, call in ad_hoc_streams(_tree(path))]
    assert outside == [], "random streams made outside simdesign/core/seeds.py:\n" + "\n".join(outside)


def test_the_version_is_read_from_the_installed_metadata_only():
    """Issue 40: the version was written in pyproject.toml and in simdesign/__init__.py, and pilot/fit.py imported
    it from the package root (working only by import order)."""
    import tomllib
    from importlib import metadata

    import simdesign

    declared = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["version"]
    assert simdesign.__version__ == metadata.version("simdesign-humeval") == declared
    literal = re.compile(r"""^\s*(__version__|VERSION)\s*=\s*["']\d""", re.M)  # a version number typed in
    assert [p.name for p in PACKAGE.rglob("*.py") if literal.search(p.read_text())] == []


def test_the_layout_page_names_every_package_with_its_layer():
    """docs/explanation/layout.md is written from the code by scripts/layout_page.py (issue 40); a package moved,
    added or given another layer without rerunning it fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("layout_page", PACKAGE.parent / "scripts" / "layout_page.py")
    layout_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout_page)
    assert layout_page.out_of_date(layout_page.PAGE.read_text()) == []
    assert layout_page.out_of_date("") != []  # the check can fail


def test_no_package_holds_too_large_a_share_of_the_code():
    """Issue 40's layout: no top-level package above about 15% of the package's lines except the ``studies/``
    parent, and no study kind's package above 10% (a package that grows past them is split by what it holds)."""
    def lines(folder):
        return sum(len(path.read_text().splitlines()) for path in folder.rglob("*.py"))

    total = lines(PACKAGE)
    too_large = {folder.name: round(lines(folder) / total, 3) for folder in PACKAGE.iterdir()
                 if folder.is_dir() and folder.name != "studies" and (folder / "__init__.py").is_file()
                 and lines(folder) > 0.15 * total}
    too_large |= {f"studies/{kind.name}": round(lines(kind) / total, 3) for kind in (PACKAGE / "studies").iterdir()
                  if kind.is_dir() and lines(kind) > 0.10 * total}
    assert too_large == {}
