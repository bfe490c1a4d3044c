"""The README's code runs as written: its Python blocks, and its training commands on a tiny budget.

What a block leaves blank (`idx`, `hf_model`, `tokens`, ...) is filled by small fixtures; what the
pipeline would have made (the tokens and tokenizer of the default profile) is made here in
miniature under the same names, so a README that names the wrong file fails.
"""

import codeop
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import documentation, torchrun
from cod.runs import analysis
from cod.data.tokenizer import train_bpe
from cod.runs.params import load_params

ROOT = Path(__file__).resolve().parents[1]
README = documentation()  # README.md and the docs pages it leads to


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def commands(program: str) -> list[list[str]]:
    """Every README shell line that runs `program`, split into words, comments dropped."""
    lines = [line.split("#")[0].strip() for block in blocks("bash") for line in block.splitlines()]
    return [shlex.split(line) for line in lines if program in line]


# README shell lines this module does not run, and where they are run instead
RUN_ELSEWHERE = {
    "make repro": "the smoke pipeline (tests/test_pipeline.py runs dvc repro in a copy)",
    "make test": "CI (.ci/run)",
    "dvc exp": "tests/test_dvc_experiments.py (the experiment and its table, in a scratch repository)",
    "dvc dag": "tests/test_dvc_plots.py (its lines' width)",
    "dvc metrics": "tests/test_dvc_plots.py (its lines' width)",
    "dvc plots": "tests/test_dvc_plots.py (the page in chromium)",
    "jupyter lab": "tests/test_jupyter.py (the server's contents API and default viewer)",
    "make notebooks": "tests/test_pipeline.py (every notebook regenerated from committed files)",
    "make plan": "tests/test_experiments.py (the plan of a profile)",
    "cod.data.snapshot": "tests/test_pipeline.py (snapshot, then dvc repro prepare)",
}
RUN_HERE = ("cod.train.run", "cod.pipeline.notebook", "papermill")


def default_vocab() -> int:
    """The BPE vocabulary the default profile's pipeline prepares (params.yaml)."""
    base = load_params(ROOT / "params.yaml")["profiles"]["default"]["base"]
    return int(base["data.vocab_size"])


@pytest.fixture
def pipeline_data(tmp_path):
    """data/tokens/bpe<V>/ as `dvc repro prepare` leaves it (tokenizer.json, train.bin, val.bin), in miniature."""
    vocab = default_vocab()
    folder = tmp_path / "data" / "tokens" / f"bpe{vocab}"
    folder.mkdir(parents=True)
    texts = [f"the curse of depth number {i} in deep layers of language models" for i in range(200)]
    train_bpe(texts, vocab).save(str(folder / "tokenizer.json"))
    rng = np.random.default_rng(0)
    for split, n in (("train", 40_000), ("val", 70_000)):
        rng.integers(0, vocab, n).astype(np.uint16).tofile(folder / f"{split}.bin")
    (folder / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": vocab}))
    raw = tmp_path / "data" / "raw"  # data/raw/bbc.jsonl as `cod.data.snapshot` builds it, in miniature
    raw.mkdir()
    articles = [{"id": f"bbc/tech/{i:03d}", "source": "bbc", "split": "val_bbc",
                 "text": f"Article {i}. " + " ".join(texts[i:i + 40])} for i in range(20)]
    (raw / "bbc.jsonl").write_text("".join(json.dumps(article) + "\n" for article in articles))
    return tmp_path


def test_the_python_blocks_run_as_written_each_on_its_own(pipeline_data, monkeypatch):
    """Every Python block runs in a fresh namespace: it imports and defines all it uses."""
    torch.manual_seed(0)
    monkeypatch.chdir(pipeline_data)  # relative paths in the blocks resolve to the miniature pipeline data
    monkeypatch.setattr(analysis, "ROOT", pipeline_data)  # so does the repository's data/raw
    python = blocks("python")
    assert len(python) >= 3
    spaces = []
    for code in python:
        spaces.append({})
        exec(compile(code, "README.md", "exec"), spaces[-1])
    model_block, scores_block = (next(s for s in spaces if name in s) for name in ("ours", "u"))
    assert model_block["out"].states["resid_post.23"].shape == (2, 16, 256)
    assert model_block["ours"].cfg.norm == "lns"
    assert len(scores_block["u"].loss) == 4 and 0 <= scores_block["u"].score <= 1
    public = next(s for s in spaces if "distances" in s)  # a public model's own vocabulary
    assert public["x"].max() >= default_vocab() and len(public["distances"]) == len(public["model"].blocks)


def test_the_python_blocks_paste_into_the_interpreter():
    """Pasted line by line into `python`, a block never ends a compound statement without a blank
    line (the prompt reads a dedented line after an indented one as a syntax error)."""
    for code in blocks("python"):
        buffer = []
        for number, line in enumerate(code.splitlines(), 1):
            buffer.append(line)
            try:
                complete = codeop.compile_command("\n".join(buffer), "<stdin>", "single")
            except SyntaxError as error:
                pytest.fail(f"README block line {number} ({line!r}) does not paste into python: {error.msg}")
            if complete is not None:
                buffer = []


def _run(words: list[str], out: Path, data: Path, *extra: str) -> None:
    """A README command with its --out (and --weights) moved to `out` and a two-step budget on the
    miniature data."""
    words = [sys.executable if w.endswith("/python") else w for w in words]
    words[words.index("--out") + 1] = str(out)
    if "--weights" in words:
        words[words.index("--weights") + 1] = str(out / "weights")
    budget = ["train.steps=2", "data.batch_size=8", "train.ckpt_every=0", "train.stats_every=0",
              "train.eval_tokens=4096", f"data.tokens_dir={data / 'data' / 'tokens'}"]
    if words[0] == "torchrun":
        at = words.index("cod.train.run") + 1  # no GPU in the test: gloo on the CPU
        torchrun(*words[1:at], "--device", "cpu", *words[at:], *budget, *extra, cwd=ROOT)
    else:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run([*words, *budget, *extra], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "final.json").is_file()


def test_the_training_commands_run_as_written(pipeline_data, tmp_path):
    """No vocabulary override: the defaults must match what the pipeline prepares."""
    train = commands("cod.train.run")
    assert len(train) == 2
    for i, words in enumerate(train):
        _run(words, tmp_path / f"run{i}", pipeline_data)


def test_the_notebook_commands_leave_the_committed_results_alone(tmp_path):
    """The README's notebook lines, each moved to tmp (the one without --output is the stage's own
    run: it gets --output too); the committed notebook and figures must not change."""
    committed = sorted((ROOT / "figures" / "default" / "a4_variance_dynamics").iterdir())
    before = {p: p.read_bytes() for p in committed}
    lines = [list(line) for line in dict.fromkeys(map(tuple, commands("cod.pipeline.notebook") + commands("papermill")))]
    assert len(lines) == 3  # the five-minute path repeats one of them
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for i, words in enumerate(lines):
        # /tmp/ moved in the README's words before the interpreter is put in: its own path may hold /tmp/
        words = [w.replace("/tmp/", f"{tmp_path}/{i}_") for w in words]
        words = [sys.executable if w.endswith("/python") else w for w in words]
        words = [str(Path(sys.executable).with_name("papermill")) if w.endswith("/papermill") else w for w in words]
        if "cod.pipeline.notebook" in words and "--output" not in words:
            words += ["--output", str(tmp_path / f"{i}_a4.ipynb")]
        done = subprocess.run(words, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert (tmp_path / f"{i}_a4.ipynb").is_file()
        assert (tmp_path / f"{i}_a4_figures" / "claims.json").is_file()
    assert {p: p.read_bytes() for p in committed} == before


def test_every_readme_shell_line_is_run_somewhere():
    """A new README command must be added to a test here or to RUN_ELSEWHERE."""
    lines = [line.split("#")[0].strip() for block in blocks("bash") for line in block.splitlines()]
    for line in filter(None, lines):
        assert any(key in line for key in (*RUN_HERE, *RUN_ELSEWHERE)), f"README line not run by any test: {line}"
