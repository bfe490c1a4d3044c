"""Paper B's scores of open-weight decoders (`python -m cod.runs.analysis open_weights MODEL`) and paper A's depth
measures of open-weight decoders and encoders (`python -m cod.runs.analysis open_weight_depth`, which a1 reads), end
to end on tiny models standing in for the pretrained ones, and the settings' checks."""

import json
import re

import numpy as np
import pytest
import torch
import yaml
from transformers import BertConfig, BertModel

import cod.runs.analysis
import cod.eval.pretrained
from cod.metrics.adapters import as_layer_model
from cod.runs.analysis import encoder_windows, open_weight_settings, open_weight_windows
from cod.records.analyses import load_layers, load_open_depth
from cod.config import ConfigError, ModelConfig
from cod.metrics.angular import angular_distance, angular_distances
from cod.metrics.jacobian import identity_deviation, token_jacobians
from cod.metrics.pruning import layer_removal
from cod.metrics.stream import residual_stream
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
    monkeypatch.setattr(cod.runs.analysis, "ROOT", tmp_path)
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
        cod.runs.analysis.analyse_open("other", {"profile": "smoke", "open_weights": SETTINGS})


def test_every_score_is_stored_and_reloaded(repo, monkeypatch):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=27, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    monkeypatch.setattr(cod.runs.analysis, "load_layered", lambda name: (model, CharTokenizer()))
    cod.runs.analysis.analyse_open("tiny", {"profile": "smoke", "open_weights": SETTINGS})
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
    params = yaml.safe_load(open(cod.runs.analysis.ROOT / "params.yaml"))
    for profile in ("smoke", "default", "paper"):
        spec = open_weight_settings({**params, "profile": profile})
        assert set(spec["models"]) <= set(cod.eval.pretrained.PRETRAINED)
        assert all(cod.eval.pretrained.PRETRAINED[m].kind == "decoder" for m in spec["models"])


# ---------------------------------------------- paper A's depth measures (python -m cod.runs.analysis open_weight_depth)

DEPTH = dict(models=["tiny", "tiny-encoder"], seq_len=8, text_tokens=40, groups=2, arc_limit=2, arc_layers=None,
             jacobian_sequences=3, jacobian_seq_len=6, jacobian_blocks=2, threads=1)


class EncoderTokenizer(CharTokenizer):
    """As a BERT tokenizer: [CLS] 27 and [SEP] 28 around the letters."""

    cls_token_id, sep_token_id = 27, 28

    def __call__(self, text, add_special_tokens=False, verbose=True):
        return super().__call__(text)


@pytest.fixture
def depth_models(repo, monkeypatch):
    """A 3-block decoder (our Transformer) and a 2-block BERT encoder standing in for the pretrained
    models, registered as `tiny` and `tiny-encoder`; every zero-shot call recorded (with its block order)
    instead of scored."""
    torch.manual_seed(0)
    decoder = Transformer(ModelConfig(vocab_size=27, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    bert = BertConfig(vocab_size=29, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                      max_position_embeddings=16)
    encoder = as_layer_model(BertModel(bert).eval())  # eval: no dropout
    models = {"tiny": (decoder, CharTokenizer()), "tiny-encoder": (encoder, EncoderTokenizer())}
    kinds = {name: cod.eval.pretrained.Pretrained((), "", "", kind) for name, kind in (("tiny", "decoder"),
                                                                                      ("tiny-encoder", "encoder"))}
    monkeypatch.setattr(cod.runs.analysis, "PRETRAINED", kinds)
    monkeypatch.setattr(cod.runs.analysis, "load_layered", lambda name: models[name])
    orders = []

    def evaluate(lm, task, limit, progress=None):
        orders.append(lm.order)
        return {"task": task, "acc": 0.5 + 0.125 * len(orders), "acc_norm": 0.25, "chance": 0.25, "n": limit}

    monkeypatch.setattr(cod.runs.analysis, "evaluate", evaluate)
    return models, orders


def test_the_depth_analysis_stores_what_the_measures_give_directly(repo, depth_models):
    """Every stored number equals the metrics computed directly on the same windows, as the a1
    notebook computed them before the stage did (read back exactly: full precision)."""
    models, orders = depth_models
    (repo / "analyses" / "smoke" / "open_weight_depth" / "gone").mkdir(parents=True)  # a model no longer listed
    cod.runs.analysis.analyse_open_depth({"profile": "smoke", "open_weight_depth": DEPTH})
    folder = repo / "analyses" / "smoke" / "open_weight_depth"
    assert sorted(p.name for p in folder.iterdir()) == ["settings.json", "tiny", "tiny-encoder"]
    assert json.loads((folder / "settings.json").read_text()) == {**DEPTH, "device": "cpu"}
    stored = load_open_depth(folder)
    assert list(stored) == ["tiny", "tiny-encoder"]

    (windows,) = open_weight_windows(CharTokenizer(), 8, [5])  # max(groups, 40 // 8) windows
    encoder_idx = encoder_windows(EncoderTokenizer(), 5, 8)
    assert (encoder_idx[:, 0] == 27).all() and (encoder_idx[:, -1] == 28).all()
    for name, idx, targets, kind in (("tiny", windows[:, :-1], windows[:, 1:], "decoder"),
                                     ("tiny-encoder", encoder_idx, encoder_idx, "encoder")):
        model, depth = models[name][0], stored[name]
        assert (depth.kind, depth.layers, depth.tokens) == (kind, len(model.blocks), 40)
        assert depth.label == ("Pre-LN decoder" if kind == "decoder" else "Post-LN encoder")
        streams = [residual_stream(model, idx[part], targets[part]) for part in ([0, 1, 2], [3, 4])]
        distances = [angular_distances(stream) for stream in streams]
        for removal, stream in zip(depth.measures.removal, streams, strict=True):
            direct = layer_removal(model, stream)
            assert removal.base_loss == direct.base_loss and np.array_equal(removal.loss, direct.loss)
        assert np.array_equal(depth.measures.angular, np.mean(distances, axis=0))  # (L + 1, L + 1)
        assert np.array_equal(depth.measures.adjacent, np.stack([np.diag(d, 1) for d in distances], axis=1))
        assert depth.measures.adjacent.shape == (len(model.blocks), 2) and depth.measures.width == 16

        jacobians = depth.measures.jacobians
        jac_idx = idx[:3, :6] if kind == "decoder" else torch.cat([idx[:3, :5], idx[:3, -1:]], dim=1)  # [SEP] kept
        jac_stream = residual_stream(model, jac_idx)
        positions = torch.randint(6, (3,), generator=torch.Generator().manual_seed(0))
        assert jacobians.blocks == [0, len(model.blocks) - 1] and jacobians.deviation.shape == (2, 3)
        for k, block in enumerate(jacobians.blocks):
            j = token_jacobians(model, block, jac_stream.h[block], positions).double()  # (B, D, D)
            mean = j.mean(0)
            assert np.array_equal(jacobians.deviation[k], identity_deviation(j).numpy())
            assert jacobians.deviation_from_I[k] == (torch.linalg.matrix_norm(mean - torch.eye(16)) / 16).item()
            assert jacobians.diag_share_mean_J[k] == (mean.diagonal().pow(2).sum() / mean.pow(2).sum()).item()
            np.testing.assert_array_equal(jacobians.corner_of(block), (mean - torch.eye(16)).float().numpy())

    dominant = stored["tiny"].measures.dominant
    h = residual_stream(models["tiny"][0], windows[:2, :-1]).h
    assert dominant.dims == h[1].pow(2).mean((0, 1)).topk(3).indices.tolist()  # at h[(L + 1) // 3]
    assert np.array_equal(dominant.adjacent, [angular_distance(a, b).mean().item() for a, b in zip(h[:-1], h[1:])])
    assert stored["tiny-encoder"].measures.dominant is None

    # ARC-Easy on the first decoder: intact, then without block 0, 1 (the middle) and 2
    assert orders == [None, [1, 2], [0, 2], [0, 1]]
    assert [row["removed"] for row in stored["tiny"].zero_shot] == ["none", 0, 1, 2]
    assert stored["tiny"].zero_shot[0] == {"removed": "none", "task": "arc_easy", "acc": 0.625, "acc_norm": 0.25,
                                           "chance": 0.25, "n": 2}
    assert stored["tiny-encoder"].zero_shot is None


@pytest.mark.parametrize("change, message", [
    ({"models": ["tiny", "gpt2"]}, "open_weight_depth.models=['tiny', 'gpt2'] is not allowed; allowed: a list of "
                                   "distinct names of cod.eval.pretrained.PRETRAINED (tiny, tiny-encoder)"),
    ({"seq_len": 2}, "open_weight_depth.seq_len=2 is not allowed; allowed: an integer from 3 up"),
    ({"groups": True}, "open_weight_depth.groups=True is not allowed; allowed: an integer from 1 up"),
    ({"arc_layers": [0, -1]}, "open_weight_depth.arc_layers=[0, -1] is not allowed; allowed: null"),
    ({"jacobian_seq_len": 9}, "open_weight_depth.jacobian_seq_len=9 is not allowed; allowed: an integer from 1 to "
                              "seq_len"),
    ({"jacobian_sequences": 6}, "open_weight_depth.jacobian_sequences=6 is not allowed; allowed: an integer from 1 to "
                                "the number of windows"),
    ({"tau": 0.1}, "open_weight_depth: unknown ['tau'], missing []; allowed: models, seq_len"),
    ({"arc_layers": [3]}, "open_weight_depth.arc_layers=[3] is not allowed: tiny has 3 blocks; allowed: block "
                          "indices from 0 to 2"),  # known once the decoder is loaded, before it is measured
])
def test_a_bad_depth_setting_is_one_line_before_anything_is_measured(depth_models, monkeypatch, change, message):
    def measured(*args, **kwargs):
        raise AssertionError("measured before the settings were checked")

    monkeypatch.setattr(cod.runs.analysis, "measure_depth", measured)
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        cod.runs.analysis.analyse_open_depth({"profile": "smoke", "open_weight_depth": {**DEPTH, **change}})
    assert "\n" not in str(refused.value)


def test_params_yaml_depth_settings_are_complete():
    params = yaml.safe_load(open(cod.runs.analysis.ROOT / "params.yaml"))
    for profile in ("smoke", "default", "paper"):
        spec = cod.runs.analysis.open_depth_settings({**params, "profile": profile})
        kinds = {cod.eval.pretrained.PRETRAINED[m].kind for m in spec["models"]}
        assert kinds == {"decoder", "encoder"}, profile  # the contrast a1 draws: Pre-LN decoders, Post-LN encoders
    assert "models" not in params["notebooks"]["a1_open_weight_models"]  # the notebook reads what the stage measured


def test_the_depth_command_takes_no_model(capsys):
    with pytest.raises(SystemExit):
        cod.runs.analysis.main(["open_weight_depth", "gemma3-270m", "--device", "cpu"])
    assert "open_weight_depth takes no model" in capsys.readouterr().err
