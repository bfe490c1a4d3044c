"""Paper B's scores of open-weight decoders (`python -m cod.analysis open_weights MODEL`), end to end on a
tiny model standing in for the pretrained one, and the settings' checks."""

import json

import numpy as np
import pytest
import torch
import yaml

import cod.analysis
import cod.eval.pretrained
from cod.analysis import load_layers, open_weight_settings, open_weight_windows
from cod.config import ConfigError, ModelConfig
from cod.model import Transformer

SETTINGS = dict(models=["tiny"], seq_len=8, eval_tokens=32, permutation_tokens=16, permutation_pairs=4,
                fit_tokens=64, jacobian_tokens=2, jacobian_context=6, attention_thresholds=[0.1, 0.01], tau=0.1,
                threads=1)


class CharTokenizer:
    """Letters a-z as ids 1-26, the separator `<|endoftext|>` as 0."""

    def get_vocab(self):
        return {"<|endoftext|>": 0}

    def convert_tokens_to_ids(self, token):
        return 0

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) - 96 for c in text.lower() if c.isalpha()]}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    raw = tmp_path / "data" / "raw"
    raw.mkdir(parents=True)
    articles = [" ".join(["alpha beta gamma", "delta"] * (5 + k)) for k in range(20)]
    (raw / "bbc.jsonl").write_text("".join(json.dumps({"text": a}) + "\n" for a in articles))
    monkeypatch.setattr(cod.analysis, "ROOT", tmp_path)
    return tmp_path


def test_windows_are_consecutive_documents_after_their_separator(repo):
    eval_windows, fit_windows = open_weight_windows(CharTokenizer(), 8, [3, 2])
    assert eval_windows.shape == (3, 9) and fit_windows.shape == (2, 9)
    stream = torch.cat([eval_windows[:, :-1].flatten(), fit_windows[:, :-1].flatten()])
    assert stream[0] == 0 and stream[1:].min() >= 0
    torch.testing.assert_close(eval_windows[:, -1], torch.cat([eval_windows[1:, 0], fit_windows[:1, 0]]))


class BosTokenizer(CharTokenizer):
    """As Gemma's: every text starts with BOS (27), which is also the document separator."""

    bos_token_id = 27

    def get_vocab(self):
        return {}

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [27] * add_special_tokens + super().__call__(text)["input_ids"]}


def test_windows_of_a_bos_model_each_start_with_it(repo):
    (windows,) = open_weight_windows(BosTokenizer(), 8, [4])
    plain, = open_weight_windows(CharTokenizer(), 8, [4])
    assert windows.shape == (4, 9) and (windows[:, 0] == 27).all()
    targets = windows[:, 1:].flatten()  # the stream after its first BOS, each token once, in order
    stream = torch.cat([plain[:, :-1].flatten(), plain[-1:, -1]])  # [separator, a, l, p, ...]
    torch.testing.assert_close(torch.where(targets == 27, 0, targets), stream[1:33])


def test_settings_are_checked():
    params = {"profile": "smoke", "open_weights": {**SETTINGS, "profiles": {"smoke": {"tau": 0.2}}}}
    assert open_weight_settings(params)["tau"] == 0.2
    with pytest.raises(ConfigError, match="unknown \\['taus'\\]"):
        open_weight_settings({"profile": "smoke", "open_weights": {**SETTINGS, "taus": [0.1]}})
    with pytest.raises(ConfigError, match="permutation_tokens=64 must not exceed open_weights.eval_tokens=32"):
        open_weight_settings({"profile": "smoke", "open_weights": {**SETTINGS, "permutation_tokens": 64}})
    with pytest.raises(ConfigError, match="model='other' is not in open_weights.models; allowed: tiny"):
        cod.analysis.analyse_open("other", {"profile": "smoke", "open_weights": SETTINGS})


def test_every_score_is_stored_and_reloaded(repo, monkeypatch):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=27, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    monkeypatch.setattr(cod.analysis, "load_layered", lambda name: (model, CharTokenizer()))
    cod.analysis.analyse_open("tiny", {"profile": "smoke", "open_weights": SETTINGS})
    folder = repo / "analyses" / "smoke" / "open_weights" / "tiny"
    assert not (folder / "jacobians.npz").exists()  # the matrices of real widths are too large for git
    scores = load_layers(folder)
    assert scores.jacobians.mean is None and scores.jacobians.deviation.shape == (3,)
    assert np.isfinite(scores.permutation.matrix).sum() == 3  # 4 pairs asked for, 3 exist
    assert scores.attention.sparsity.shape == (3, 2, 2) and scores.usefulness.loss.shape == (3,)
    assert scores.removal.base_loss == pytest.approx(scores.usefulness.base_loss)  # the same scored windows
    settings = json.loads((folder / "settings.json").read_text())
    assert settings["model"] == "tiny" and settings["eval_tokens"] == 32


def test_params_yaml_settings_are_complete():
    params = yaml.safe_load(open(cod.analysis.ROOT / "params.yaml"))
    for profile in ("smoke", "default", "paper"):
        spec = open_weight_settings({**params, "profile": profile})
        assert set(spec["models"]) <= set(cod.eval.pretrained.PRETRAINED)
        assert all(cod.eval.pretrained.PRETRAINED[m].kind == "decoder" for m in spec["models"])
