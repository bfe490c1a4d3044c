"""Analyses and evaluation run on the model's device (issue #14).

There is no GPU here, so `on_device()` stands in for one: while it is active, a model on the CPU
is analysed as if it were on a GPU, and the test fails wherever the code would break there or
copy through the CPU. Two things give that away: a tensor made without `device=` (torch.zeros,
torch.tensor, torch.arange, ... make it on the CPU; torch.from_numpy always does; an explicit
device="cpu" passes, for what is meant to stay there) and a tensor read into numpy without
`.cpu()` first. Inputs handed to a function on the CPU cannot be told apart here; analyse_layers
moves its tokens to the model's device. Where CUDA is available, the analyses also run on it.
"""

import contextlib
from unittest import mock

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors
from torch.utils._pytree import tree_leaves

from cod.runs import analysis
from cod.config import ModelConfig
from cod.data.tasks import Item
from cod.eval.lm import LanguageModel
from cod.eval.perplexity import perplexity, perplexity_text
from cod.eval.zeroshot import loglikelihoods, score_items
from cod.metrics.effectiveness import analyse_layers
from cod.model import Transformer
from test_eval import WORDS, word_tokenizer

FACTORIES = _device_constructors()  # the functions that take `device=` (what `with torch.device(...)` sets)
NUMPY = (torch.Tensor.numpy, torch.Tensor.__array__)


def _moved(t: torch.Tensor) -> bool:
    return getattr(t, "_moved_to_cpu", False)


class OnDevice(TorchFunctionMode):
    """Fails on a tensor made without `device=` and on numpy reads of tensors that did not come
    through `.cpu()` (a tensor counts as moved when `.cpu()` made it, or ops on moved tensors only)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            raise AssertionError(f"torch.{func.__name__} without device=: on a GPU it makes a CPU tensor")
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if func in NUMPY and not _moved(inputs[0]):
            raise AssertionError("numpy of a tensor on the model's device: move it with .cpu() first")
        out = func(*args, **kwargs)
        moved = func is torch.Tensor.cpu or (bool(inputs) and all(map(_moved, inputs)))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                t._moved_to_cpu = moved  # in-place ops return their input: its mark is renewed
        return out


def _from_numpy(array):
    raise AssertionError("torch.from_numpy: on a GPU it makes a CPU tensor")


@contextlib.contextmanager
def on_device():
    with mock.patch.object(torch, "from_numpy", _from_numpy), OnDevice():
        yield


@pytest.mark.parametrize("code", [
    lambda: torch.arange(3), lambda: torch.tensor([1, 2]), lambda: torch.zeros(2, dtype=torch.long),
    lambda: torch.eye(2), lambda: torch.randperm(4), lambda: torch.from_numpy(np.zeros(2)),
    lambda: (torch.ones(2, device="cpu") * 2).numpy(), lambda: np.asarray(torch.ones(2, device="cpu").sum(0)),
])
def test_the_guard_fails_where_a_gpu_would(code):
    with pytest.raises(AssertionError), on_device():
        code()


def test_the_guard_passes_tensors_made_on_a_device_and_read_through_cpu():
    x = torch.ones(3)
    with on_device():
        y = torch.arange(3, device=x.device) + torch.zeros_like(x)
        means = [y.double().cpu(), x.new_ones(3).cpu()]
        assert torch.stack(means).float().numpy().shape == (2, 3) and y.sum().item() == 3


def test_layer_analysis_makes_its_tensors_on_the_models_device():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))  # 4 windows to score, 4 (32 tokens > width 16 + 1) to fit
    inputs = (ids[:4, :-1], ids[:4, 1:], ids[4:, :-1], ids[:2, :-1])
    plain = analyse_layers(model, *inputs, attention_thresholds=[1e-2], seed=3)
    with on_device():
        guarded = analyse_layers(model, *inputs, attention_thresholds=[1e-2], seed=3)
    np.testing.assert_array_equal(guarded.permutation.matrix, plain.permutation.matrix)
    np.testing.assert_array_equal(guarded.jacobians.mean, plain.jacobians.mean)
    np.testing.assert_array_equal(guarded.attention.entropy, plain.attention.entropy)
    assert guarded.usefulness.loss.tolist() == plain.usefulness.loss.tolist()


def word_model() -> LanguageModel:
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=len(WORDS), d_model=16, n_layers=2, n_heads=2, max_seq_len=32)
    return LanguageModel(Transformer(config), word_tokenizer())


ITEMS = [Item(("a b", "a b"), ("x", "yyyy zz"), gold=1), Item(("b", "b"), ("a x", "zz"), gold=0)]


def evaluation(lm: LanguageModel, tokens: np.ndarray) -> tuple:
    """Perplexity, zero-shot accuracy, and log-likelihoods with their greedy matches."""
    scores, greedy = loglikelihoods(lm, [("a b", " x"), ("b", " a x yyyy")])
    return perplexity(lm, tokens, seq_len=8, batch_size=3), score_items(lm, ITEMS), scores.tolist(), greedy.tolist()


def test_evaluation_makes_its_tensors_on_the_models_device():
    lm, tokens = word_model(), np.random.default_rng(0).integers(0, len(WORDS), 100)
    plain = evaluation(lm, tokens)
    with on_device():
        guarded = evaluation(lm, tokens)
        perplexity_text(lm, ["a b x", "yyyy zz a"], seq_len=3)
    assert guarded == plain


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_analyses_and_evaluation_run_on_a_gpu():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))  # 4 windows to score, 4 (32 tokens > width 16 + 1) to fit
    inputs = (ids[:4, :-1], ids[:4, 1:], ids[4:, :-1], ids[:2, :-1])
    on_cpu = analyse_layers(model, *inputs, attention_thresholds=[1e-2])
    on_gpu = analyse_layers(model.cuda(), *inputs, attention_thresholds=[1e-2])
    np.testing.assert_allclose(on_gpu.removal.loss, on_cpu.removal.loss, rtol=1e-4)
    np.testing.assert_allclose(on_gpu.jacobians.deviation, on_cpu.jacobians.deviation, rtol=1e-3)
    lm, tokens = word_model(), np.random.default_rng(0).integers(0, len(WORDS), 100)
    expected = perplexity(lm, tokens, seq_len=8)["ppl"]
    lm.model.cuda()
    assert perplexity(lm, tokens, seq_len=8)["ppl"] == pytest.approx(expected, rel=1e-4)
    assert score_items(lm, ITEMS)["n"] == len(ITEMS)


def test_the_analysis_runs_on_the_device_asked_for(monkeypatch, capsys):
    devices = []
    monkeypatch.setattr(analysis, "analyse", lambda name, params, device, progress, only: devices.append(device))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    analysis.main(["b_depth"])
    analysis.main(["b_depth", "--device", "cpu"])
    with pytest.raises(SystemExit):
        analysis.main(["b_depth", "--device", "cuda"])
    assert "--device cuda: no CUDA device is visible here; allowed here: cpu" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        analysis.main(["b_depth", "--device", "gpu"])
    assert "argument --device: invalid choice: 'gpu'" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    analysis.main(["b_depth"])
    assert devices == ["cpu", "cpu", "cuda"]
