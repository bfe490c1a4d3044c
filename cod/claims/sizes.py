"""Notebooks a2 and a10's tables: a few norms' layer analyses at several model sizes, read into
per-run and per-layer tables (`load_sizes`, `norm_tables`), and those tables as a function of the
deep share, the free choice their claims are judged at and again at its neighbours."""

from __future__ import annotations

import dataclasses
import functools
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cod.metrics.effectiveness import LayerAnalysis
from cod.records.analyses import load_complete, stored_settings
from cod.records.results import analyse_command


def size_label(name: str) -> str:
    """The model size an analysis of one size is named for: a_130m -> 130M."""
    return name.split("_", 1)[1].upper()


def load_sizes(root: str | Path, names: typing.Sequence[str], norms: dict[str, str]
               ) -> tuple[dict[str, dict[tuple[str, int], LayerAnalysis]], dict[str, str]]:
    """The analyses among `names` (one per model size) under `root` that hold runs of every norm of
    `norms` ({label: variant}), as ({name: {(label, seed): LayerAnalysis}}, {name: the experiment it
    measured}); prints each one's runs and settings. Raises FileNotFoundError when none does."""
    labels = {variant: label for label, variant in norms.items()}
    layers = {name: {(labels[variant], seed): a for (variant, seed), a in runs.items()}
              for name, runs in load_complete(root, names, list(norms.values())).items()}
    if not layers:
        commands = ", ".join(f"`{analyse_command(name, Path(root).name)}`" for name in names)
        raise FileNotFoundError(f"none of {names} has a layer analysis of every norm under {root}: {commands} "
                                "make them")
    experiments = {}
    for name in layers:
        settings = stored_settings(Path(root) / name)
        experiments[name] = settings["experiment"]
        print(f"{size_label(name)}: {len(layers[name])} runs; settings (params.yaml analyses.{name}): {settings}")
    return layers, experiments


Measure = typing.Callable[[LayerAnalysis], tuple[dict[str, float], dict[str, np.ndarray]]]


@dataclasses.dataclass(frozen=True)
class NormTables:
    """The runs of `load_sizes`, measured by a notebook (`norm_tables`).

    per_run: a row per run: size (the analysis name), norm (label), variant, seed, layers,
        base_loss, the measure's statistics, val_ppl and failed (final.json's; NaN without a row),
        sorted by size, norm and seed.
    per_layer: a row per run and block: size, norm, seed, layer (1..L), the measure's values."""

    per_run: pd.DataFrame
    per_layer: pd.DataFrame

    def per_seed(self, size: str, norm: str, column: str) -> pd.Series:
        """A per_run column of one size and norm, indexed by seed."""
        at = self.per_run[(self.per_run["size"] == size) & (self.per_run["norm"] == norm)]
        return at.set_index("seed")[column].sort_index()

    def mean(self, size: str, norm: str, column: str) -> float:
        """A per_run column of one size and norm, averaged over seeds."""
        return float(self.per_seed(size, norm, column).mean())

    def profile(self, size: str, norm: str, value: str) -> pd.Series:
        """A per_layer value of one size and norm, averaged over seeds, indexed by layer."""
        at = self.per_layer[(self.per_layer["size"] == size) & (self.per_layer["norm"] == norm)]
        return at.groupby("layer")[value].mean()

    def save(self, figures_dir: str | Path) -> None:
        """Write figures_dir/per_run.csv and per_layer.csv."""
        Path(figures_dir).mkdir(parents=True, exist_ok=True)
        self.per_run.to_csv(Path(figures_dir) / "per_run.csv", index=False)
        self.per_layer.to_csv(Path(figures_dir) / "per_layer.csv", index=False)


def norm_tables(layers: dict[str, dict[tuple[str, int], LayerAnalysis]], norms: dict[str, str], measure: Measure,
                finals: pd.DataFrame) -> NormTables:
    """The tables of the analyses `layers` (`load_sizes`; `norms` {label: variant}): `measure` maps a
    run's analysis to its statistics {column: value} and its per-layer values {column: array of
    its L blocks}; `finals` (`cod.claims.tables.load_sweep`, its size the analysis name) adds each
    run's val_ppl and failed."""
    rows, per_layer = [], []
    for name, runs in layers.items():
        for (label, seed), a in runs.items():
            statistics, values = measure(a)
            n = len(a.variance)
            rows.append({"size": name, "norm": label, "variant": norms[label], "seed": seed, "layers": n,
                         "base_loss": a.removal.base_loss, **statistics})
            per_layer += [{"size": name, "norm": label, "seed": seed, "layer": i + 1,
                           **{column: value[i] for column, value in values.items()}} for i in range(n)]
    keys = ["size", "variant", "seed"]
    per_run = pd.DataFrame(rows).merge(finals[[*keys, "val_ppl", "failed"]], on=keys, how="left")
    return NormTables(per_run.sort_values(["size", "norm", "seed"]).reset_index(drop=True), pd.DataFrame(per_layer))


def deep_share_tables(layers: dict[str, dict[tuple[str, int], LayerAnalysis]], norms: dict[str, str],
                      measure: typing.Callable[..., Any], finals: pd.DataFrame) -> typing.Callable[[float], NormTables]:
    """`norm_tables` as a function of the deep share, each share's tables made once: `measure(a,
    deep_share=...)` counts the last `deep_share` of a model's blocks as deep (a free choice that
    notebooks a2 and a10 judge their claims at, and again at its neighbours)."""
    return functools.cache(lambda deep_share: norm_tables(layers, norms, functools.partial(measure, deep_share=deep_share),
                                                          finals))


def deep_share_runs(layers: dict[str, dict[tuple[str, int], LayerAnalysis]], norms: dict[str, str],
                    measure: typing.Callable[..., Any], finals: pd.DataFrame, deep_share: float,
                    figures_dir: str | Path) -> tuple[typing.Callable[[float], NormTables], NormTables]:
    """Notebooks a2 and a10's tables: `deep_share_tables` (the tables at any deep share) and those at
    `deep_share`, saved to figures_dir."""
    runs_at = deep_share_tables(layers, norms, measure, finals)
    runs = runs_at(deep_share)
    runs.save(figures_dir)
    return runs_at, runs
