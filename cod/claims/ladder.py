"""Paper B's ladders (notebooks b1, b3-b7): settings side by side, each a rung of runs.

A rung is the runs (every seed) of one variant of one experiment; the profile's baseline model
(the default profile: b_depth/d16) is a rung of every sparsity ladder. A notebook names its rungs
in its `ladder` parameter, {label: "experiment/variant"} (`rungs_from`), so that each profile
gives its own in params.yaml. `load_ladder` reads what training and the analyse@ stages stored
for each rung into tables keyed by rung label and seed, so a notebook plots and judges them
without parsing files:

    ladder = load_ladder(rungs_from({"lambda=0": "b_weight_decay/wd0", "lambda=0.1": "b_depth/d16"}),
                         "runs/default", "analyses/default")
    ladder.by_seed("val_ppl")          # rungs (in order) x seeds
    paper = paper_rows(PAPER, ladder.labels)   # the paper's row of each rung, NaN where it has none
    ladder.table(["val_ppl", "causal"], paper)   # the paper's table, ours beside its values
    ladder.usefulness_curve(taus)      # E / L against tau, mean over seeds
    ladder.mean_accuracy(["arc_challenge", "hellaswag"])   # a column: zero-shot accuracy averaged over tasks
    ladder.lacks("lambda=0") or compare(...)   # a claim judged only when its rungs are on the ladder
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from cod.records.analyses import load_layers, load_zero_shot
from cod.config import ConfigError
from cod.metrics.effectiveness import WEIGHT_THRESHOLDS, LayerAnalysis
from cod.metrics.usefulness import matched_tau
from cod.paths import run_name, split_run_name
from cod.records.results import load_final, load_history, load_layer_stats, spread, train_command


@dataclass(frozen=True)
class Rung:
    label: str  # its name in tables and figures, e.g. "lambda=0.1"
    experiment: str  # its runs: runs/<profile>/<experiment>/<variant>_s<seed>/
    variant: str
    analysis: str | None = None  # its layer scores: analyses/<profile>/<analysis>/; None: named as the experiment
    zero_shot: str | None = None  # its zero-shot accuracies (zero_shot.json) there; None: the layer scores' folder

    def run(self, runs_root: str | Path, seed: int) -> Path:
        """The folder of its run of `seed` (runs_root: runs/<profile>)."""
        return Path(runs_root) / self.experiment / run_name(self.variant, seed)

    def folder(self, analyses_root: str | Path) -> Path:
        """The folder of its analysis (analyses_root: analyses/<profile>): settings.json, a folder per run."""
        return Path(analyses_root) / (self.analysis or self.experiment)

    def scores(self, analyses_root: str | Path, seed: int) -> Path:
        """The folder of the layer scores of its run of `seed`."""
        return self.folder(analyses_root) / run_name(self.variant, seed)


RUNG_FORM = "'experiment/variant' or 'experiment/variant/analysis'"


def rungs_from(ladder: Mapping[str, str], labels: Sequence[str] | None = None) -> list[Rung]:
    """The rungs of a notebook's `ladder` parameter, {label: "experiment/variant"} in ladder order;
    a third part "/analysis" names the folder of the rung's layer scores (`Rung.analysis`). With
    `labels` (the paper's rungs, in its order), the ladder's labels must be some of them in that
    order. A malformed entry is refused with a one-line ConfigError."""
    if not ladder:
        raise ConfigError(f"ladder is empty; expected {{label: {RUNG_FORM}, ...}}")
    if labels is not None and [label for label in labels if label in ladder] != list(ladder):
        raise ConfigError(f"ladder: {list(ladder)} is not allowed; expected some of {list(labels)}, in that order")
    rungs = []
    for label, runs in ladder.items():
        parts = runs.split("/") if isinstance(runs, str) else []
        if not (isinstance(label, str) and label and len(parts) in (2, 3) and all(parts)):
            raise ConfigError(f"ladder: {label!r}: {runs!r} is not allowed; expected {RUNG_FORM}")
        rungs.append(Rung(label, *parts))
    return rungs


def paper_rows(paper: pd.DataFrame, labels: Sequence[str],
               row_of: Mapping[str, Hashable] | None = None) -> pd.DataFrame:
    """The paper's values a row per rung, indexed by `labels`: `paper` is keyed by the paper's own
    setting and `row_of` maps a rung label to it (None: each label is the paper's setting). A rung
    the paper has no row for gets NaN, never another row's values."""
    keys = [label if row_of is None else row_of.get(label) for label in labels]
    return paper.reindex(keys).set_axis(list(labels))


def paper_along(values: pd.Series) -> np.ndarray | None:
    """The paper's values along the ladder for `cod.claims.verdicts.monotone`, or None where it lacks
    the value of a rung (the paper's slope along our rungs is then unknown)."""
    return None if values.isna().any() else values.to_numpy()


def paper_pair(paper: pd.DataFrame, column: str, first: str, second: str) -> tuple[float, float] | None:
    """The paper's `column` of rungs `first` and `second` (`paper_rows`), for `cod.claims.verdicts.compare`;
    None where the paper lacks either."""
    if column not in paper:
        return None
    given = paper[column].reindex([first, second])
    return None if given.isna().any() else tuple(given)


# the per-run values a ladder notebook pairs by seed for its claims (`Ladder.paired`)
SCORES = ("val_ppl", "last_var_train", "causal", "permutation", "usefulness", "affine_rise", "usefulness_matched",
          "usefulness_authors")


@dataclass
class Ladder:
    rungs: list[Rung]
    runs: pd.DataFrame  # a row per run: rung, seed, status, val_ppl, params, the global scores (NaN: not analysed)
    layers: pd.DataFrame  # a row per run and layer (1-based): variance, jac_dev, affine and removal rises, kurtosis
    stats: pd.DataFrame  # per-layer variances logged in training: rung, seed, step, layer, resid/attn/mlp_var
    history: pd.DataFrame  # training-loss rows: rung, seed, step, tokens, loss, lr, grad_norm
    analyses: dict[tuple[str, int], LayerAnalysis]  # (rung label, seed) -> stored layer scores

    @property
    def labels(self) -> list[str]:
        return [rung.label for rung in self.rungs]

    @property
    def seeds(self) -> list[int]:
        return sorted(int(s) for s in self.runs["seed"].unique())

    @property
    def paired_seeds(self) -> list[int]:
        """The seeds with a run on every rung: the ones the verdicts pair."""
        counts = self.runs.groupby("seed")["rung"].nunique()
        return sorted(int(s) for s in counts.index[counts == len(self.rungs)])

    def by_seed(self, column: str) -> pd.DataFrame:
        """Rows: rungs in ladder order; columns: seeds; values of `column` of the per-run table."""
        table = self.runs.pivot_table(index="rung", columns="seed", values=column, dropna=False)
        return table.reindex(self.labels)

    def rung(self, label: str) -> Rung:
        """The rung labelled `label`."""
        return next(rung for rung in self.rungs if rung.label == label)

    def lacks(self, *labels: str) -> str | None:
        """Why a claim on rungs `labels` cannot be judged (one of them is not on the ladder), or
        None when all are there."""
        missing = [repr(label) for label in labels if label not in self.labels]
        return f"no rung {', '.join(missing)} on this ladder" if missing else None

    @property
    def tau(self) -> float:
        """The usefulness threshold the layer scores were computed at (the same for every run)."""
        taus = {a.usefulness.tau for a in self.analyses.values()}
        if len(taus) != 1:
            raise ValueError(f"the ladder's layer scores need one tau; found {sorted(taus) or 'no scores'}")
        return taus.pop()

    def paired(self, columns: Sequence[str]) -> dict[str, pd.DataFrame]:
        """{column: rungs x the paired seeds}: what the verdicts judge."""
        return {column: self.by_seed(column)[self.paired_seeds] for column in columns}

    def means(self, columns: Sequence[str]) -> dict[str, pd.Series]:
        """{column: its mean over seeds per rung}."""
        return {column: self.by_seed(column).mean(axis=1) for column in columns}

    def largest_rise(self, labels: Sequence[str] | None = None, authors: bool = False) -> dict[str, pd.Series]:
        """{rung: each seed's largest relative loss rise under an affine replacement} for `labels`
        (default: every rung), for `cod.claims.verdicts.usefulness_at_floor`; `authors`: under the
        authors' fit (`cod.metrics.usefulness.usefulness_authors`)."""
        column = "affine_rise_authors" if authors else "affine_rise"
        return {label: self.layers[self.layers["rung"] == label].groupby("seed")[column].max()
                for label in (self.labels if labels is None else labels)}

    def share_step(self, labels: Sequence[str] | None = None) -> float:
        """The lattice step of a difference of shares of layers (usefulness E / L) between rungs `labels`
        (default: every rung): a share of L layers moves in steps of 1 / L, a difference of two in
        steps of 1 / lcm of their depths."""
        depths = self.layers[self.layers["rung"].isin(self.labels if labels is None else labels)]
        return 1 / math.lcm(*(int(d) for d in depths.groupby("rung")["layer"].max()))

    def authors_fit_lacks(self, labels: Sequence[str] | None = None) -> str | None:
        """Why a claim under the authors' usefulness fit cannot be judged on rungs `labels` (default:
        every rung): a run of the paired seeds (the only ones a claim compares) scored before that fit
        was measured (its analysis must run again, which needs the weights); None when each has it."""
        wanted, paired = set(self.labels if labels is None else labels), set(self.paired_seeds)
        missing = sorted({label for (label, seed), a in self.analyses.items()
                          if label in wanted and seed in paired and a.usefulness_authors is None})
        if not missing:
            return None
        return (f"no usefulness under the authors' fit for {', '.join(missing)}: their analyses predate it; "
                "re-running the analyse stage measures it (it needs the trained weights)")

    def save(self, figures_dir: str | Path) -> None:
        """Write the per-run and per-layer tables to figures_dir (per_run.csv, per_layer.csv)."""
        Path(figures_dir).mkdir(parents=True, exist_ok=True)
        self.runs.to_csv(Path(figures_dir) / "per_run.csv", index=False)
        self.layers.to_csv(Path(figures_dir) / "per_layer.csv", index=False)

    def analyses_of(self, label: str) -> list[LayerAnalysis]:
        """The stored layer scores of rung `label`'s runs, in seed order."""
        return [a for (rung, _), a in sorted(self.analyses.items()) if rung == label]

    def last_variance_during_training(self) -> dict[str, pd.DataFrame]:
        """{rung: steps x seeds} of the last layer's output variance logged during training (Fig. 4a, 5a, 7, 8)."""
        curves = {}
        for label in self.labels:
            rung = self.stats[self.stats["rung"] == label]
            last = rung[rung["layer"] == rung["layer"].max()]
            curves[label] = last.pivot_table(index="step", columns="seed", values="resid_var")
        return curves

    def match_tau(self, baseline: str, share: float) -> float:
        """The matched tau (`cod.metrics.usefulness.matched_tau`) of rung `baseline`'s runs at the
        useful share `share`; adds every run's usefulness at it as the column `usefulness_matched`."""
        if baseline not in self.labels:
            raise ConfigError(f"ladder: no rung {baseline!r}, whose runs set the matched tau; the rungs: "
                              f"{', '.join(self.labels)}")
        tau = matched_tau([a.usefulness for (label, _), a in self.analyses.items() if label == baseline], share)
        self.runs["usefulness_matched"] = [
            self.analyses[r.rung, r.seed].usefulness.at(tau).score if (r.rung, r.seed) in self.analyses else np.nan
            for r in self.runs.itertuples()]
        return tau

    def table(self, columns: Sequence[str], paper: pd.DataFrame | None = None) -> pd.DataFrame:
        """A paper-style table: a row per rung, 'mean ± std (min..max, n)' over seeds of each of
        `columns`, then the paper's value of each column it has (`paper`: indexed by rung label)."""
        rows = {column: [spread(self.by_seed(column).loc[label]) for label in self.labels] for column in columns}
        if paper is not None:
            rows.update({f"{column} paper": paper[column].reindex(self.labels).to_list()
                         for column in columns if column in paper})
        return pd.DataFrame(rows, index=pd.Index(self.labels, name="rung"))

    def mean_accuracy(self, tasks: Sequence[str], metric: str = "acc_norm") -> str:
        """Adds the column `mean_<metric>`: each run's zero-shot `metric` averaged over `tasks`
        (NaN where a task was not scored), and returns its name."""
        columns = [f"{metric}:{task}" for task in tasks]
        missing = [c for c in columns if c not in self.runs]
        if missing:
            raise KeyError(f"no zero-shot {missing} in any run of the ladder; scored: "
                           f"{', '.join(c for c in self.runs if ':' in c) or 'none'}")
        name = f"mean_{metric}"
        self.runs[name] = self.runs[columns].mean(axis=1, skipna=False)
        return name

    def usefulness_curve(self, taus: Sequence[float]) -> pd.DataFrame:
        """Useful share E / L at each tau (rows) for each rung (columns), mean over its analysed seeds."""
        return pd.DataFrame({label: [np.mean([a.usefulness.at(t).score for a in self.analyses_of(label)] or [np.nan])
                                     for t in taus] for label in self.labels}, index=pd.Index(taus, name="tau"))


def _run_row(rung: Rung, final: pd.Series, analysis: LayerAnalysis | None, stats: pd.DataFrame) -> dict:
    logged = stats[(stats["variant"] == rung.variant) & (stats["seed"] == final["seed"])]
    last = logged[(logged["step"] == logged["step"].max()) & (logged["layer"] == logged["layer"].max())]
    diverged = final["status"] != "completed"
    row = {"rung": rung.label, "seed": int(final["seed"]), "status": final["status"], "steps": final["steps"],
           "tokens": final["tokens"], "params": final["params"], "params_non_embedding": final["params_non_embedding"],
           "val_loss": np.inf if diverged else final["val_loss"], "val_ppl": np.inf if diverged else final["val_ppl"],
           "last_var_train": last["resid_var"].iloc[0] if len(last) else np.nan}
    if analysis is None:
        return row
    u, authors = analysis.usefulness, analysis.usefulness_authors
    return {**row, "causal": analysis.causal.global_score, "permutation": analysis.permutation.global_score,
            "usefulness": u.score, "E": u.effective, "W": u.wasted, "affine_rise": float(np.mean(u.relative_increase)),
            "usefulness_authors": np.nan if authors is None else authors.score,
            "jac_dev": float(analysis.jacobians.deviation.mean()), "last_var": float(analysis.variance[-1]),
            "kurtosis": float(analysis.kurtosis.layer.mean()), "base_loss": analysis.removal.base_loss,
            **{f"weight_sparsity@{eps:g}": float(v) for eps, v in zip(WEIGHT_THRESHOLDS, analysis.weight_sparsity)}}


def check_trained(rungs: Sequence[Rung], runs_root: str | Path) -> None:
    """Refuse, in one line before anything is read, rungs with no finished run under `runs_root`
    (runs/<profile>), naming each runs folder and the command that trains it."""
    missing: dict[str, list[Rung]] = {}
    for rung in rungs:
        folder = Path(runs_root) / rung.experiment
        trained = {split_run_name(run.name)[0] for run in folder.glob("*_s*") if (run / "final.json").exists()}
        if rung.variant not in trained:
            missing.setdefault(rung.experiment, []).append(rung)
    if missing:
        raise FileNotFoundError("; ".join(
            f"{Path(runs_root) / experiment} holds no run of variant "
            + ", ".join(f"{rung.variant!r} (rung {rung.label!r})" for rung in lacking)
            + f": train it with `{train_command(experiment, Path(runs_root).name)}`"
            for experiment, lacking in missing.items()))


def load_ladder(rungs: Sequence[Rung], runs_root: str | Path, analyses_root: str | Path) -> Ladder:
    """The stored results of every rung's runs (runs_root: runs/<profile>; analyses_root:
    analyses/<profile>). A run without stored layer scores (not analysed, or diverged before
    any weights were kept) has NaN scores; a diverged run has an infinite validation loss."""
    labels = [rung.label for rung in rungs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"rung labels must be distinct; got {labels}")
    check_trained(rungs, runs_root)
    runs, layers, stats, history, analyses = [], [], [], [], {}
    cache: dict[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]] = {}
    for rung in rungs:
        if rung.experiment not in cache:
            cache[rung.experiment] = tuple(load(rung.experiment, runs_root)
                                           for load in (load_final, load_layer_stats, load_history))
        finals, logged, losses = cache[rung.experiment]
        finals = finals[finals["variant"] == rung.variant]
        for _, final in finals.iterrows():
            folder = rung.scores(analyses_root, final["seed"])
            analysis = load_layers(folder) if (folder / "layers.json").exists() else None
            scored = folder.parent.parent / (rung.zero_shot or folder.parent.name) / folder.name
            accuracy = load_zero_shot(scored) if (scored / "zero_shot.json").exists() else []
            runs.append({**_run_row(rung, final, analysis, logged),
                         **{f"{key}:{r['task']}": r[key] for r in accuracy for key in ("acc", "acc_norm", "n")}})
            if analysis is None:
                continue
            analyses[rung.label, int(final["seed"])] = analysis
            layers += [{"rung": rung.label, "seed": int(final["seed"]), "layer": i + 1,
                        "variance": analysis.variance[i], "jac_dev": analysis.jacobians.deviation[i],
                        "affine_rise": analysis.usefulness.relative_increase[i],
                        "affine_rise_authors": np.nan if analysis.usefulness_authors is None
                        else analysis.usefulness_authors.relative_increase[i],
                        "removal_rise": analysis.removal.loss_increase[i], "kurtosis": analysis.kurtosis.layer[i]}
                       for i in range(len(analysis.variance))]
        for frame, out in ((logged, stats), (losses, history)):
            part = frame[frame["variant"] == rung.variant].drop(columns="variant")
            out.append(part.assign(rung=rung.label))
    return Ladder(list(rungs), pd.DataFrame(runs), pd.DataFrame(layers), pd.concat(stats, ignore_index=True),
                  pd.concat(history, ignore_index=True), analyses)
