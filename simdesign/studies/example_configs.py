"""The built-in study kinds' example configs (:meth:`simdesign.runner.study.StudyKind.examples`), kept as YAML
files in ``studies/examples/`` so that they read as the configs a user writes."""
from __future__ import annotations

from pathlib import Path

from simdesign.core.yamlio import read_yaml_file

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def read_examples(*labels: str) -> dict[str, dict]:
    """``{label: mapping}`` of ``examples/<label>.yaml`` for each label, in the given order."""
    return {label: read_yaml_file(EXAMPLES_DIR / f"{label}.yaml", f"{label} example config") for label in labels}
