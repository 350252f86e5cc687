"""simdesign's version, read once from the installed distribution's metadata (pyproject.toml is its only source)."""
from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "simdesign-humeval"  # the import package is simdesign; PyPI's "simdesign" is another project

try:
    VERSION = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # a source tree on sys.path without an install: say so, never guess
    VERSION = "unknown (not installed)"
