"""Analyses of trained weights, stored as small per-run files that notebooks read without the weights.

    python -m cod.analysis b_depth               # what DVC's analyse@b_depth stage runs
    python -m cod.analysis b_depth --device cpu  # the models on the CPU (default: cuda when available)

`params.yaml` declares each analysis under `analyses:` (the experiment whose runs it measures
and the metrics' settings). For every run of that experiment it writes, to
analyses/<profile>/<analysis>/<variant>_s<seed>/ (and the settings used to settings.json beside them):

    layers.json      every layer-effectiveness score (`cod.metrics.effectiveness.LayerAnalysis`)
    jacobians.npz    the mean block Jacobians (L, D, D), float16
    zero_shot.json   accuracy per task in lm-evaluation-harness conventions (with chance and n)

With `layers: false` only zero_shot.json is written (the fine-tuned models of Table 2).

`load_layers` rebuilds the `LayerAnalysis` of a run, so a notebook uses the same objects
whether it computed them or read them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import typing
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cod.config import ConfigError
from cod.experiments import ROOT, load_params, resolve_runs
from cod.metrics.effectiveness import LayerAnalysis, analyse_layers, held_out_tokens

LAYER_SETTINGS = ("eval_tokens", "fit_tokens", "jacobian_tokens", "jacobian_context", "tau")  # with layers: true
SETTINGS = ("experiment", *LAYER_SETTINGS, "zero_shot_tasks", "zero_shot_limit")
DEVICES = ("cpu", "cuda")
OPTIONAL = {
    "variants": None,  # the experiment's variants to measure; None: all of them
    "layers": True,  # measure the layer scores and Jacobians (false: zero-shot only)
    "zero_shot_part": None,  # 'eval': score only the half of each set that fine-tuning never sees
}


def analysis_settings(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The settings of analysis `name` under the active profile (its `profiles:` entry applied
    last, as for experiments), checked: every key known, none missing."""
    analyses = params.get("analyses") or {}
    if name not in analyses:
        raise ConfigError(f"analyses.{name} is not declared; allowed: {', '.join(analyses)}")
    spec = {**OPTIONAL, **analyses[name]}
    spec.update(spec.pop("profiles", {}).get(params["profile"], {}))
    required = set(SETTINGS) - (set() if spec["layers"] else set(LAYER_SETTINGS))
    unknown, missing = set(spec) - set(SETTINGS) - set(OPTIONAL), required - set(spec)
    if unknown or missing:
        raise ConfigError(f"analyses.{name}: unknown {sorted(unknown)}, missing {sorted(missing)}; "
                          f"allowed: {', '.join([*SETTINGS, *OPTIONAL])}")
    return spec


def analysed_runs(spec: dict[str, Any], params: dict[str, Any]) -> list:
    """The runs of the analysis's experiment that it measures (`variants`, when given, in that order)."""
    runs = resolve_runs(spec["experiment"], params)
    if spec["variants"] is None:
        return runs
    known = {run.variant for run in runs}
    unknown = [v for v in spec["variants"] if v not in known]
    if unknown:
        raise ConfigError(f"variants={unknown} are not variants of experiments.{spec['experiment']}; "
                          f"allowed: {', '.join(sorted(known))}")
    return [run for run in runs if run.variant in spec["variants"]]


def analyse(name: str, params: dict[str, Any], device: str = "cpu") -> None:
    """Measure every run of analysis `name`'s experiment on `device` and write its per-run files."""
    from cod.eval import LanguageModel, evaluate, load_tokenizer
    from cod.results import load_model

    spec = analysis_settings(name, params)
    profile = params["profile"]
    runs = analysed_runs(spec, params)
    missing = [run.name for run in runs if not (run.weights / "model.pt").exists()]
    if missing:
        raise FileNotFoundError(f"no weights for {missing} in checkpoints/{profile}/{spec['experiment']}: "
                                f"`dvc repro train@{spec['experiment']}` trains them")
    root = ROOT / "analyses" / profile / name
    root.mkdir(parents=True, exist_ok=True)
    (root / "settings.json").write_text(json.dumps(spec, indent=1) + "\n")
    torch.set_num_threads(1)
    for run in runs:
        model, cfg = load_model(run.weights / "model.pt")
        model = model.to(device)
        folder = root / run.name
        folder.mkdir(parents=True, exist_ok=True)
        if spec["layers"]:
            seq = cfg.data.seq_len
            x, y, x_fit = held_out_tokens(ROOT / cfg.data.dataset_dir / "val.bin", seq, spec["eval_tokens"],
                                          spec["fit_tokens"])
            x_jac = x[:spec["jacobian_tokens"], :min(spec["jacobian_context"], seq)]
            with torch.no_grad():
                layers = analyse_layers(model, x, y, x_fit, x_jac, tau=spec["tau"], seed=run.seed)
            save_layers(layers, folder)
        start = time.perf_counter()
        lm = LanguageModel(model, load_tokenizer(ROOT / cfg.data.dataset_dir))
        zero_shot = [evaluate(lm, task, limit=spec["zero_shot_limit"], part=spec["zero_shot_part"])
                     for task in spec["zero_shot_tasks"]]
        (folder / "zero_shot.json").write_text(json.dumps(zero_shot, indent=1) + "\n")
        timing = f"{sum(layers.seconds.values()):.1f}s of layer metrics, " if spec["layers"] else ""
        print(f"[analyse {name}] {run.name} on {device}: {len(model.blocks)} layers, {timing}"
              f"{time.perf_counter() - start:.1f}s of zero-shot", flush=True)


# ----------------------------------------------------------------------------- storage


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def save_layers(layers: LayerAnalysis, folder: Path) -> None:
    """layers.json (everything but the Jacobian matrices) and jacobians.npz."""
    folder.mkdir(parents=True, exist_ok=True)
    record = _plain(layers)
    record["jacobians"].pop("mean")
    (folder / "layers.json").write_text(json.dumps(record) + "\n")
    np.savez_compressed(folder / "jacobians.npz", mean=layers.jacobians.mean.astype(np.float16))


def _rebuild(kind: Any, value: Any) -> Any:
    """Turn the JSON form of a field back into its declared type (dataclasses, arrays)."""
    if value is None:
        return None
    options = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    kind = options[0]
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: _rebuild(hints[f.name], value[f.name]) for f in dataclasses.fields(kind)
                       if f.name in value})
    if kind is np.ndarray:
        return np.array(value, dtype=float)
    return value


def load_layers(folder: str | Path) -> LayerAnalysis:
    """The `LayerAnalysis` written by `save_layers`, Jacobian matrices included."""
    folder = Path(folder)
    record = json.loads((folder / "layers.json").read_text())
    record["jacobians"]["mean"] = np.load(folder / "jacobians.npz")["mean"].astype(np.float32)
    return _rebuild(LayerAnalysis, record)


def load_analyses(folder: str | Path, variants: typing.Iterable[str]) -> dict[tuple[str, int], LayerAnalysis]:
    """{(variant, seed): LayerAnalysis} of the runs of `variants` stored in an analysis folder
    (analyses/<profile>/<analysis>/); variants with no stored run are simply absent."""
    wanted, found = set(variants), {}
    for path in sorted(Path(folder).glob("*_s*/layers.json")):
        variant, seed = path.parent.name.rsplit("_s", 1)
        if variant in wanted and seed.isdigit():
            found[variant, int(seed)] = load_layers(path.parent)
    return found


def load_complete(root: str | Path, names: typing.Iterable[str],
                  variants: typing.Sequence[str]) -> dict[str, dict[tuple[str, int], LayerAnalysis]]:
    """{name: load_analyses(root/name, variants)} for the analyses among `names` that hold runs
    of every one of `variants`; the others are left out, with a printed line saying why."""
    complete = {}
    for name in names:
        found = load_analyses(Path(root) / name, variants)  # empty when the folder is missing
        missing = [v for v in variants if not any(key[0] == v for key in found)]
        if missing:
            print(f"{name}: no stored analysis of {', '.join(missing)} in {Path(root) / name}; left out")
        else:
            complete[name] = found
    return complete


def stored_settings(folder: str | Path) -> dict[str, Any]:
    """The settings an analysis folder was measured with (its settings.json)."""
    return json.loads((Path(folder) / "settings.json").read_text())


def load_zero_shot(folder: str | Path) -> list[dict[str, Any]]:
    return json.loads((Path(folder) / "zero_shot.json").read_text())


def zero_shot_table(folder: str | Path):
    """Every stored run's zero-shot results under an analysis folder as one DataFrame: variant,
    seed, task, acc, acc_norm, chance, n (one row per run and task)."""
    import pandas as pd

    rows = []
    for path in sorted(Path(folder).glob("*_s*/zero_shot.json")):
        variant, seed = path.parent.name.rsplit("_s", 1)
        rows += [{"variant": variant, "seed": int(seed), **result} for result in load_zero_shot(path.parent)]
    if not rows:
        raise FileNotFoundError(f"no zero_shot.json under {folder}: `dvc repro analyse@{Path(folder).name}` makes them")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("analysis", help="analysis name from params.yaml (analyses:)")
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--device", choices=DEVICES, help="where the models run (default: cuda when available)")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is visible here; allowed here: cpu")
    analyse(args.analysis, load_params(args.params), device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
