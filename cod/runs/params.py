"""The runs params.yaml declares: its experiments' variants and seeds, expanded under a profile.

    params = load_params()                    # params.yaml, its profile checked
    runs = resolve_runs("a_130m", params)     # one experiment's runs under the active profile
    everything = all_runs(params)             # every experiment's, planned ones included

A run is stored per profile: results in runs/<profile>/<experiment>/<variant>_s<seed>/ (small,
in git), weights in checkpoints/<profile>/... (DVC's cache). Every run's settings are validated
when it is resolved, before any of them trains (`cod.pipeline.experiments` trains them).

`finetunes:` declares experiments that fine-tune another experiment's runs (`base:`): each
variant and seed starts from the base run of the same name and keeps its model and data
settings; they train in DVC's finetune@NAME stage, after the base's train@ stage.

A variant's values are absolute (`model.d_ff: 48`), so a variant whose meaning is relative to
its size carries a `profiles:` entry of its own, applied last for that profile: the paper
profile's value of the same rung (`profiles: {paper: {model.d_ff: 3072}}`); `seeds: []` there
leaves a rung out of that profile.

A variant marked `equal_flops: true` trains for the steps that give it the training FLOPs of
the experiment's shared settings (`cod.model.flops`): paper B's GQA runs, whose fewer KV heads buy
more tokens.

`planned:` in params.yaml lists the runs that later notebooks will add (variants the code does
not have yet); `cod.runs.plan` costs them by their shape so that the whole profile's budget is known.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cod import ROOT, load_yaml
from cod.config import ConfigError, RunConfig, apply_overrides, run_config
from cod.data.tasks import check_fine_tuning
from cod.model.flops import flops_per_token
from cod.paths import run_dir, run_name, weights_dir
from cod.train.fingerprint import is_complete

PROFILES = ("smoke", "default", "headline", "paper")
PROFILE_KEYS = ("jobs", "seeds", "max_seeds", "base", "sizes", "gpus_per_run", "experiments")
COUNTS = ("jobs", "gpus_per_run")  # profile settings that are positive integers (default 1)
SECTIONS = ("experiments", "finetunes", "headline_experiments")  # where trained runs are declared


@dataclass
class Run:
    profile: str
    experiment: str
    variant: str
    seed: int
    overrides: dict[str, Any]
    cost_factor: float = 1.0  # planned runs whose code does not exist yet: cost relative to their dense shape
    planned: str | None = None  # the issue that will add this run, for runs not yet in the pipeline

    @property
    def name(self) -> str:
        return run_name(self.variant, self.seed)

    @property
    def out(self) -> Path:
        return run_dir(self.profile, self.experiment, self.variant, self.seed, ROOT)

    @property
    def weights(self) -> Path:
        return weights_dir(self.profile, self.experiment, self.variant, self.seed, ROOT)

    @property
    def config(self) -> RunConfig:
        cfg = run_config(self.overrides)
        check_fine_tuning(cfg.finetune)
        return cfg

    @property
    def shape_config(self) -> RunConfig:
        """The run's config, or for a planned run the settings this code knows (its shape)."""
        if self.planned is None:
            return self.config
        def known(key: str, value: Any) -> bool:
            try:
                apply_overrides(RunConfig(), {key: value})
                return True
            except ConfigError:
                return False

        return run_config({k: v for k, v in self.overrides.items() if known(k, v)})

    def status(self) -> str:
        """'done' (result and weights), 'result only' (weights missing), 'to train' or 'planned'."""
        if self.planned is not None:
            return "planned"
        if not is_complete(self.out, self.config):
            return "to train"
        return "done" if (self.weights / "model.pt").exists() else "result only"

    def arguments(self) -> list[str]:
        """The arguments of `python -m cod.train.run` that train this run."""
        settings = [f"{k}={json.dumps(v)}" for k, v in self.overrides.items()]
        return ["--out", str(self.out), "--weights", str(self.weights), "--name", f"{self.experiment}/{self.name}",
                *settings]

    def command(self, gpus: int = 1) -> list[str]:
        """The training command; on more than one GPU through torchrun (one process per GPU)."""
        torchrun = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(gpus)] if gpus > 1 else []
        return [sys.executable, *torchrun, "-m", "cod.train.run", *self.arguments()]


def pick(runs: list[Run], wanted: list[str], name_of, option: str, what: str) -> list[Run]:
    """The runs whose `name_of(run)` is in `wanted` (a command line's `option`); a name no run has
    is refused in one line naming the allowed ones (`what` says what they are)."""
    known = list(dict.fromkeys(name_of(run) for run in runs))
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise ConfigError(f"{option} {','.join(unknown)}: not {what}; allowed: {', '.join(known)}")
    return [run for run in runs if name_of(run) in wanted]


def load_params(path: Path = ROOT / "params.yaml") -> dict[str, Any]:
    params = load_yaml(path)
    if params.get("profile") not in PROFILES:
        raise ConfigError(f"profile={params.get('profile')!r} is not allowed; allowed: {', '.join(PROFILES)}")
    return params


def profile_settings(params: dict[str, Any]) -> dict[str, Any]:
    """The active profile's block of params.yaml, its keys and counts checked."""
    name = params["profile"]
    profile = params["profiles"][name]
    unknown = sorted(set(profile) - set(PROFILE_KEYS))
    if unknown:
        raise ConfigError(f"profiles.{name}: unknown {unknown}; allowed: {', '.join(PROFILE_KEYS)}")
    for key in COUNTS:
        value = profile.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"profiles.{name}.{key}={value!r} is not allowed; allowed: a positive integer")
    return profile


def in_profile(experiment: str, spec: dict[str, Any], params: dict[str, Any]) -> bool:
    """Whether `experiment` has runs under the active profile: the profile's `experiments:` list
    names it (no list: every experiment) and its own `profiles_only:` (none: every profile) names
    the profile."""
    listed = profile_settings(params).get("experiments")
    only = spec.get("profiles_only")
    for name, allowed in (("experiments", listed), ("profiles_only", only)):
        if allowed is not None and not isinstance(allowed, list):
            raise ConfigError(f"{name}={allowed!r} ({experiment}) is not allowed; allowed: a list of names")
    if only is not None and set(only) - set(PROFILES):
        raise ConfigError(f"{experiment}: profiles_only {sorted(set(only) - set(PROFILES))} are not profiles; "
                          f"allowed: {', '.join(PROFILES)}")
    return (listed is None or experiment in listed) and (only is None or params["profile"] in only)


def section_of(experiment: str, params: dict[str, Any]) -> str:
    """The section of params.yaml that declares `experiment` as a trained experiment."""
    for section in SECTIONS:
        if experiment in (params.get(section) or {}):
            return section
    known = [name for section in SECTIONS for name in (params.get(section) or {})]
    raise ConfigError(f"experiment {experiment!r} is not declared; allowed: {', '.join(known)}")


def resolve_runs(experiment: str, params: dict[str, Any], section: str | None = None) -> list[Run]:
    """Every run of `experiment` under the active profile (settings validated unless planned);
    `section` defaults to the one of SECTIONS that declares it."""
    section = section or section_of(experiment, params)
    experiments = params.get(section) or {}
    if experiment not in experiments:
        raise ConfigError(f"{section}.{experiment} is not declared; allowed: {', '.join(experiments)}")
    spec = experiments[experiment]
    if not in_profile(experiment, spec, params):
        return []
    planned = f"#{spec.get('issue', '?')}" if section == "planned" else None
    runs = _finetune_runs(experiment, spec, params) if section == "finetunes" else \
        _sweep_runs(experiment, spec, params, section, planned)
    runs.sort(key=lambda run: run.seed)  # seed-major: an interrupted sweep leaves whole seeds finished
    for run in runs:
        try:
            run.shape_config
            if planned is None:
                run.config
        except ConfigError as error:
            raise ConfigError(f"{section}.{experiment}/{run.name}: {error}") from None
    return runs


def _sweep_runs(experiment: str, spec: dict[str, Any], params: dict[str, Any], section: str,
                planned: str | None) -> list[Run]:
    """The runs of an `experiments:` or `planned:` entry: each variant at its size, for each seed."""
    profile, name = profile_settings(params), params["profile"]
    runs = []
    for variant, changes in spec["variants"].items():
        changes = dict(changes or {})
        by_profile = changes.pop("profiles", {})
        if set(by_profile) - set(PROFILES):
            raise ConfigError(f"{section}.{experiment} ({variant}): profiles {sorted(set(by_profile) - set(PROFILES))} "
                              f"are not profiles; allowed: {', '.join(PROFILES)}")
        changes.update(by_profile.get(name, {}))
        size = changes.pop("size", spec.get("size"))
        seeds = changes.pop("seeds", spec.get("seeds", profile["seeds"]))
        cost_factor = float(changes.pop("cost_factor", 1.0))
        equal_flops = changes.pop("equal_flops", False)
        if not isinstance(equal_flops, bool):
            raise ConfigError(f"{section}.{experiment} ({variant}): equal_flops={equal_flops!r} is not allowed; "
                              "allowed: true, false")
        if size not in profile.get("sizes", {}):
            raise ConfigError(f"{section}.{experiment} ({variant}): size={size!r} is not a size of profile "
                              f"{name!r}; allowed: {', '.join(profile.get('sizes', {}))}")
        shared = {**profile.get("base", {}), **profile["sizes"][size], **spec.get("overrides", {}),
                  **spec.get("profiles", {}).get(name, {})}
        if equal_flops:
            changes["train.steps"] = steps_at_equal_flops(shared, {**shared, **changes})
        for seed in seeds[: profile.get("max_seeds", len(seeds))]:
            runs.append(Run(name, experiment, variant, seed, {**shared, **changes, "seed": seed}, cost_factor, planned))
    return runs


def steps_at_equal_flops(reference: dict[str, Any], overrides: dict[str, Any]) -> int:
    """train.steps that give the run of `overrides` the training FLOPs of the run of `reference`."""
    def flops_per_step(cfg: RunConfig) -> float:
        return cfg.data.batch_size * cfg.data.seq_len * flops_per_token(cfg.model, cfg.data.seq_len)

    ref = run_config(reference)
    return max(1, round(ref.train.steps * flops_per_step(ref) / flops_per_step(run_config(overrides))))


def _finetune_runs(experiment: str, spec: dict[str, Any], params: dict[str, Any]) -> list[Run]:
    """The runs of a `finetunes:` entry: one per run of its base experiment whose variant it names."""
    base = {(run.variant, run.seed): run for run in resolve_runs(spec["base"], params, "experiments")}
    profile, runs = params["profile"], []
    shared = {**spec.get("overrides", {}), **spec.get("profiles", {}).get(profile, {})}
    for variant, changes in spec["variants"].items():
        parents = sorted((run for (v, _), run in base.items() if v == variant), key=lambda run: run.seed)
        if not parents:
            raise ConfigError(f"finetunes.{experiment}: variant {variant!r} has no run in experiments.{spec['base']}; "
                              f"allowed: {', '.join(sorted({v for v, _ in base}))}")
        for parent in parents:
            weights = (parent.weights / "model.pt").relative_to(ROOT)
            overrides = {**parent.overrides, **shared, **(changes or {}), "finetune.base": str(weights)}
            runs.append(Run(profile, experiment, variant, parent.seed, overrides))
    return runs


def all_runs(params: dict[str, Any], planned: bool = True) -> list[Run]:
    """The runs of every experiment (and, with `planned`, of every planned one) of the profile."""
    sections = (*SECTIONS, "planned") if planned else SECTIONS
    return [run for section in sections for experiment in (params.get(section) or {})
            for run in resolve_runs(experiment, params, section)]
