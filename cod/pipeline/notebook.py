"""Execute a notebook of `notebooks/` with papermill, the way the DVC stages do.

    python -m cod.pipeline.notebook a4_variance_dynamics                  # parameters from params.yaml
    python -m cod.pipeline.notebook a4_variance_dynamics -p 'steps_to_show=[0.5, 1.0]'   # plus overrides (YAML)
    python -m cod.pipeline.notebook --all        # every notebook stage through DVC, from committed results only
    python -m cod.pipeline.notebook --html       # an HTML copy of every executed notebook (`make html`)

Sources are jupytext percent files (`notebooks/NAME.py`, diff-friendly). The parameters
are `profile` plus `notebooks.NAME` from params.yaml, then that entry's `profiles:` block for
the profile the notebook runs under (its sample sizes: `profiles: {smoke: {...}, paper: {...}}`),
then `-p` overrides; every name must exist in the notebook's cell tagged `parameters`, every
value must have the type of its default there (an int for a float; anything for a default of
None), `profile` and every `profiles:` key must be a profile of params.yaml, or the run stops
before executing anything. The executed notebook and an HTML rendering go to
`notebooks/executed/<profile>/`, figures to `figures/<profile>/NAME/`. Only the executed
notebook is committed (it holds its figures):
the HTML copies are ignored by git and are no DVC outputs; `--html` renders them for every
executed notebook, e.g. on a fresh clone. With `--output DIR/OUT.ipynb` the HTML goes beside
it and the figures to `DIR/OUT_figures/` (or `-p figures_dir=...`, relative to the
repository), so that trying a notebook leaves the committed figures alone. Cells' output is
shown as they run; the executed notebook records paths relative to the repository, none of
this machine's, and re-executing it on the same inputs gives the same bytes: cell ids come from
the notebook's name and each cell's source, papermill's timings are dropped and floats in text
outputs keep 10 significant digits (`stabilise`). The executed .ipynb keeps its parameters
cell, so plain papermill works on it too (from the repository; without figures_dir it writes
to a folder of its own under the system's temporary folder, never the committed one:
`cod.kernel.start`):

    papermill notebooks/executed/default/a4_variance_dynamics.ipynb /tmp/a4.ipynb \\
        -y "steps_to_show: [0.5, 1.0]" -p figures_dir /tmp/a4_figures

`--all` is what `make notebooks` runs: every notebook stage's command, `--jobs` at a time (a stage
that reads another's outputs, as the claims notebooks do, after it), then records them all in
dvc.lock at once (`cod.pipeline.runner.record`), so that it records what was regenerated, as `dvc repro
--force --single-item` would one at a time, while no training or analysis stage runs (they need
weights, which a fresh clone lacks; notebooks read only committed small files).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import logging
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# jsonschema (under nbformat) imports rfc3987_syntax, when installed (JupyterLab's jupyter-events pulls it in),
# to check IRI-formatted strings, and that builds a grammar at import: 1.5 CPU-seconds of each notebook's
# start. No notebook schema holds an IRI format: marked absent, the optional import fails and is skipped.
sys.modules.setdefault("rfc3987_syntax", None)
import nbformat  # noqa: E402 (after the line above)

from cod import ROOT, load_yaml
from cod.config import ConfigError, parse_override
from cod.kernel import assigned, checked_parameters
from cod.paths import EXECUTED, NOTEBOOKS, figures_dir
from cod.pipeline.runner import resolved_stages, run_stages
from cod.png import compact_png
from cod.report.notebook_html import render_all_html, render_html

# set by `--all`: its notebooks' HTML copies are rendered once at the end, in one process (nbconvert's
# import costs seconds a notebook)
HTML_LATER = "COD_NOTEBOOK_HTML_LATER"
KERNEL_ENVIRONMENT = {
    "PYTHONWARNINGS": "ignore:IProgress not found",  # tqdm.auto's TqdmWarning when ipywidgets is absent
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' loading bars: noise in the outputs
}
SIGNIFICANT = 10  # digits a float keeps in a text output: far more than any claim reads, fewer than
# the last digits of a repr that summation order or thread count may change
LONG_FLOAT = re.compile(r"(?<![\w.])\d+\.\d+(?:[eE][-+]?\d+)?(?!\w|\.\d)")  # not inside a word or version
JSON_OUTPUTS = ("application/json", "application/scrapbook.scrap.json+json")  # data whose floats are rounded
TIMINGS = ("duration", "start_time", "end_time")  # papermill's, in the notebook's and each cell's metadata


def load_source(name: str):
    """The notebook `notebooks/NAME.py` as an nbformat object."""
    import jupytext  # lazy: seconds to import; only reading a notebook's source needs it

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
    return assigned(cells[0].source)


def load_params() -> dict[str, Any]:
    """params.yaml of the repository."""
    return load_yaml(ROOT / "params.yaml")


def notebook_entry(name: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """`notebooks.NAME` of params.yaml: its parameters, and its `profiles:` block (overrides by profile)."""
    entry = dict((load_params().get("notebooks") or {}).get(name) or {})
    return entry, entry.pop("profiles", None) or {}


def stage_parameters(name: str, profile: str | None = None) -> dict[str, Any]:
    """What params.yaml passes to notebook NAME run under `profile` (None: the entry's own, else
    params.yaml's): `profile`, `notebooks.NAME`, then that entry's overrides for the profile."""
    entry, by_profile = notebook_entry(name)
    own = entry.pop("profile", None)
    profile = profile or own or load_params()["profile"]
    return {"profile": profile, **entry, **by_profile.get(profile, {})}


def checked_profile_blocks(name: str, declared: dict[str, Any]) -> None:
    """Refuse a `profiles:` block of `notebooks.NAME` whose key is no profile of params.yaml or
    whose override is no parameter of the notebook (besides `profile`) or of the wrong type."""
    _, by_profile = notebook_entry(name)
    profiles = load_params()["profiles"]
    settable = {key: value for key, value in declared.items() if key != "profile"}
    for profile, overrides in by_profile.items():
        where = f"notebooks.{name}.profiles.{profile}"
        if profile not in profiles:
            raise ConfigError(f"{where}: {profile!r} is not a profile; allowed: {', '.join(profiles)}")
        try:
            checked_parameters(overrides or {}, settable, name)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None


def resolved_parameters(name: str, declared: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """The parameters notebook NAME executes with, checked: params.yaml's for the profile it runs
    under (`stage_parameters`), then `overrides` (the command line's, which win)."""
    checked_profile_blocks(name, declared)
    given = {**stage_parameters(name, overrides.get("profile")), **overrides}
    return checked_parameters(given, declared, name)


def execute(name: str, overrides: dict[str, Any] | None = None, output: Path | None = None) -> Path:
    """Run notebook NAME with params.yaml's parameters plus `overrides`; returns the output path.

    Figures go to the stage's folder, figures/<profile>/NAME, or, when `output` is not the stage's,
    beside it (`figures_beside`): passed as `figures_dir` (without it the notebook writes to a
    folder of its own, `cod.kernel.start`); a `figures_dir` in `overrides` wins over both."""
    import papermill  # lazy: seconds to import; only executing a notebook needs it

    notebook = load_source(name)
    declared = declared_parameters(notebook)
    parameters = resolved_parameters(name, declared, overrides or {})
    default = EXECUTED / str(parameters["profile"]) / f"{name}.ipynb"
    output = Path(output or default).resolve()
    if "figures_dir" in declared:
        # the stage's folder under this runner's ROOT (a test may move it)
        folder = figures_dir(str(parameters["profile"]), name, ROOT) if output == default else figures_beside(output)
        parameters.setdefault("figures_dir", relative(folder))
    output.parent.mkdir(parents=True, exist_ok=True)
    print(f"[notebook {name}] parameters: {parameters}", flush=True)
    with environment(KERNEL_ENVIRONMENT):
        papermill.execute_notebook(notebook, str(output), parameters=parameters, cwd=str(ROOT),
                                   kernel_name="python3", progress_bar=True, log_output=True)
    tidy(output, name)
    warn_machine_paths(output)
    if not os.environ.get(HTML_LATER):
        render_html(output)
    return output


def figures_beside(output: Path) -> Path:
    """The figure folder of a notebook executed to `output` elsewhere than its stage's place."""
    return output.with_name(f"{output.stem}_figures")


def relative(path: Path) -> str:
    """`path` relative to the repository root (the notebooks' working directory)."""
    return Path(os.path.relpath(path, ROOT)).as_posix()


@contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """Set environment `variables` (which the kernel inherits) for the duration of the block."""
    saved = {key: os.environ.get(key) for key in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                del os.environ[key]
            else:
                os.environ[key] = value


def tidy(executed: Path, name: str) -> None:
    """Rewrite the executed notebook NAME at `executed` with relative paths (`record_paths`) and
    stable bytes (`stabilise`)."""
    notebook = nbformat.read(executed, as_version=4)
    record_paths(notebook, NOTEBOOKS / f"{name}.py", executed)
    stabilise(notebook, name)
    nbformat.write(notebook, executed)


def record_paths(notebook, source: Path, executed: Path) -> None:
    """Record the source and executed notebook's paths relative to the repository (papermill
    records the absolute output path and, given a notebook object, the whole notebook as input)."""
    notebook.metadata.papermill.update(input_path=relative(source), output_path=relative(executed))


def stabilise(notebook, name: str) -> None:
    """Make notebook NAME's bytes depend on its sources and results only: stable cell ids, no
    timings, floats of text and JSON outputs rounded, PNG images in a palette (`cod.png`)."""
    for cell, cell_id in zip(notebook.cells, cell_ids(name, [c.source for c in notebook.cells])):
        cell.id = cell_id
        cell.metadata.pop("execution", None)  # the kernel's timestamps
        for key in TIMINGS:
            cell.metadata.get("papermill", {}).pop(key, None)
        for output in cell.get("outputs", []):
            round_output(output)
            compact_images(output)
    for key in TIMINGS:
        notebook.metadata.get("papermill", {}).pop(key, None)


def compact_images(output) -> None:
    """Re-encode an output's PNG image (base64 in the notebook) with `compact_png`."""
    data = output.get("data", {})
    if "image/png" in data:
        data["image/png"] = base64.b64encode(compact_png(base64.b64decode(data["image/png"]))).decode()


def cell_ids(name: str, sources: list[str]) -> list[str]:
    """A cell id for each of notebook NAME's cell `sources`: a hash of the name, the source and how
    many cells before it have the same source. Editing, adding or moving a cell changes no
    other cell's id (an index would renumber every cell below)."""
    seen: Counter[str] = Counter()
    ids = []
    for source in sources:
        ids.append(hashlib.sha256(f"{name}\0{seen[source]}\0{source}".encode()).hexdigest()[:12])
        seen[source] += 1
    return ids


def round_floats(text: str, digits: int = SIGNIFICANT) -> str:
    """`text` with every decimal of more than `digits` significant digits rounded to `digits`
    (a repr's 0.30000000000000004 reads 0.3); shorter ones, formatted on purpose, stay as written."""

    def rounded(match: re.Match) -> str:
        mantissa = re.split("[eE]", match.group(0))[0]
        if len(mantissa.replace(".", "").lstrip("0")) <= digits:
            return match.group(0)
        return f"{float(match.group(0)):.{digits}g}"

    return LONG_FLOAT.sub(rounded, text)


def round_json(value: Any, digits: int = SIGNIFICANT) -> Any:
    """`value` (parsed JSON) with every float rounded to `digits` significant digits."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {key: round_json(item, digits) for key, item in value.items()}
    if isinstance(value, list):
        return [round_json(item, digits) for item in value]
    return value


def round_output(output) -> None:
    """Round the floats of one cell output in place: a stream's text, text/* and JSON data."""
    if output.output_type == "stream":
        output.text = round_floats(output.text)
    for mime, data in output.get("data", {}).items():
        if mime.startswith("text/"):
            output.data[mime] = round_floats(data)
        elif mime in JSON_OUTPUTS:
            output.data[mime] = round_json(data)


def warn_machine_paths(executed: Path) -> None:
    """Warn when the executed notebook still mentions this machine's repository or Python folder."""
    text = executed.read_text()
    for folder in sorted({str(ROOT), sys.prefix}):
        if folder in text:
            print(f"warning: {relative(executed)} mentions {folder}: make that output relative", file=sys.stderr)


# what executing a notebook imports, once for all of them in `regenerate_all` (`cod.pipeline.runner.Warm`)
EXECUTING = ("papermill", "jupytext", "nbformat", "cod.report.notebook_html")


def regenerate_all(jobs: int = 2) -> None:
    """Re-execute every notebook stage, `jobs` at a time (each once what it reads exists), and record
    them in dvc.lock (`cod.pipeline`); none of the stages they would need weights for runs. The HTML
    copies of those executed are rendered at the end, in this process (`HTML_LATER`)."""
    stages = {name: stage for name, stage in resolved_stages().items() if "cod.pipeline.notebook" in stage.cmd}
    started = time.time()
    os.environ[HTML_LATER] = "1"  # inherited by the stages' commands
    try:
        run_stages(stages, jobs, "notebooks", preload=EXECUTING)
    finally:
        del os.environ[HTML_LATER]
        executed = [ROOT / out for stage in stages.values() for out in stage.outs if out.endswith(".ipynb")]
        for path in executed:
            if path.exists() and path.stat().st_mtime >= started:
                render_html(path)


class _LineHandler(logging.StreamHandler):
    """Writes log messages as they are, one line each (papermill's cell outputs end in newlines), less
    papermill's per-cell bookkeeping and the text stand-in of a Markdown display (`BOOKKEEPING`)."""

    def format(self, record: logging.LogRecord) -> str:
        return record.getMessage().rstrip("\n")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage().strip()
        return not message.startswith(BOOKKEEPING) and super().filter(record)


BOOKKEEPING = ("Executing Cell", "Ending Cell", "Executing notebook with kernel", "<IPython.core.display.Markdown object>")


def show_papermill_log() -> None:
    """Show papermill's progress and the cells' output on stderr."""
    log = logging.getLogger("papermill")
    if not log.handlers:
        log.addHandler(_LineHandler())
        log.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.pipeline.notebook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", help="notebook name, e.g. a4_variance_dynamics")
    parser.add_argument("--all", action="store_true",
                        help="every notebook stage, recorded in dvc.lock (what `make notebooks` runs)")
    parser.add_argument("--jobs", type=int, default=2, help="--all: notebooks executed side by side (default 2)")
    parser.add_argument("--html", action="store_true",
                        help="render an HTML copy of every executed notebook (ignored by git), executing nothing")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter (YAML value); repeatable")
    parser.add_argument("--output", type=Path,
                        help="where the executed notebook goes (its figures then go to OUTPUT_figures/)")
    args, extra = parser.parse_known_args(argv)
    bare = [p for p in args.param if "=" not in p]
    if bare:  # papermill's `-p KEY VALUE`: argparse would only name the value as unrecognised
        given, value = (f"{bare[0]} {extra[0]}", extra[0]) if extra else (bare[0], "...")
        print(f"error: -p {given}: a parameter is one word, KEY=VALUE: -p {bare[0]}={value} "
              "(papermill's -p KEY VALUE is two)", file=sys.stderr)
        return 2
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.all:
        if args.jobs < 1:
            parser.error(f"--jobs {args.jobs}: allowed: a positive integer")
        regenerate_all(args.jobs)
        return 0
    if args.html:
        render_all_html()
        return 0
    if args.name is None:
        parser.error("give a notebook name or --all")
    show_papermill_log()
    from papermill.exceptions import PapermillExecutionError  # lazy: as in `execute`

    try:
        execute(args.name, dict(parse_override(p) for p in args.param), args.output)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except PapermillExecutionError as e:  # the cell's traceback is in the executed notebook
        print(f"error: {args.name} stopped in cell [{e.exec_count}]: {e.ename}: {e.evalue}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
