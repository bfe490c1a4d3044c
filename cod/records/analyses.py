"""The files of an analysis folder, analyses/<profile>/<analysis>/: what `cod.runs.analysis`
writes from trained weights and notebooks read without them.

    <variant>_s<seed>/layers.json     every layer-effectiveness score (`cod.metrics.effectiveness.LayerAnalysis`)
    <variant>_s<seed>/jacobians.npz   the mean block Jacobians (L, D, D), float16, where kept
    <variant>_s<seed>/zero_shot.json  accuracy per task in lm-evaluation-harness conventions
    <variant>_s<seed>/attention.json  attention sparsity and entropy at each evaluation length
    <model>/depth.json, corners.npz   paper A's depth measures of an open-weight model (`OpenModelDepth`)
    settings.json                     the settings the folder was measured with

`load_layers` rebuilds the `LayerAnalysis` of a run, so a notebook uses the same objects whether
it computed them or read them. A missing file's error names the command that makes it.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cod.metrics.attention_sparsity import AttentionStats
from cod.metrics.depth import DepthMeasures
from cod.metrics.effectiveness import LayerAnalysis
from cod.paths import split_run_name
from cod.records.results import analyse_command

OPEN_DEPTH = "open_weight_depth"  # paper A's depth measures of open-weight models: params.yaml section, folder, command


@dataclasses.dataclass
class OpenModelDepth:
    """Paper A's depth measures of one open-weight model (analyses/<profile>/open_weight_depth/<model>/)."""

    kind: str  # "decoder" or "encoder" (cod.eval.pretrained.PRETRAINED)
    label: str  # "Pre-LN decoder", "sandwich-norm decoder" (Gemma-3's branch outputs normalised too), "Post-LN encoder"
    architecture: str  # the class that runs it: Transformer (converted exactly), or HF's modules behind an adapter
    parameters: int
    layers: int  # L, its blocks
    tokens: int  # of the windows that removal and angular distance read
    load_seconds: float
    measures: DepthMeasures
    zero_shot: list[dict] | None  # `removal_zero_shot` of the first decoder (with arc_limit > 0); None for the others


def plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def save_layers(layers: LayerAnalysis, folder: Path, matrices: bool = True) -> None:
    """layers.json (everything but the Jacobian matrices) and, with `matrices`, jacobians.npz
    (without, a jacobians.npz left by earlier settings is removed)."""
    folder.mkdir(parents=True, exist_ok=True)
    record = plain(layers)
    record["jacobians"].pop("mean")
    (folder / "layers.json").write_text(json.dumps(record) + "\n")
    if matrices:
        np.savez_compressed(folder / "jacobians.npz", mean=layers.jacobians.mean.astype(np.float16))
    else:
        (folder / "jacobians.npz").unlink(missing_ok=True)


def save_attention(stats: dict[int, AttentionStats], folder: Path) -> None:
    """attention.json: sparsity and entropy of every layer and head at each evaluation length."""
    record = {str(length): plain(at) for length, at in stats.items()}
    (folder / "attention.json").write_text(json.dumps(record) + "\n")


def analysis_file(path: str | Path) -> Path:
    """`path`, a file of an analysis folder (analyses/<profile>/<analysis>/...), when it is there;
    FileNotFoundError naming the command that makes it otherwise."""
    path = Path(path)
    if path.exists():
        return path
    parts = path.parts
    at = len(parts) - 1 - parts[::-1].index("analyses") if "analyses" in parts else len(parts)
    if at + 2 >= len(parts):  # not under analyses/<profile>/<analysis>/
        raise FileNotFoundError(f"{path} not found")
    raise FileNotFoundError(f"{path} not found: `{analyse_command(parts[at + 2], parts[at + 1])}` makes it")


def load_attention(folder: str | Path) -> dict[int, AttentionStats]:
    """{evaluation length: AttentionStats} written by `save_attention`."""
    record = json.loads(analysis_file(Path(folder) / "attention.json").read_text())
    return {int(length): rebuild(AttentionStats, value) for length, value in record.items()}


def rebuild(kind: Any, value: Any) -> Any:
    """Turn the JSON form of a field back into its declared type (dataclasses, arrays)."""
    if value is None:
        return None
    if typing.get_origin(kind) is list and dataclasses.is_dataclass(typing.get_args(kind)[0]):  # a list of records
        return [rebuild(typing.get_args(kind)[0], item) for item in value]
    options = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    kind = options[0]
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: rebuild(hints[f.name], value[f.name]) for f in dataclasses.fields(kind)
                       if f.name in value})
    if kind is np.ndarray:
        return np.array(value, dtype=float)
    return value


def load_layers(folder: str | Path) -> LayerAnalysis:
    """The `LayerAnalysis` written by `save_layers`, Jacobian matrices included when saved (else None)."""
    folder = Path(folder)
    record = json.loads(analysis_file(folder / "layers.json").read_text())
    matrices = folder / "jacobians.npz"
    record["jacobians"]["mean"] = np.load(matrices)["mean"].astype(np.float32) if matrices.exists() else None
    return rebuild(LayerAnalysis, record)


def save_open_depth(record: OpenModelDepth, folder: Path) -> None:
    """depth.json (every number but the Jacobians' corners, at full precision) and corners.npz (the
    corners, float32: they are only drawn)."""
    folder.mkdir(parents=True, exist_ok=True)
    numbers = plain(record)
    numbers["measures"]["jacobians"].pop("corner")
    (folder / "depth.json").write_text(json.dumps(numbers) + "\n")
    np.savez_compressed(folder / "corners.npz", corner=record.measures.jacobians.corner.astype(np.float32))


def load_open_depth(folder: str | Path) -> dict[str, OpenModelDepth]:
    """{model: OpenModelDepth} written by `analyse_open_depth` to `folder`
    (analyses/<profile>/open_weight_depth), in the order of its settings' models; the corners as float64."""
    folder = Path(folder)
    found = {}
    for name in stored_settings(folder)["models"]:
        found[name] = rebuild(OpenModelDepth, json.loads(analysis_file(folder / name / "depth.json").read_text()))
        corner = np.load(analysis_file(folder / name / "corners.npz"))["corner"]
        found[name].measures.jacobians.corner = corner.astype(np.float64)
    return found


def load_analyses(folder: str | Path, variants: typing.Iterable[str]) -> dict[tuple[str, int], LayerAnalysis]:
    """{(variant, seed): LayerAnalysis} of the runs of `variants` stored in an analysis folder
    (analyses/<profile>/<analysis>/); variants with no stored run are simply absent."""
    wanted, found = set(variants), {}
    for path in sorted(Path(folder).glob("*_s*/layers.json")):
        variant, seed = split_run_name(path.parent.name)
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
            print(f"{name}: no stored analysis of {', '.join(missing)} in {Path(root) / name}; left out "
                  f"(`{analyse_command(name, Path(root).name)}` makes it)")
        else:
            complete[name] = found
    return complete


def stored_settings(folder: str | Path) -> dict[str, Any]:
    """The settings an analysis folder was measured with (its settings.json)."""
    return json.loads(analysis_file(Path(folder) / "settings.json").read_text())


def load_zero_shot(folder: str | Path) -> list[dict[str, Any]]:
    return json.loads(analysis_file(Path(folder) / "zero_shot.json").read_text())


def zero_shot_table(folder: str | Path):
    """Every stored run's zero-shot results under an analysis folder as one DataFrame: variant,
    seed, task, acc, acc_norm, chance, n (one row per run and task)."""
    rows = []
    for path in sorted(Path(folder).glob("*_s*/zero_shot.json")):
        variant, seed = split_run_name(path.parent.name)
        rows += [{"variant": variant, "seed": int(seed), **result} for result in load_zero_shot(path.parent)]
    if not rows:
        command = analyse_command(Path(folder).name, Path(folder).parent.name)  # analyses/PROFILE/NAME
        raise FileNotFoundError(f"no zero_shot.json under {folder}: `{command}` makes them")
    return pd.DataFrame(rows)
