"""The tutorial: docs/tutorial.ipynb is the rendering of docs/tutorial.py, and it runs without error.

After editing docs/tutorial.py, render it again with ``.venv/bin/jupytext --to ipynb docs/tutorial.py``.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "tutorial.py"
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"


def _cells(notebook) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in notebook.cells]


def test_the_notebook_is_the_rendering_of_the_script():
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")
    rendered = jupytext.read(SCRIPT)
    committed = nbformat.read(NOTEBOOK, as_version=4)
    # Cell ids are random at each rendering, so the cells are compared by kind and text.
    assert _cells(committed) == _cells(rendered), "docs/tutorial.ipynb is stale: run jupytext --to ipynb docs/tutorial.py"
    assert committed.metadata["kernelspec"]["name"] == "python3"
    assert not any(cell.get("outputs") for cell in committed.cells if cell.cell_type == "code")


@pytest.mark.slow
def test_the_tutorial_runs_without_error(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    # A kernel of this very interpreter (the venv's), whatever 'python3' kernels the machine has elsewhere.
    kernels = tmp_path / "kernels"
    (kernels / "simdesign-test").mkdir(parents=True)
    (kernels / "simdesign-test" / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "simdesign test", "language": "python"}))
    manager = KernelManager(kernel_name="simdesign-test",
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, km=manager, timeout=600,
                                     resources={"metadata": {"path": str(ROOT)}})
    start = time.perf_counter()
    try:
        client.execute()  # raises CellExecutionError, naming the cell, on any error
    finally:
        if manager.has_kernel:  # a kernel manager we pass in is ours to stop, not nbclient's
            manager.shutdown_kernel(now=False)
        nbformat.write(notebook, tmp_path / "executed.ipynb")
    print(f"docs/tutorial.ipynb ran in {time.perf_counter() - start:.0f} s")
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(images) == 2  # the type I error and the nested-or-crossed figures, each shown once
