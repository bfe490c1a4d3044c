"""First use of the command lines: one-line setting errors, a --help that lists the settings,
notebooks run in the terminal that leave clean notebooks and the committed figures alone."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cod import config
from cod.pipeline import notebook
from cod.train import run

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- setting errors


@pytest.mark.parametrize(
    "command, message",
    [
        (["cod.train.run", "--out", "nowhere", "model.norm=rms"], "model.norm='rms' is not allowed; allowed: pre_ln, lns"),
        (["cod.pipeline.notebook", "no_such_notebook"], "notebook 'no_such_notebook' not found; available: a0_miniature"),
        (["cod.pipeline.notebook", "a3_theory", "-p", "depth=4"], "notebook 'a3_theory' has no parameter 'depth'"),
    ],
)
def test_a_bad_setting_is_one_line_and_status_2(command, message):
    done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()  # no traceback
    assert line.startswith("error: ") and message in line


def test_train_help_lists_every_setting(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--help"])
    assert exit_info.value.code == 0
    shown = capsys.readouterr().out
    doc = re.search(r"^    norm: Norm = .*#\s*(.+)$", Path(config.__file__).read_text(), re.MULTILINE).group(1)
    choices = ", ".join(config.Norm)
    assert f"  model.norm: {{{choices}}} = pre_ln\n      {doc}\n" in shown
    assert "  model.n_kv_heads: int | None = None\n" in shown and "  seed: int = 0\n" in shown
    settings = config.flatten(config.RunConfig().to_dict())
    assert all(f"  {name}: " in shown for name in settings), [n for n in settings if f"  {n}: " not in shown]


# ---------------------------------------------------------------- notebooks

TINY = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
profile = "default"
figures_dir = None  # default: figures/<profile>/tiny

# %%
from pathlib import Path

import tqdm.auto  # in a kernel without ipywidgets, tqdm warns here unless told not to

figures_dir = figures_dir or f"figures/{profile}/tiny"
Path(figures_dir).mkdir(parents=True, exist_ok=True)
Path(figures_dir, "figure.txt").write_text("drawn")
print("hello from the kernel")
'''


@pytest.fixture
def tiny_repo(tmp_path, monkeypatch):
    """A repository of one tiny notebook, `tiny`, that draws a 'figure' into its figures_dir."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "tiny.py").write_text(TINY)
    (tmp_path / "params.yaml").write_text("profile: default\nprofiles: {default: {}}\nnotebooks:\n  tiny: {}\n")
    monkeypatch.setattr(notebook, "ROOT", tmp_path)
    monkeypatch.setattr(notebook, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(notebook, "EXECUTED", tmp_path / "notebooks" / "executed")
    monkeypatch.setattr(logging.getLogger("papermill"), "handlers", [])
    return tmp_path


def test_notebook_shows_its_output_and_executes_clean(tiny_repo, capsys):
    assert notebook.main(["tiny"]) == 0
    assert "hello from the kernel" in capsys.readouterr().err
    executed = tiny_repo / "notebooks" / "executed" / "default" / "tiny.ipynb"
    text = executed.read_text() + executed.with_suffix(".html").read_text()
    assert "TqdmWarning" not in text
    for machine_path in (str(tiny_repo), str(ROOT), sys.prefix):
        assert machine_path not in text
    recorded = json.loads(executed.read_text())["metadata"]["papermill"]
    assert recorded["input_path"] == "notebooks/tiny.py"
    assert recorded["output_path"] == "notebooks/executed/default/tiny.ipynb"
    assert (tiny_repo / "figures" / "default" / "tiny" / "figure.txt").exists()


def test_notebook_output_elsewhere_takes_its_figures_along(tiny_repo):
    elsewhere = tiny_repo / "trial" / "mine.ipynb"
    assert notebook.main(["tiny", "--output", str(elsewhere)]) == 0
    assert (tiny_repo / "trial" / "mine_figures" / "figure.txt").read_text() == "drawn"
    assert elsewhere.with_suffix(".html").exists()
    assert not (tiny_repo / "figures").exists()
    chosen = tiny_repo / "chosen"
    notebook.execute("tiny", {"figures_dir": "chosen"}, elsewhere)
    assert (chosen / "figure.txt").exists()


NOISY = TINY.split("# %%")[0] + """# %% tags=["parameters"]
profile = "default"

# %%
import random

from IPython.display import Markdown

noise = 1 + random.random() * 1e-13  # as summation order or thread count may change the last digits
print("printed", 1 / 3 * noise)
display(Markdown(f"shown {2 / 3 * noise}."))
{"returned": 1 / 7 * noise}
"""


def test_re_execution_on_the_same_inputs_gives_the_same_bytes(tiny_repo):
    """Cell ids, timings and the last digits of floats change from one execution to the next;
    the executed notebook does not."""
    (tiny_repo / "notebooks" / "noisy.py").write_text(NOISY)
    executed = tiny_repo / "notebooks" / "executed" / "default" / "noisy.ipynb"
    assert notebook.main(["noisy"]) == 0
    first = executed.read_bytes()
    assert notebook.main(["noisy"]) == 0
    assert executed.read_bytes() == first
    text = first.decode()
    assert "printed 0.3333333333" in text and "shown 0.6666666667." in text and "'returned': 0.1428571429" in text
