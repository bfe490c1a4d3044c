"""Notebook parameters: params.yaml's, with its overrides for the profile run, checked against the
notebook's own defaults before anything executes; the help's examples work as written; a missing
result names the command for the profile asked."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from cod import kernel
from cod.config import ConfigError, parse_override
from cod.claims.ladder import Rung, load_ladder
from cod.pipeline import notebook, stages
from cod.records.results import run_dirs

A4 = "a4_variance_dynamics"


def checked(name: str, overrides: dict) -> dict:
    declared = notebook.declared_parameters(notebook.load_source(name))
    return notebook.resolved_parameters(name, declared, overrides)


@pytest.fixture
def no_execution(monkeypatch):
    """Fail the test if papermill is asked to execute anything."""
    import papermill

    def refuse(*args, **kwargs):
        raise AssertionError("executed despite a refused parameter")

    monkeypatch.setattr(papermill, "execute_notebook", refuse)


@pytest.mark.parametrize("override, message", [
    ("shallow_layers=2.5", "shallow_layers=2.5 is not allowed; expected int (the default is 4)"),
    ("shallow_layers=true", "shallow_layers=True is not allowed; expected int"),
    ("stable_factor=high", "stable_factor='high' is not allowed; expected float (the default is 2.0)"),
    ("steps_to_show=[0.5, x]", "steps_to_show=[0.5, 'x'] is not allowed; expected list of float"),
    ("variants=lns", "variants='lns' is not allowed; expected list of str"),
    ("experiment=null", "experiment=None is not allowed; expected str"),
    ("profile=papr", "profile='papr' is not allowed; allowed: smoke, default, headline, paper"),
])
def test_a_value_of_the_wrong_type_is_one_line_before_anything_runs(override, message, no_execution, capsys):
    assert notebook.main([A4, "-p", override]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: notebook '{A4}': {message}") and err.count("\n") == 1


def test_values_of_the_defaults_type_pass():
    given = checked(A4, dict(parse_override(p) for p in (
        "stable_factor=3", "warmup_fraction=1e-3", "steps_to_show=[1, 0.5]", "figures_dir=/tmp/x", "profile=paper")))
    assert given["stable_factor"] == 3 and given["warmup_fraction"] == 0.001  # YAML reads 1e-3 as a string
    assert given["steps_to_show"] == [1, 0.5] and given["profile"] == "paper"


def test_every_notebook_stage_passes_its_own_parameters():
    """params.yaml's values for each notebook, under each profile, fit the defaults of its parameters cell."""
    for name in sorted({stages.notebook_of(stage) for stage in stages.notebook_stages().values()}):
        checked(name, {})
        for profile in notebook.load_params()["profiles"]:
            assert checked(name, {"profile": profile})["profile"] == profile


def test_a_profiles_overrides_are_passed_under_that_profile_only():
    """The smoke profile's sample sizes come from params.yaml; under the default profile nothing is
    passed, so the notebook's own defaults (the committed run's) apply; -p wins over both."""
    name = "a3_theory"
    declared = notebook.declared_parameters(notebook.load_source(name))
    smoke, default = checked(name, {"profile": "smoke"}), checked(name, {"profile": "default"})
    assert smoke["var_layers"] == 8 and smoke["input_stds"] == [1.0, 10.0] and declared["var_layers"] == 96
    assert default == {"profile": "default"}
    assert checked(name, {"profile": "smoke", "var_layers": 5})["var_layers"] == 5
    assert checked(name, {"profile": "paper"})["var_layers"] == 128
    assert checked("h0_pilot", {})["profile"] == "headline"  # its entry names its own profile


@pytest.mark.parametrize("profiles, message", [
    ({"smoke": {"var_layer": 8}}, "notebooks.a3_theory.profiles.smoke: notebook 'a3_theory' has no parameter "
                                  "'var_layer'; allowed: analyses_dir, figures_dir, id_samples"),
    ({"paper": {"profile": "smoke"}}, "notebooks.a3_theory.profiles.paper: notebook 'a3_theory' has no parameter "
                                      "'profile'"),
    ({"paper": {"var_layers": "many"}}, "notebooks.a3_theory.profiles.paper: notebook 'a3_theory': "
                                        "var_layers='many' is not allowed; expected int (the default is 96)"),
    ({"smok": {"var_layers": 8}}, "notebooks.a3_theory.profiles.smok: 'smok' is not a profile; "
                                  "allowed: smoke, default, headline, paper"),
])
def test_a_bad_profile_block_is_one_line_before_anything_runs(profiles, message, monkeypatch, no_execution, capsys):
    """Every block is checked, not only the active profile's: a typo in `paper` stops a default run."""
    params = notebook.load_params()
    params["notebooks"]["a3_theory"] = {"profiles": profiles}
    monkeypatch.setattr(notebook, "load_params", lambda: params)
    assert notebook.main(["a3_theory"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


def example(words: list[str]) -> tuple[str, dict]:
    """The notebook and parameters of a help example, `python -m cod.pipeline.notebook NAME -p KEY=VALUE`
    or `papermill IN.ipynb OUT.ipynb -y YAML -p KEY VALUE`."""
    if words[0] == "papermill":
        given = {}
        for i, word in enumerate(words):
            if word == "-y":
                given.update(yaml.safe_load(words[i + 1]))
            elif word == "-p":
                given[words[i + 1]] = words[i + 2]
        return Path(words[1]).stem, given
    return words[3], dict(parse_override(words[i + 1]) for i, word in enumerate(words) if word == "-p")


def test_the_help_examples_parse_against_the_notebook():
    """Every example of the module's help that passes parameters names parameters of the
    notebook, of the types it declares."""
    lines = re.sub(r"\\\n\s*", " ", notebook.__doc__).splitlines()  # continued lines joined
    examples = [example(shlex.split(line)) for line in lines if " -p " in line]
    assert [name for name, _ in examples] == [A4, A4]
    for name, given in examples:
        assert given and checked(name, given)


def test_a_missing_result_names_the_command_for_the_profile_asked(tmp_path):
    """`dvc repro train@...` trains params.yaml's profile: a notebook run with -p profile=paper
    is told the command that trains the paper profile's runs."""
    command = "python -m cod.pipeline.experiments train a_130m --profile paper"
    with pytest.raises(FileNotFoundError, match=re.escape(f"train it with `{command}`")):
        run_dirs("a_130m", tmp_path / "runs" / "paper")
    other = tmp_path / "runs" / "paper" / "b_depth" / "d16_s0"  # a ladder whose rung d12 has no run
    other.mkdir(parents=True)
    (other / "final.json").write_text('{"val_ppl": 1.0}')
    (other / "history.jsonl").write_text("")
    with pytest.raises(FileNotFoundError, match=re.escape(command.replace("a_130m", "b_depth"))):
        load_ladder([Rung("d12", "b_depth", "d12")], tmp_path / "runs" / "paper", tmp_path / "analyses")


# ---------------------------------------------------------------- stable bytes


@pytest.mark.parametrize("text, expected", [
    ("RMS {'power': 0.0259901567374697, 'log': inf}", "RMS {'power': 0.02599015674, 'log': inf}"),
    ("sum 0.30000000000000004.", "sum 0.3."),  # a sentence's full stop is no digit
    ("-1.0000000000000002e-05", "-1e-05"),
    ("beta = 1.09 [1.05, 1.13]; 0.1234567891", "beta = 1.09 [1.05, 1.13]; 0.1234567891"),  # written on purpose
    ("v1.2.345678901234, run_0.12345678901234", "v1.2.345678901234, run_0.12345678901234"),  # no decimals
    ("at 2026-11-25T14:04:22.153904", "at 2026-11-25T14:04:22.153904"),
])
def test_long_floats_keep_ten_significant_digits_and_short_ones_stay(text, expected):
    assert notebook.round_floats(text) == expected


def test_json_outputs_are_rounded_and_images_left_alone():
    output = nbformat.v4.new_output("display_data", data={
        "text/plain": "0.6666666666666666", "application/json": {"x": [0.1 + 0.2, 3, "0.1111111111111"]},
        "image/svg+xml": "<svg width='0.6666666666666666'/>"})
    notebook.round_output(output)
    assert output.data["text/plain"] == "0.6666666667"
    assert output.data["application/json"] == {"x": [0.3, 3, "0.1111111111111"]}
    assert output.data["image/svg+xml"] == "<svg width='0.6666666666666666'/>"


def test_a_cell_id_follows_its_source_not_its_place():
    ids = notebook.cell_ids("a4", ["import x", "print(1)", "import x"])
    assert len(set(ids)) == 3 and all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)
    assert notebook.cell_ids("a4", ["# new", "import x", "print(2)", "import x"]) == [
        notebook.cell_ids("a4", ["# new"])[0], ids[0], notebook.cell_ids("a4", ["print(2)"])[0], ids[2]]
    assert notebook.cell_ids("b1", ["import x"])[0] != ids[0]


def test_stabilise_drops_the_timings_and_keeps_the_outcome():
    cell = nbformat.v4.new_code_cell("1", metadata={
        "execution": {"iopub.execute_input": "2026-11-25T14:04:22Z"},
        "papermill": {"duration": 0.5, "start_time": "t0", "end_time": "t1", "status": "completed", "exception": False}})
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={
        "papermill": {"duration": 15.1, "start_time": "t0", "end_time": "t1", "parameters": {"profile": "default"}}})
    notebook.stabilise(nb, "a4")
    assert cell.metadata == {"papermill": {"status": "completed", "exception": False}}
    assert nb.metadata.papermill == {"parameters": {"profile": "default"}}
    assert cell.id == notebook.cell_ids("a4", ["1"])[0]
    nbformat.validate(nb)


def test_regenerating_every_notebook_refuses_a_job_count_below_one(capsys):
    with pytest.raises(SystemExit):
        notebook.main(["--all", "--jobs", "0"])
    assert "--jobs 0: allowed: a positive integer" in capsys.readouterr().err


# ---------------------------------------------------------------- errors in one line; papermill on its own


@pytest.mark.parametrize("argv, message", [
    ([A4, "-p", "steps_to_show=[0.5, 1.0"], "error: override 'steps_to_show=[0.5, 1.0': the value is not valid YAML"),
    ([A4, "-p", "shallow_layers", "2"], "error: -p shallow_layers 2: a parameter is one word, KEY=VALUE: "
                                        "-p shallow_layers=2 (papermill's -p KEY VALUE is two)"),
    ([A4, "-p", "shallow_layers"], "error: -p shallow_layers: a parameter is one word, KEY=VALUE"),
])
def test_a_malformed_parameter_is_one_line_before_anything_runs(argv, message, no_execution, capsys):
    assert notebook.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err


def test_papermills_injected_cell_is_read_from_the_kernels_history():
    """The cell papermill injects follows the cell tagged `parameters`: its names are checked against
    that cell's defaults; without one (a notebook opened in Jupyter) nothing is checked."""
    defaults = "profile = 'default'\nshallow_layers = 4  # blocks\nfigures_dir = None\n"
    history = ["", "import os", defaults, "# Parameters\nprofile = \"default\"\nshalow_layers = 2\n", "x = 1"]
    assert kernel.injected(history) == (["profile", "shalow_layers"],
                                        {"profile": "default", "shallow_layers": 4, "figures_dir": None})
    assert kernel.injected(["", defaults, "x = 1"]) is None
    assert kernel.ParameterError("notebook 'x' has no parameter 'y'")._render_traceback_() == [
        "ParameterError: notebook 'x' has no parameter 'y'"]


def test_without_figures_dir_a_notebook_writes_to_a_folder_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    folder = kernel.start(A4, "default", None)
    assert folder == str(tmp_path / "cod-figures" / "default" / A4) and Path(folder).is_dir()
    assert not kernel.committed(folder, A4, "default")
    assert kernel.committed(f"figures/default/{A4}", A4, "default")
    given = tmp_path / "given" / "a4"
    assert kernel.start(A4, "default", str(given)) == str(given) and given.is_dir()  # made if missing


# the notebook papermill runs below: a few seconds of cells, and only committed files to read (no
# token arrays: a fresh clone has none)
CHEAPEST = "a2_pre_vs_post_ln"


def papermill_run(tmp_path, *parameters: str) -> subprocess.CompletedProcess:
    """Plain papermill on notebook CHEAPEST (its source written as .ipynb) from the repository, the
    system's temporary folder moved to `tmp_path`."""
    source = tmp_path / f"{CHEAPEST}.ipynb"
    nbformat.write(notebook.load_source(CHEAPEST), source)
    command = [str(Path(sys.executable).with_name("papermill")), str(source), str(tmp_path / "out.ipynb"), *parameters]
    env = {**os.environ, "TMPDIR": str(tmp_path), "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, cwd=notebook.ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_plain_papermill_leaves_the_committed_results_alone(tmp_path):
    committed = sorted((notebook.ROOT / "figures" / "default" / CHEAPEST).iterdir())
    before = {p: p.read_bytes() for p in committed}
    readme = (notebook.ROOT / "README.md").read_bytes()
    done = papermill_run(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    written = tmp_path / "cod-figures" / "default" / CHEAPEST
    assert (written / "claims.json").is_file() and list(written.glob("*.png"))
    assert {p: p.read_bytes() for p in committed} == before
    assert (notebook.ROOT / "README.md").read_bytes() == readme


@pytest.mark.slow
def test_plain_papermill_stops_at_an_undeclared_parameter_in_one_line(tmp_path):
    done = papermill_run(tmp_path, "-p", "profle", "default")
    assert done.returncode != 0
    line = f"ParameterError: notebook '{CHEAPEST}' has no parameter 'profle'; allowed: "
    assert line in done.stderr
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    [error] = [o for cell in out.cells for o in cell.get("outputs", []) if o.output_type == "error"]
    assert len(error.traceback) == 1 and error.traceback[0].startswith(line)
    assert not (tmp_path / "cod").exists(), "it ran past the check"
