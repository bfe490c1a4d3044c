"""Progress bars of the long scoring loops: on stderr with the loop's total when asked for, silent
when not (and by default off a terminal), and the scores the same either way."""

import sys

import numpy as np
import pytest
import torch

from cod.runs import analysis
from cod.eval.lm import LanguageModel
from cod.eval.zeroshot import evaluate
from cod.metrics.jacobian import block_jacobians
from cod.metrics.permutation import permutation_scores
from cod.metrics.stream import residual_stream
from cod.metrics.usefulness import usefulness_scores
from cod.progress import shown
from test_eval import WORDS, bigram_model, word_tokenizer
from test_metrics import LAYERS, tiny, tokens


def layer_scores(progress):
    """Permutation matrix, usefulness losses and Jacobian deviations of a tiny model."""
    model = tiny()
    with torch.no_grad():
        stream = residual_stream(model, *tokens())
        fit = residual_stream(model, tokens(batch=6, seed=3)[0])
        perm = permutation_scores(model, stream, pairs=3, seed=2, progress=progress)
        useful = usefulness_scores(model, stream, fit, progress=progress)
    jac = block_jacobians(model, residual_stream(model, tokens(batch=2)[0]), progress=progress)
    return perm.matrix, useful.loss, jac.deviation


def last_state(err: str, desc: str) -> str:
    """The last drawing of the bar named `desc` in captured stderr (tqdm redraws with carriage returns)."""
    return [line for line in err.replace("\r", "\n").splitlines() if line.startswith(f"{desc}:")][-1]


def test_layer_scores_show_each_loop_with_its_total_and_stay_the_same(capsys):
    quiet = layer_scores(False)
    assert capsys.readouterr().err == ""
    loud = layer_scores(True)
    err = capsys.readouterr().err
    assert "| 3/3 [" in last_state(err, "permutation pairs")  # the pairs drawn, not all L(L - 1) / 2
    assert f"| {LAYERS}/{LAYERS} [" in last_state(err, "usefulness blocks")
    assert f"| {LAYERS}/{LAYERS} [" in last_state(err, "Jacobian blocks")
    for a, b in zip(quiet, loud):
        np.testing.assert_array_equal(a, b)


def test_zero_shot_counts_requests_and_scores_the_same(capsys):
    table = torch.randn(len(WORDS), len(WORDS), generator=torch.Generator().manual_seed(0))
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[])
    quiet = evaluate(lm, "copa", limit=6, progress=False)
    assert capsys.readouterr().err == ""
    loud = evaluate(lm, "copa", limit=6, progress=True)
    err = capsys.readouterr().err
    assert "| 12/12 [" in last_state(err, "zero-shot copa")  # two choices per item, one request each
    assert loud == quiet


def test_the_default_follows_whether_stderr_is_a_terminal(capsys, monkeypatch):
    assert not shown(None)  # captured stderr, as papermill's kernels have
    layer_scores(None)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert shown(None) and not shown(False)


@pytest.mark.parametrize("flag, progress", [([], None), (["--progress"], True), (["--no-progress"], False)])
def test_the_analysis_command_passes_its_progress_flag(flag, progress, monkeypatch):
    asked = []
    monkeypatch.setattr(analysis, "analyse", lambda name, params, device, progress, only: asked.append(progress))
    analysis.main(["b_depth", "--device", "cpu", *flag])
    assert asked == [progress]
