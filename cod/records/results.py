"""Read what training runs wrote (runs/PROFILE/EXPERIMENT/VARIANT_sSEED/) into tables, and write claims.

Notebooks call these instead of parsing files: every number they plot comes from a run's
history.jsonl or final.json, tagged with its variant and seed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cod.config import run_config_from_dict
from cod.paths import split_run_name

VERDICTS = ("reproduced", "not reproduced", "inconclusive", "beyond reach", "holds", "holds loosely", "fails")
CLAIM_KEYS = ("id", "paper", "item", "claim", "source", "paper_value", "ours", "verdict", "profile")
CLAIM_DIGITS = 12  # significant digits a claim's numbers keep: re-executing a notebook rewrites no last-digit noise


def train_command(experiment: str, profile: str) -> str:
    """The command that trains `experiment`'s runs of `profile`, whichever profile params.yaml
    names (`dvc repro train@EXPERIMENT` trains params.yaml's only)."""
    return f"python -m cod.pipeline.experiments train {experiment} --profile {profile}"


def analyse_command(analysis: str, profile: str) -> str:
    """The command that makes analysis `analysis` of `profile` (`dvc repro` makes params.yaml's only)."""
    return f"python -m cod.runs.analysis {analysis} --profile {profile}"


def weights_command(path: str | Path) -> str:
    """The command that trains the weights at `path`, a run's
    checkpoints/<profile>/<experiment>/<variant>_s<seed>/model.pt (`dvc repro` for another path)."""
    parts = Path(path).parts
    if len(parts) < 5 or parts[-5] != "checkpoints" or "_s" not in parts[-2]:
        return "dvc repro"
    variant, seed = split_run_name(parts[-2])
    return f"{train_command(parts[-3], parts[-4])} --variants {variant} --seeds {seed}"


def notebook_command(profile: str, notebook: str = "NAME") -> str:
    """The command that executes `notebook` (figures, claims) under `profile`."""
    return f"python -m cod.pipeline.notebook {notebook} -p profile={profile}"


def run_dirs(experiment: str, runs_root: str | Path) -> list[Path]:
    """The finished runs of `experiment` under `runs_root` (runs/<profile>)."""
    root = Path(runs_root) / experiment
    if not root.exists():
        raise FileNotFoundError(f"{root} not found: train it with `{train_command(experiment, Path(runs_root).name)}`")
    return sorted(p for p in root.iterdir() if (p / "final.json").exists())


def _variant_seed(run: Path) -> tuple[str, int]:
    variant, seed = split_run_name(run.name)
    return variant, int(seed)


def load_final(experiment: str, runs_root: str | Path) -> pd.DataFrame:
    """One row per run: variant, seed and every field of final.json."""
    rows = []
    for run in run_dirs(experiment, runs_root):
        variant, seed = _variant_seed(run)
        rows.append({"variant": variant, "seed": seed, **json.loads((run / "final.json").read_text())})
    return pd.DataFrame(rows)


def history_line(row: dict[str, Any]) -> str:
    """`row` as a line of history.jsonl. A list field is a per-layer statistic, float32 on every
    device: its numbers are written in float32's shortest digits (about a third fewer bytes than
    float64's), unless one of them is no float32 (a float64 probe of cod.train.fingerprint)."""
    return json.dumps({key: _float32_digits(value) if isinstance(value, list) else value
                       for key, value in row.items()}) + "\n"


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a history.jsonl, each list field's numbers read back as the float32 values the
    trainer logged (`history_line`): the same numbers whichever digits wrote them."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [{key: _as_float32(value) if isinstance(value, list) else value for key, value in row.items()}
            for row in rows]


def compact_history(path: str | Path) -> None:
    """Rewrite a history.jsonl in `history_line`'s digits; `read_history` reads the same rows."""
    path = Path(path)
    path.write_text("".join(history_line(row) for row in read_history(path)))


def _float32_digits(values: list) -> list:
    floats = np.array([x for x in _flat(values) if isinstance(x, float)])
    if not np.array_equal(floats.astype(np.float32).astype(np.float64), floats):
        return values
    return _nested(values, lambda x: float(str(np.float32(x))))


def _as_float32(values: list) -> list:
    return _nested(values, lambda x: float(np.float32(x)))


def _flat(values: Any) -> Any:
    for value in values:
        yield from _flat(value) if isinstance(value, list) else (value,)


def _nested(values: Any, number: Any) -> Any:
    """`values` (a number or nested lists) with `number` applied to each float in it."""
    if isinstance(values, list):
        return [_nested(v, number) for v in values]
    return number(values) if isinstance(values, float) else values


def _history_rows(run: Path) -> list[dict[str, Any]]:
    return read_history(run / "history.jsonl")


def load_history(experiment: str, runs_root: str | Path) -> pd.DataFrame:
    """Training-loss rows of every run: variant, seed, step, loss, lr, grad_norm, tokens."""
    rows = []
    for run in run_dirs(experiment, runs_root):
        variant, seed = _variant_seed(run)
        rows += [{"variant": variant, "seed": seed, **r} for r in _history_rows(run) if "loss" in r]
    return pd.DataFrame(rows)


def load_validation(experiment: str, runs_root: str | Path) -> pd.DataFrame:
    """Validation-loss rows that `train.eval_every` logged during training: variant, seed, step,
    val_loss (none when it was 0: only the final evaluation, in final.json)."""
    rows = []
    for run in run_dirs(experiment, runs_root):
        variant, seed = _variant_seed(run)
        rows += [{"variant": variant, "seed": seed, "step": r["step"], "val_loss": r["val_loss"]}
                 for r in _history_rows(run) if "val_loss" in r]
    return pd.DataFrame(rows, columns=["variant", "seed", "step", "val_loss"])


def load_layer_stats(experiment: str, runs_root: str | Path) -> pd.DataFrame:
    """Per-layer variances in long form: variant, seed, step, layer (1-based), resid/attn/mlp_var."""
    rows = []
    for run in run_dirs(experiment, runs_root):
        variant, seed = _variant_seed(run)
        for r in _history_rows(run):
            if "resid_var" not in r:
                continue
            for layer, values in enumerate(zip(r["resid_var"], r["attn_var"], r["mlp_var"]), start=1):
                rows.append({"variant": variant, "seed": seed, "step": r["step"], "layer": layer,
                             "resid_var": values[0], "attn_var": values[1], "mlp_var": values[2]})
    return pd.DataFrame(rows)


def spread(values: pd.Series) -> str:
    """'mean ± std (min..max, n=K)' of values over seeds."""
    v = values.dropna()
    if len(v) == 0:
        return "n/a"
    if len(v) == 1:
        return f"{v.iloc[0]:.4g} (n=1)"
    return f"{v.mean():.4g} ± {v.std():.2g} ({v.min():.4g}..{v.max():.4g}, n={len(v)})"


def save_claims(figures_dir: str | Path, claims: list[dict[str, Any]]) -> Path:
    """Write figures_dir/claims.json after checking every claim's keys (the profile that made
    it among them) and verdict."""
    for claim in claims:
        missing = [k for k in CLAIM_KEYS if k not in claim]
        if missing:
            raise ValueError(f"claim {claim.get('id')!r} lacks {missing}")
        if claim["verdict"] not in VERDICTS:
            raise ValueError(f"claim {claim['id']!r}: verdict {claim['verdict']!r}; allowed: {VERDICTS}")
    path = Path(figures_dir) / "claims.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rounded(claims), indent=2) + "\n")
    return path


def rounded(value: Any, digits: int = CLAIM_DIGITS) -> Any:
    """`value` with every float (in lists and dicts too) cut to `digits` significant digits."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    return value


def load_model(path: str | Path):
    """The trained Transformer saved at `path` (a run's model.pt) and its config, in eval mode."""
    import torch  # lazy: seconds to import; the tables and claims here are read without it (cod.report.site)
    from cod.model import Transformer  # lazy: imports torch

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: `{weights_command(path)}` trains it (weights are not in git)")
    saved = torch.load(path, map_location="cpu", weights_only=False)
    cfg = run_config_from_dict(saved["config"])
    model = Transformer(cfg.model)
    model.load_state_dict(saved["model"])
    return model.eval(), cfg
