"""A run's fingerprint: kept across code that does not change the run, changed by code that does."""

import json

import pytest
import torch
import torch.nn.functional as F

from cod.config import run_config
from cod.model import Sublayer, SwiGLU
from cod.runs.params import all_runs, load_params
from cod.train import fingerprint


@pytest.fixture(autouse=True)
def fresh_probe_cache():
    fingerprint._probe_hash.cache_clear()
    yield
    fingerprint._probe_hash.cache_clear()


def test_behaviour_is_repeatable_and_blind_to_seed_and_length():
    a = fingerprint.behaviour(run_config({"model.n_layers": 3}))
    fingerprint._probe_hash.cache_clear()
    assert fingerprint.behaviour(run_config({"model.n_layers": 3})) == a
    assert fingerprint.behaviour(run_config({"model.n_layers": 3, "seed": 7, "train.steps": 999})) == a
    assert fingerprint.behaviour(run_config({"model.n_layers": 4})) != a
    assert fingerprint.behaviour(run_config({"model.n_layers": 3, "model.norm": "lns"})) != a


def test_a_setting_added_later_at_its_default_matches():
    cfg = run_config({"model.norm": "lns", "model.n_layers": 3})
    stored = fingerprint.settings(cfg)
    older = {k: v for k, v in stored.items() if k != "model.lns_position"}  # at its default
    assert fingerprint.same_settings(older, cfg)
    assert not fingerprint.same_settings({k: v for k, v in stored.items() if k != "model.norm"}, cfg)
    assert not fingerprint.same_settings({**stored, "model.lns_position": "after_branch"}, cfg)
    assert not fingerprint.same_settings({**stored, "model.retired_option": 1}, cfg)
    assert fingerprint.same_settings({**stored, "train.log_every": 123}, cfg)  # cosmetic


def test_a_run_stopped_early_inside_a_longer_schedule_keeps_every_other_run_as_it_was():
    """optim.schedule_steps at its default (0: train.steps) matches runs made before it existed and
    probes as before; set, the probe stops as early inside a schedule as long, relative to its steps."""
    cfg = run_config({"model.n_layers": 3})
    assert fingerprint.same_settings({k: v for k, v in fingerprint.settings(cfg).items()
                                      if k != "optim.schedule_steps"}, cfg)
    assert fingerprint.probe_config(cfg).optim.schedule_steps == 0
    early = run_config({"model.n_layers": 3, "train.steps": 200, "optim.schedule_steps": 500})
    assert fingerprint.probe_config(early).optim.schedule_steps == 25
    assert fingerprint.behaviour(early) != fingerprint.behaviour(cfg)


def test_changing_the_forward_of_a_variant_changes_its_behaviour(monkeypatch):
    cfg = run_config({"model.n_layers": 3})
    before = fingerprint.behaviour(cfg)
    fingerprint._probe_hash.cache_clear()
    monkeypatch.setattr(SwiGLU, "forward", lambda self, x: self.down_proj(F.gelu(self.gate_proj(x)) * self.up_proj(x)))
    assert fingerprint.behaviour(cfg) != before


def test_code_a_run_does_not_execute_leaves_its_behaviour(monkeypatch):
    """A change inside another variant's branch (here: Sandwich-LN's output norm) is invisible to Pre-LN runs."""
    pre_ln, sandwich = run_config({"model.n_layers": 3}), run_config({"model.n_layers": 3, "model.norm": "sandwich_ln"})
    before = fingerprint.behaviour(pre_ln), fingerprint.behaviour(sandwich)
    fingerprint._probe_hash.cache_clear()
    original = Sublayer.forward

    def forward(self, x, **kwargs):
        y, out = original(self, x, **kwargs)
        if not isinstance(self.out_norm, torch.nn.Identity):  # Sandwich-LN only
            return y * 1.5, out
        return y, out

    monkeypatch.setattr(Sublayer, "forward", forward)
    after = fingerprint.behaviour(pre_ln), fingerprint.behaviour(sandwich)
    assert after[0] == before[0] and after[1] != before[1]


def test_committed_runs_are_complete_under_the_current_code():
    """Every run committed under runs/<profile>/ still matches what its experiment would make now:
    code growth that does not change a run must keep this test green (no retraining)."""
    params = load_params()
    checked = 0
    for profile in ("default", "headline", "paper"):
        params["profile"] = profile
        for run in all_runs(params, planned=False):
            if (run.out / "final.json").exists():
                assert fingerprint.is_complete(run.out, run.config), f"{run.out} no longer matches its experiment"
                checked += 1
    assert checked > 0


def test_checkpoint_identity_round_trips(tmp_path):
    cfg = run_config({"model.n_layers": 2})
    record = json.loads(json.dumps(fingerprint.describe(cfg)))
    assert fingerprint.matches(record, cfg)
    assert not fingerprint.matches(record, run_config({"model.n_layers": 2, "optim.lr": 2e-3}))
    assert not fingerprint.matches(None, cfg)
