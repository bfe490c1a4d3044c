"""Execute a notebook of `notebooks/` with papermill, the way the DVC stages do.

    python -m cod.notebook a4_variance_dynamics                  # parameters from params.yaml
    python -m cod.notebook a4_variance_dynamics -p seeds=[0,1]   # plus overrides (YAML values)
    python -m cod.notebook --all        # every notebook stage through DVC, from committed results only

Sources are jupytext percent files (`notebooks/NAME.py`, diff-friendly). The parameters
are `profile` plus `notebooks.NAME` from params.yaml, then `-p` overrides; every name must
exist in the notebook's cell tagged `parameters`, or the run stops before executing
anything. The executed notebook and an HTML rendering go to `notebooks/executed/<profile>/`.
The executed .ipynb keeps its parameters cell, so plain papermill works on it too:

    papermill notebooks/executed/default/a4_variance_dynamics.ipynb out.ipynb -p seeds "[0]"

`--all` is what `make notebooks` runs: `dvc repro --force --single-item` on every notebook stage,
so dvc.lock records what was regenerated while no training or analysis stage runs (they
need weights, which a fresh clone lacks; notebooks read only committed small files).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from cod.config import ConfigError, parse_override

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXECUTED = NOTEBOOKS / "executed"


def load_source(name: str):
    """The notebook `notebooks/NAME.py` as an nbformat object."""
    import jupytext

    path = NOTEBOOKS / f"{name}.py"
    if not path.exists():
        available = sorted(p.stem for p in NOTEBOOKS.glob("*.py"))
        raise ConfigError(f"notebook {name!r} not found; available: {', '.join(available)}")
    return jupytext.read(path)


def declared_parameters(notebook) -> dict[str, Any]:
    """Names (and literal defaults, where literal) assigned in the cell tagged `parameters`."""
    cells = [c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ConfigError(f"a notebook needs exactly one cell tagged 'parameters', found {len(cells)}")
    names: dict[str, Any] = {}
    for node in ast.parse(cells[0].source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    names[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    names[target.id] = None
    return names


def stage_parameters(name: str, params_file: Path = ROOT / "params.yaml") -> dict[str, Any]:
    """What params.yaml passes to notebook NAME: `profile` and `notebooks.NAME`."""
    params = yaml.safe_load(params_file.read_text())
    return {"profile": params["profile"], **(params.get("notebooks", {}).get(name) or {})}


def check_parameters(given: dict[str, Any], declared: dict[str, Any], name: str) -> None:
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ConfigError(
            f"notebook {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(sorted(declared))}"
        )


def execute(name: str, overrides: dict[str, Any] | None = None, output: Path | None = None) -> Path:
    """Run notebook NAME with params.yaml's parameters plus `overrides`; returns the output path."""
    import papermill

    notebook = load_source(name)
    parameters = {**stage_parameters(name), **(overrides or {})}
    check_parameters(parameters, declared_parameters(notebook), name)
    output = output or EXECUTED / str(parameters["profile"]) / f"{name}.ipynb"
    output.parent.mkdir(parents=True, exist_ok=True)
    print(f"[notebook {name}] parameters: {parameters}", flush=True)
    papermill.execute_notebook(notebook, str(output), parameters=parameters, cwd=str(ROOT),
                               kernel_name="python3", progress_bar=False, log_output=True)
    render_html(output)
    return output


def render_html(notebook_path: Path) -> Path:
    """An HTML copy beside the executed notebook, for reading without Jupyter."""
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(notebook_path, as_version=4))
    html = notebook_path.with_suffix(".html")
    html.write_text(body)
    return html


def notebook_stages(dvc_file: Path = ROOT / "dvc.yaml") -> list[str]:
    """Names of the DVC stages that execute a notebook."""
    stages = yaml.safe_load(dvc_file.read_text())["stages"]
    return [name for name, stage in stages.items() if "cod.notebook" in str(stage.get("cmd", ""))]


def regenerate_all() -> None:
    """Re-execute every notebook stage through DVC, and none of the stages they would need weights for."""
    stages = notebook_stages()
    print(f"[notebooks] regenerating {len(stages)} notebooks: {', '.join(stages)}", flush=True)
    subprocess.run(["dvc", "repro", "--force", "--single-item", *stages], cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", help="notebook name, e.g. a4_variance_dynamics")
    parser.add_argument("--all", action="store_true", help="every notebook stage, through `dvc repro`")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter (YAML value); repeatable")
    parser.add_argument("--output", type=Path, help="where the executed notebook goes")
    args = parser.parse_args(argv)
    if args.all:
        regenerate_all()
        return 0
    if args.name is None:
        parser.error("give a notebook name or --all")
    overrides = dict(parse_override(p) for p in args.param)
    execute(args.name, overrides, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
