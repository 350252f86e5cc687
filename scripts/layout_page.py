"""Write docs/explanation/layout.md from the code: every package and top-level module of simdesign, its layer,
files, lines, share of the package and what it holds (its docstring's first sentence), and the import rule.

    .venv/bin/python scripts/layout_page.py          # rewrite the page
    .venv/bin/python scripts/layout_page.py --check  # exit 1 if the page's packages or layers are out of date

The layers come from tests/test_architecture.py (LAYERS), which enforces them; tests/test_architecture.py also
checks that the committed page names every package with its layer (line counts drift with every change, so
they are refreshed by running this script, not tested).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "simdesign"
PAGE = ROOT / "docs" / "explanation" / "layout.md"
sys.path.insert(0, str(ROOT / "tests"))

from test_architecture import LAYERS, layer_of  # noqa: E402

INTRO = """# Layout of the package

*Written by `scripts/layout_page.py` from the code (rerun it after moving code); the layers are those
`tests/test_architecture.py` enforces.*

`simdesign/` is one folder a layer; `studies/` holds one package per study kind (listed under it). **A module imports only its own layer and lower ones**, inside functions
too, and names no module of a higher layer in a string (a `"module:function"` reference): what a lower layer
needs from a higher one is registered by the higher one (annotation methods' steps:
`simdesign.methods.register_step`). The test also forbids import cycles and functions over 80 lines.
"""

OUTRO = """
Beside the package: `configs/` simulation and plan configs; `figures/` committed figures and their tables
(`figures/generator_versions.yaml` says which generator drew each); `scripts/` set-up, benchmarks and
reproduction scripts; `tests/` the pytest suite; `docs/` this manual; `examples/` example tables.
"""


def first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split())
    end = text.find(". ")
    return (text if end < 0 else text[:end + 1]).replace("|", "\\|")


def lines(paths) -> int:
    return sum(len(path.read_text().splitlines()) for path in paths)


def rows() -> list[dict]:
    total = lines(PACKAGE.rglob("*.py"))
    found = []
    for folder in sorted(p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        files = sorted(folder.rglob("*.py"))
        found.append({"name": f"`{folder.name}/`", "layer": layer_of(f"simdesign.{folder.name}"),
                      "files": len(files), "lines": lines(files), "holds": first_sentence(folder / "__init__.py")})
        if folder.name == "studies":  # one package per study kind: each kind's share is listed too
            for kind in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
                files = sorted(kind.rglob("*.py"))
                found.append({"name": f"`studies/{kind.name}/`", "layer": layer_of(f"simdesign.studies.{kind.name}"),
                              "files": len(files), "lines": lines(files),
                              "holds": first_sentence(kind / "__init__.py")})
    for module in sorted(PACKAGE.glob("*.py")):
        dotted = "simdesign" if module.name == "__init__.py" else f"simdesign.{module.stem}"
        found.append({"name": f"`{module.name}`", "layer": layer_of(dotted), "files": 1, "lines": lines([module]),
                      "holds": first_sentence(module)})
    for row in found:
        row["share"] = f"{100 * row['lines'] / total:.0f}%"
        row["fraction"] = row["lines"] / total
    return sorted(found, key=lambda row: (row["layer"], row["name"]))


def page() -> str:
    table = ["| layer | package or module | may import layers | files | lines | share | what it holds |",
             "|---|---|---|---|---|---|---|"]
    table += [f"| {r['layer']} | {r['name']} | 0-{r['layer']} | {r['files']} | {r['lines']:,} | {r['share']} | "
              f"{r['holds']} |" for r in rows()]
    layers = ", ".join(f"`{prefix}` {layer}" for prefix, layer in sorted(LAYERS.items(), key=lambda kv: (kv[1], kv[0])))
    return INTRO + "\n" + "\n".join(table) + f"\n\nThe layers by module prefix (the longest prefix wins): {layers}.\n" + OUTRO


def out_of_date(text: str) -> list[str]:
    """What the committed page lacks: a package or module, or a layer that differs."""
    return [f"{r['name']} (layer {r['layer']})" for r in rows() if f"| {r['layer']} | {r['name']} |" not in text]


if __name__ == "__main__":
    if "--check" in sys.argv:
        missing = out_of_date(PAGE.read_text())
        print("up to date" if not missing else f"out of date: {missing}")
        sys.exit(1 if missing else 0)
    PAGE.write_text(page())
    print(f"wrote {PAGE}")
