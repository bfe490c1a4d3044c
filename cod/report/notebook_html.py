"""HTML copies of the executed notebooks, for reading without Jupyter: beside each notebook (ignored
by git; `make html`, `python -m cod.pipeline.notebook --html`) or as a page of the results site
(`cod.report.site`)."""

from __future__ import annotations

from pathlib import Path

import nbformat

from cod import ROOT
from cod.paths import EXECUTED


def render_html(notebook_path: Path, html: Path | None = None) -> Path:
    """An HTML copy of the executed notebook, for reading without Jupyter: beside it (ignored by
    git) or at `html` (the results site, `cod.report.site`)."""
    from nbconvert import HTMLExporter  # lazy: seconds to import; only HTML copies need it

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(notebook_path, as_version=4))
    html = html or notebook_path.with_suffix(".html")
    html.write_text(body)
    return html


def render_all_html(folder: Path | None = None) -> list[Path]:
    """HTML copies of every executed notebook under `folder` (default: `notebooks/executed/`, all
    profiles), each beside its notebook; nothing is executed."""
    notebooks = sorted(p for p in Path(folder or EXECUTED).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    pages = []
    for path in notebooks:
        pages.append(render_html(path))
        print(f"[html] {pages[-1].relative_to(ROOT) if pages[-1].is_relative_to(ROOT) else pages[-1]}", flush=True)
    return pages
