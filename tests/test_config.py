"""Configuration: override syntax, clear errors, every profile resolves, paper shapes."""

import dataclasses
import re
from enum import Enum

import pytest
import torch

from cod import config
from cod.config import (ConfigError, Norm, RunConfig, apply_overrides, choices, field_types, parse_override,
                        run_config)
from cod.model import Transformer
from cod.runs.params import load_params, resolve_runs


def test_override_values_are_yaml():
    assert parse_override("model.n_kv_heads=null") == ("model.n_kv_heads", None)
    assert run_config(["optim.lr=1e-3"]).optim.lr == 1e-3  # YAML reads 1e-3 as a string; the field is a float
    cfg = run_config(["model.norm=lns", "model.n_layers=6", "optim.lr=2"])
    assert cfg.model.norm is Norm.LNS and cfg.model.n_layers == 6
    assert isinstance(cfg.optim.lr, float)


def test_dict_and_list_overrides_agree():
    a = run_config(["model.norm=lns", "seed=3"])
    b = run_config({"model.norm": "lns", "seed": 3})
    assert a == b and a.to_dict() == b.to_dict()
    assert a.to_dict() != run_config({"seed": 4}).to_dict()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model.nrom=lns"], "unknown setting 'model.nrom'; allowed here: vocab_size"),
        (["modle.norm=lns"], "unknown setting 'modle'"),
        (["model.norm=rms"], "allowed: pre_ln, lns, post_ln"),
        (["data.seq_len=512", "model.max_seq_len=256"], "data.seq_len=512 exceeds model.max_seq_len=256"),
        (["train.steps=0"], "train.steps"),
        (["model.vocab_size=100", "data.vocab_size=4096"], "model.vocab_size"),
        (["optim.warmup_frac=2"], "optim.warmup_frac"),
        (["data.tokenizer=sentencepiece"], "allowed: bpe, gpt_neox"),
        (["model.n_layers=deep"], "model.n_layers='deep' is not allowed; allowed: a number"),
        (["model.n_layers=2.5"], "allowed: an integer"),
        (["model.tie_embeddings=maybe"], "allowed: true, false"),
    ],
)
def test_bad_settings_name_the_parameter(overrides, message):
    with pytest.raises(ConfigError, match=message):
        run_config(overrides)


@pytest.mark.parametrize(
    "section, fields, message",
    [
        ("ModelConfig", {"norm": "rms"}, "model.norm='rms' is not allowed; allowed: pre_ln, lns"),
        ("ModelConfig", {"init": "xavier"}, "model.init='xavier' is not allowed; allowed: normal, scaled"),
        ("ModelConfig", {"lns_position": "everywhere"}, "model.lns_position='everywhere' is not allowed"),
        ("ModelConfig", {"n_layers": 2.5}, "model.n_layers=2.5 is not allowed; allowed: an integer"),
        ("DataConfig", {"tokenizer": "sentencepiece"}, "data.tokenizer='sentencepiece' is not allowed"),
        ("TrainConfig", {"precision": "fp8"}, "train.precision='fp8' is not allowed; allowed: fp32, bf16"),
    ],
)
def test_configs_built_in_python_check_their_values(section, fields, message):
    """Not only the CLI: a config built directly fails at construction, naming the setting."""
    import cod.config

    with pytest.raises(ConfigError, match=message):
        getattr(cod.config, section)(**fields)


def test_strings_become_enums_and_later_assignments_are_checked():
    from cod.config import Init, ModelConfig

    cfg = ModelConfig(norm="lns", init="scaled")
    assert cfg.norm is Norm.LNS and cfg.init is Init.SCALED
    cfg.norm = "rms"
    with pytest.raises(ConfigError, match="model.norm='rms'"):
        Transformer(cfg)


def test_a_misspelt_choice_is_refused_before_any_compute():
    """train.parallel was missing from a hand-kept list of enums: `fsdq` was accepted and trained."""
    with pytest.raises(ConfigError) as refused:
        run_config(["train.parallel=fsdq"])
    assert str(refused.value) == "train.parallel='fsdq' is not allowed; allowed: ddp, fsdp"


def _settings(cls: type = RunConfig, prefix: str = ""):
    """(dotted path, declared type) of every setting."""
    for name, kind in field_types(cls).items():
        if dataclasses.is_dataclass(kind):
            yield from _settings(kind, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", kind


def test_every_choice_setting_refuses_a_value_its_type_does_not_list():
    enums = {value for value in vars(config).values()
             if isinstance(value, type) and issubclass(value, Enum) and value.__module__ == config.__name__}
    chosen = {path: kind for path, kind in _settings() if choices(kind)}
    assert set(chosen.values()) == enums  # every choice of the module is a setting's type
    for path, kind in chosen.items():
        with pytest.raises(ConfigError) as refused:
            run_config({path: "bogus"})
        assert str(refused.value) == f"{path}='bogus' is not allowed; allowed: {', '.join(m.value for m in kind)}"
        with pytest.raises(ConfigError, match=f"{re.escape(path)}=None is not allowed; allowed: "):
            run_config({path: None})


def test_round_trip_through_dict():
    from cod.config import run_config_from_dict

    cfg = run_config(["model.norm=lns", "model.n_kv_heads=2"])
    assert run_config_from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("profile", ["smoke", "default", "paper"])
def test_every_experiment_resolves_under_every_profile(profile):
    params = load_params()
    params["profile"] = profile
    for experiment in params["experiments"]:
        runs = resolve_runs(experiment, params)
        assert runs and len({r.name for r in runs}) == len(runs)


def test_unknown_experiment_and_profile_are_refused(tmp_path):
    params = load_params()
    with pytest.raises(ConfigError, match="allowed: a0_miniature"):
        resolve_runs("a4_variance", params)
    bad = tmp_path / "params.yaml"
    bad.write_text("profile: huge\n")
    with pytest.raises(ConfigError, match="allowed: smoke, default, headline, paper"):
        load_params(bad)


def _meta_params(overrides: dict) -> int:
    cfg = run_config(overrides)
    with torch.device("meta"):
        return Transformer(cfg.model).num_params()


# Paper A (section 5.1, LLaMA configs with the 32,000-token vocabulary of its code) and paper B
# (section 2, hidden 2048, FFN 8192, GPT-NeoX vocabulary, tied embeddings): millions of parameters.
PAPER_A = {"a71m": 71, "a130m": 130, "a250m": 250, "a350m": 350, "a1b": 1300}
PAPER_B = {12: 900, 16: 1200, 24: 1700, 32: 2300}


@pytest.mark.parametrize("size, millions", PAPER_A.items())
def test_paper_a_shapes_have_the_papers_parameter_counts(size, millions):
    params = load_params()
    shape = params["profiles"]["paper"]["sizes"][size]
    count = _meta_params({**shape, "model.vocab_size": 32000, "data.vocab_size": 32000})
    assert count / 1e6 == pytest.approx(millions, rel=0.08)


@pytest.mark.parametrize("depth, millions", PAPER_B.items())
def test_paper_b_depth_ladder_has_the_papers_parameter_counts(depth, millions):
    shape = {"model.d_model": 2048, "model.n_heads": 16, "model.d_ff": 8192, "model.n_layers": depth,
             "model.vocab_size": 50304, "model.tie_embeddings": True, "data.tokenizer": "gpt_neox"}
    assert _meta_params(shape) / 1e6 == pytest.approx(millions, rel=0.05)


def test_paper_profile_runs_a_few_steps_at_reduced_width():
    params = load_params()
    params["profile"] = "paper"
    for experiment in params["experiments"]:
        run = resolve_runs(experiment, params)[0]
        cfg = apply_overrides(run.config, {"model.d_model": 32, "model.n_heads": 2, "model.d_ff": 64,
                                           "model.n_layers": 2, "model.vocab_size": 512,
                                           "model.n_kv_heads": 1 if run.config.model.n_kv_heads else None})
        model = Transformer(cfg.model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        idx = torch.randint(0, 512, (2, cfg.data.seq_len))
        losses = []
        for _ in range(3):
            loss = model(idx, idx.roll(-1, 1)).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < losses[0]
