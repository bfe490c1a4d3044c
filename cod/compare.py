"""Variants compared over seeds: perplexity cells beside the paper's, failed runs, one verdict rule.

The rule, fixed before any table was filled (paper A's Tables 1, 3, 6, 7, 8):

* A run **failed** (the paper's perplexities above 1000) when the trainer stopped it as
  diverged, or when its validation perplexity is no better than a unigram model of the
  training split: a model that learned nothing about context. Its perplexity counts as
  infinite, so it loses every comparison.
* "A is better than B" is **reproduced** when A has the lower perplexity in every seed both
  have and the gap between their means exceeds the larger of their standard deviations over
  seeds; **not reproduced** when B wins the same way; **inconclusive** otherwise, and always
  with fewer than two paired seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from cod.data.loader import open_tokens


def unigram_perplexity(dataset_dir: str | Path, eval_tokens: int | None = None) -> float:
    """Perplexity on val.bin (its first `eval_tokens` tokens) of token frequencies counted on
    train.bin, add-one smoothed: the failure line of `mark_failed`."""
    dataset_dir = Path(dataset_dir)
    vocab = json.loads((dataset_dir / "meta.json").read_text())["vocab_size"]
    counts = np.bincount(np.asarray(open_tokens(dataset_dir / "train.bin")), minlength=vocab) + 1.0
    val = np.asarray(open_tokens(dataset_dir / "val.bin")[:eval_tokens])
    return float(np.exp(-np.mean(np.log(counts[val] / counts.sum()))))


def failure_line(runs_root: str | Path, experiment: str) -> float:
    """`unigram_perplexity` of the dataset and evaluation length the runs of `experiment` used."""
    from cod.config import run_config_from_dict

    config = next((Path(runs_root) / experiment).glob("*/config.json"), None)
    if config is None:
        raise FileNotFoundError(f"no finished run in {Path(runs_root) / experiment}")
    cfg = run_config_from_dict(json.loads(config.read_text()))
    return unigram_perplexity(cfg.data.dataset_dir, cfg.train.eval_tokens)


def mark_failed(final: pd.DataFrame, chance_ppl: float) -> pd.DataFrame:
    """`final` (cod.results.load_final) with `failed` and `ppl` (val_ppl; inf when failed)."""
    out = final.copy()
    ppl = pd.to_numeric(out["val_ppl"], errors="coerce")
    out["failed"] = (out["status"] == "diverged") | ppl.isna() | (ppl >= chance_ppl)
    out["ppl"] = ppl.where(~out["failed"], math.inf)
    return out


def by_seed(table: pd.DataFrame, variant: str, value: str = "ppl") -> pd.Series:
    """`value` of one variant indexed by seed."""
    return table[table["variant"] == variant].set_index("seed")[value].sort_index()


def cell(values: pd.Series, raw: pd.Series | None = None, digits: int = 1) -> str:
    """'mean ± std (n=K)' of per-seed values over the seeds that did not fail (inf); failed seeds
    are counted apart with their raw values (`raw`, e.g. val_ppl; 'diverged' where the trainer
    stopped the run), as the paper prints a diverged run's perplexity."""
    values = values.dropna()
    if values.empty:
        return "not trained"
    finite = values[np.isfinite(values)]
    failed = values.index[~np.isfinite(values)]
    text = ""
    if len(finite):
        text = f"{finite.mean():.{digits}f}" + (f" ± {finite.std():.{digits}f}" if len(finite) > 1 else "")
        text += f" (n={len(finite)})"
    if len(failed):
        shown = "" if raw is None else ": " + ", ".join(
            "diverged" if pd.isna(raw.get(seed)) else f"{raw.get(seed):.{digits}f}" for seed in failed)
        text += f"{', ' if text else ''}failed {len(failed)}/{len(values)}{shown}"
    return text


def judge(a: pd.Series, b: pd.Series, lower_is_better: bool = True) -> tuple[str, str]:
    """The verdict on "a is better than b" (per-seed Series) by the module's rule, and why."""
    a, b = a.align(b, join="inner")
    keep = ~(a.isna() | b.isna())
    a, b = a[keep], b[keep]
    if len(a) < 2:
        return "inconclusive", f"{len(a)} paired seed(s)"
    wins = (a < b) if lower_is_better else (a > b)
    losses = (a > b) if lower_is_better else (a < b)
    finite = bool(np.isfinite(a).all() and np.isfinite(b).all())
    why = (f"{_mean(a)} vs {_mean(b)}: the first {'lower' if lower_is_better else 'higher'} in "
           f"{int(wins.sum())}/{len(a)} seeds")
    if finite:
        gap, spread = abs(a.mean() - b.mean()), max(a.std(), b.std())
        clear = gap > spread
        why += f"; gap of means {gap:.3g} vs largest seed std {spread:.3g}"
    else:  # a failed run on one side decides its seed; the gap is infinite
        clear = True
        why += " (failed runs count as infinite)"
    if wins.all() and clear:
        return "reproduced", why
    if losses.all() and clear:
        return "not reproduced", why
    return "inconclusive", why


def every_seed(flags: pd.Series) -> str:
    """The verdict on a claim about one variant, per seed: reproduced when it holds in every
    seed, not reproduced when in none, inconclusive otherwise (and with no seed)."""
    flags = flags.dropna().astype(bool)
    if flags.empty:
        return "inconclusive"
    return "reproduced" if flags.all() else "not reproduced" if not flags.any() else "inconclusive"


def _mean(values: pd.Series) -> str:
    finite = values[np.isfinite(values)]
    failed = len(values) - len(finite)
    text = f"{finite.mean():.4g}" if len(finite) else "failed"
    return text + (f" ({failed} failed)" if failed and len(finite) else "")


def judge_best(values: dict[str, pd.Series], best: str, lower_is_better: bool = True) -> tuple[str, str]:
    """The verdict on "`best` beats every other entry of `values`": reproduced when it beats each
    by the rule, not reproduced when any beats it by the rule, inconclusive otherwise."""
    verdicts = {name: judge(values[best], v, lower_is_better)[0] for name, v in values.items() if name != best}
    lost = [name for name, v in verdicts.items() if v == "not reproduced"]
    unclear = [name for name, v in verdicts.items() if v == "inconclusive"]
    if lost:
        return "not reproduced", f"beaten clearly by {', '.join(lost)}"
    if unclear:
        return "inconclusive", f"not clearly ahead of {', '.join(unclear)}"
    return "reproduced", f"clearly ahead of all {len(verdicts)}"


def load_sweep(experiments: dict[str, str], runs_root: str | Path, chance_ppl: float) -> pd.DataFrame:
    """Final results of several experiments ({size label: experiment}) in one table with a
    `size` column, `failed` and `ppl` marked; an experiment with no finished run is left out."""
    from cod.results import load_final

    tables = []
    for size, experiment in experiments.items():
        if not (Path(runs_root) / experiment).exists():
            continue
        final = load_final(experiment, runs_root)
        if len(final):
            tables.append(mark_failed(final, chance_ppl).assign(size=size))
    if not tables:
        raise FileNotFoundError(f"none of {list(experiments.values())} has finished runs under {runs_root}")
    return pd.concat(tables, ignore_index=True)


def ppl_table(sweep: pd.DataFrame, rows: dict[str, str], paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows {label: variant} by the sizes of `sweep`: our perplexity cell, and the paper's value
    beside it where `paper` (same labels, sizes as columns) has one."""
    columns = {}
    for size in sweep["size"].unique():
        at = sweep[sweep["size"] == size]
        columns[(size, "ours")] = [cell(by_seed(at, variant), by_seed(at, variant, "val_ppl")) for variant in rows.values()]
        if paper is not None and size in paper.columns:
            columns[(size, "paper")] = [paper[size].get(label, "") for label in rows]
    return pd.DataFrame(columns, index=list(rows))
