"""The notebooks' shared figure style and plot helpers: depth colours, seed spreads, heatmaps
on one colour scale, and the paper's values beside ours on the same axis (one scale for both, or
both as ratios to a reference), drawn the same way everywhere; each quantity named with the way
it runs (`QUANTITIES`).

Importing this module sets the style once (`STYLE`): mathtext for formulas in labels (write
`SIGMA2`, not "sigma^2"), constrained layout so labels do not collide, and figures saved at
a fixed resolution with tight bounds.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Image, display

from cod.png import compact_png

STYLE = {
    "figure.constrained_layout.use": True,  # labels, titles and colour bars never overlap
    "axes.formatter.use_mathtext": True,  # 10^3, not 1e3, on log axes
    "mathtext.fontset": "dejavusans",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "savefig.dpi": 120,
    "savefig.bbox": "tight",
}
mpl.rcParams.update(STYLE)
SHOWN_COLOURS = 64  # of a figure's copy inside an executed notebook: a quarter fewer bytes in git than the file

SIGMA2 = r"$\sigma^2$"  # output variance
QUANTITIES = {  # a score's axis title: what it is, and which way is better or more
    "val_ppl": "validation perplexity (lower is better)",
    "causal": "causal score (higher: a skipped block disturbs later ones more)",
    "permutation": "permutation score (higher: swapping two blocks costs more)",
    "usefulness": "useful share E / L (higher: more blocks useful)",
    "usefulness_matched": "useful share E / L (higher: more blocks useful)",
}
JACOBIAN_DEVIATION = r"$\|J - I\|_F\,/\,d$"  # distance of a block Jacobian from the identity


def depth_colors(n_layers: int) -> list:
    """Shallow blocks blue, deep blocks red, as in paper A Fig. 4."""
    return [plt.cm.coolwarm(x) for x in np.linspace(0.0, 1.0, n_layers)]


def seed_band(ax, x: pd.Series | np.ndarray, table: pd.DataFrame, color, label: str | None = None,
              **line_kwargs) -> None:
    """Mean over the columns of `table` (one per seed) as a line, min..max as a band."""
    ax.plot(x, table.mean(axis=1), color=color, label=label, **line_kwargs)
    if table.shape[1] > 1:
        ax.fill_between(x, table.min(axis=1), table.max(axis=1), color=color, alpha=0.2, linewidth=0)


def layer_curves_over_training(ax, stats: pd.DataFrame, value: str = "resid_var") -> None:
    """One line per layer: `value` against step, mean over seeds with a min..max band."""
    layers = sorted(stats["layer"].unique())
    for color, layer in zip(depth_colors(len(layers)), layers):
        table = stats[stats["layer"] == layer].pivot_table(index="step", columns="seed", values=value)
        seed_band(ax, table.index, table, color, label=f"layer {layer}")
    ax.set_xlabel("training step")


def depth_profile(ax, stats: pd.DataFrame, step: int, color, label: str, value: str = "resid_var") -> None:
    """`value` against layer at one step, mean over seeds with a min..max band."""
    table = stats[stats["step"] == step].pivot_table(index="layer", columns="seed", values=value)
    seed_band(ax, table.index, table, color, label=label, marker="o", markersize=3)
    ax.set_xlabel("layer")


def save(fig, figures_dir: str | Path, name: str) -> Path:
    """Save `fig` as figures_dir/name.png (in the module's style, compacted by `cod.png`) and return the path."""
    path = Path(figures_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = io.BytesIO()
    fig.savefig(raw, format="png")
    path.write_bytes(compact_png(raw.getvalue()))  # a 256-colour palette: a third of the bytes (cod.png)
    return path


def show(fig, figures_dir: str | Path, name: str) -> None:
    """`save` `fig` as figures_dir/name.png, close it and show that file in the notebook (in
    `SHOWN_COLOURS`): drawn once (the inline backend would draw it again, twice for its tight box)."""
    path = save(fig, figures_dir, name)
    plt.close(fig)
    display(Image(data=compact_png(path.read_bytes(), SHOWN_COLOURS), format="png"))


def heatmaps(fig, axes, matrices: list[np.ndarray], label: str, cmap: str = "viridis", symmetric: bool = False,
             **imshow_kwargs):
    """One image per axis on ONE colour scale (the range of all matrices; centred on 0 when
    `symmetric`) and one colour bar for them all, labelled `label`; returns the colour bar."""
    finite = np.concatenate([np.asarray(m, float)[np.isfinite(m)].ravel() for m in matrices])
    if symmetric:
        top = float(np.abs(finite).max())
        vmin, vmax = -top, top
    else:
        vmin, vmax = float(finite.min()), float(finite.max())
    image = None
    for ax, matrix in zip(np.ravel(axes), matrices):
        image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, **imshow_kwargs)
    return fig.colorbar(image, ax=np.ravel(axes).tolist(), label=label, shrink=0.8)


def paper_line(ax, x, values, label: str, color: str = "0.45", **plot_kwargs):
    """The paper's values against the same x on the same axis as ours (one scale for both), grey
    and dashed unless `plot_kwargs` say otherwise; returns the line."""
    style = {"linestyle": "--", "marker": "s", "markersize": 3} | plot_kwargs
    return ax.plot(x, values, color=color, label=label, **style)[0]


def paper_marks(axes, x: float, values: list[float], label: str) -> list:
    """One value of the paper per axis of `axes` (their panels' end point, say) as a labelled marker
    at `x`, on the axis ours is drawn on, with the value written beside it; returns the markers."""
    marks = []
    for ax, value in zip(axes, values):
        marks.append(paper_line(ax, [x], [value], label, linestyle="none", marker="D", markersize=7))
        ax.annotate(f"{value:g}", (x, value), xytext=(-6, 0), textcoords="offset points", ha="right",
                    va="center", fontsize=8, color="0.45")
    return marks


def label_points(ax, points: list[tuple[float, float, str]], fontsize: int = 7, color: str = "0.3") -> list:
    """A label beside each point (x, y, text) of `ax`, above and right of it, moved down a line at a
    time until it overlaps no label placed before it; returns the labels. Call it once the axis
    limits are set: the figure is drawn first, so that the points sit where they will."""
    ax.figure.canvas.draw()  # limits and layout settle: the overlaps are measured where the labels end up
    renderer = ax.figure.canvas.get_renderer()
    placed: list = []
    for x, y, text in points:
        for shift in range(12):  # a dozen lines down at most
            label = ax.annotate(text, (x, y), xytext=(4, 4 - shift * (fontsize + 3)), textcoords="offset points",
                                fontsize=fontsize, color=color)
            box = label.get_window_extent(renderer)
            if shift == 11 or not any(box.overlaps(other.get_window_extent(renderer)) for other in placed):
                break
            label.remove()
        placed.append(label)
    return placed


def tau_line(ax, tau: float, vertical: bool = False, **line_kwargs):
    """Paper B's usefulness threshold tau as a labelled reference line, horizontal unless
    `vertical`; returns the line."""
    draw = ax.axvline if vertical else ax.axhline
    style = {"color": "C3", "linestyle": "--", "linewidth": 1} | line_kwargs
    return draw(tau, label=f"tau = {tau:g}, paper B's usefulness threshold", **style)


def halves_line(ax, n_layers: int, **line_kwargs):
    """The divider between the shallow half (blocks 1..L/2) and the deep half of `n_layers`
    blocks as a labelled vertical line on a per-layer axis; returns the line."""
    style = {"color": "grey", "linestyle": ":", "linewidth": 1} | line_kwargs
    return ax.axvline(n_layers / 2 + 0.5, label="shallow | deep halves", **style)


def layer_bands(axes, per_layer: pd.DataFrame, colors: dict, values: list[str]) -> None:
    """One row of per-layer panels of one model size, a panel per column of `values`: each norm of
    `colors` ({label: colour}) as its mean over seeds with the min..max band, and the
    shallow | deep divider. `per_layer` has columns norm, seed, layer and the values; a
    `loss_increase` panel (removing one layer) gets a symmetric-log axis and a line at 0."""
    for label, color in colors.items():
        for ax, value in zip(axes, values):
            table = per_layer[per_layer["norm"] == label].pivot_table(index="layer", columns="seed", values=value)
            seed_band(ax, table.index, table, color, label, marker="o", markersize=3)
    for ax, value in zip(axes, values):
        halves_line(ax, per_layer["layer"].max())
        ax.set_xlabel("removed layer $l$" if value == "loss_increase" else "layer $l$")
        if value == "loss_increase":
            ax.axhline(0, color="black", linewidth=0.5, label="no loss increase")
            ax.set_yscale("symlog", linthresh=1e-2)
            ax.set_ylabel("loss increase (nats)")


def loss_curves(ax, history: pd.DataFrame, variants: dict[str, str], smooth: int = 1, x: str = "tokens",
                by: str = "variant") -> None:
    """Training loss against `x` (tokens or step) for {label: variant} (a value of the column `by`,
    e.g. a ladder's `rung`): mean over seeds (each seed's curve a running mean over `smooth` logged
    steps first), min..max band; a diverged seed's curve stops where its history does. Colours
    follow the order of `variants`."""
    for color, (label, variant) in zip(plt.cm.tab10.colors, variants.items()):
        rows = history[history[by] == variant]
        if rows.empty:
            continue
        table = rows.pivot_table(index=x, columns="seed", values="loss")
        table = table.rolling(smooth, min_periods=1).mean()
        seed_band(ax, table.index, table, color, label=label)
    ax.set_xlabel("training tokens" if x == "tokens" else "training step")
    ax.set_ylabel("training loss (nats, lower is better)")


def rung_scores(ax, values: pd.DataFrame, paper: pd.Series | None = None, label: str = "",
                color: str = "C0", relative: bool = False) -> None:
    """A ladder's value per rung (rows of `values`, in order; seeds as columns): mean over seeds
    with the min..max band at rung positions 0..n-1 named by the rows, and the paper's value of
    each rung (`paper`, indexed like `values`; missing rungs skipped) on the same axis, labelled
    `label`. `relative`: each seed's values and the paper's as ratios to their first rung (a
    quantity whose scale differs, like perplexity: one axis for both, the trend compared)."""
    x = np.arange(len(values))
    known = None if paper is None else paper.reindex(values.index).astype(float)
    if relative:
        values = values / values.iloc[0]
        known = None if known is None else known / known.iloc[0]  # all NaN when the paper lacks the first rung
    seed_band(ax, x, values, color, "ours (mean of seeds, min-max)", marker="o", markersize=4)
    ax.set_xticks(x, list(values.index))
    ax.set_ylabel(label)
    if known is not None and known.notna().any():
        shown = known.notna().to_numpy()
        paper_line(ax, x[shown], known[shown], "paper B")


def rung_matrices(ladder, tau: float):
    """Paper B Figs. 20-29 for a ladder (`cod.claims.ladder.Ladder`): per rung (a column), the causal
    matrix c(s, l) and the permutation matrix P(i, j) averaged over seeds, each row on one
    colour scale, and each layer's relative loss rise under its affine replacement (mean over
    seeds, min..max band; dashed: tau). Returns the figure."""
    analyses = {label: ladder.analyses_of(label) for label in ladder.labels}
    labels = [label for label in ladder.labels if analyses[label]]
    fig, axes = plt.subplots(3, len(labels), figsize=(3.4 * len(labels) + 1, 9.5), squeeze=False)
    for row, name in enumerate(["causal", "permutation"]):
        with warnings.catch_warnings():  # cells outside a matrix's triangle are NaN in every seed, and stay so
            warnings.simplefilter("ignore", RuntimeWarning)
            means = [np.nanmean([getattr(a, name).matrix for a in analyses[label]], axis=0) for label in labels]
        heatmaps(fig, axes[row], means, f"{name} score", cmap="viridis")
        for col, label in enumerate(labels):
            n = len(means[col])
            axes[row, col].images[0].set_extent((0.5, n + 0.5, n + 0.5, 0.5))
            axes[row, col].set_title(f"{name}, {label}")
            axes[row, col].set_xlabel("later block l" if name == "causal" else "block j")
            axes[row, col].xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        axes[row, 0].set_ylabel("skipped block s" if name == "causal" else "block i")
    for col, label in enumerate(labels):
        rises = pd.DataFrame({i: a.usefulness.relative_increase for i, a in enumerate(analyses[label])})
        seed_band(axes[2, col], rises.index + 1, rises, "C0", "ours, mean over seeds", marker="o", markersize=3)
        tau_line(axes[2, col], tau)
        axes[2, col].set_yscale("symlog", linthresh=1e-3)
        axes[2, col].set_xlabel("layer")
        axes[2, col].xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    axes[2, 0].set_ylabel("relative loss rise, affine block")
    fig.legend(*axes[2, 0].get_legend_handles_labels(), loc="outside lower center", ncol=2)
    return fig


def ladder_scores(ladder, paper: pd.DataFrame, matched: float, rotation: int = 0):
    """A ladder's perplexity, causal and permutation scores and usefulness at the matched tau
    (`Ladder.match_tau`), ours per rung with the paper's (`paper`, indexed by rung, its
    `usefulness` at tau = 0.1) on the same axes: perplexities as ratios to the first rung (ours
    and the paper's are of models far apart in training), the scores as they are. Returns the figure."""
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
    titles = {"val_ppl": "validation perplexity, relative to the first rung",
              "causal": "causal score", "permutation": "permutation score",
              "usefulness_matched": f"useful share at matched tau {matched:.2g} (paper: at 0.1)"}
    for ax, (name, title) in zip(axes, titles.items()):
        values = ladder.by_seed(name)
        label = f"perplexity / {values.index[0]}'s (below 1: better)" if name == "val_ppl" else QUANTITIES[name]
        rung_scores(ax, values, paper["usefulness" if name == "usefulness_matched" else name], label=label,
                    relative=name == "val_ppl")
        ax.tick_params(axis="x", rotation=rotation)
        ax.set_title(title)
        ax.yaxis.label.set_size(8)
    axes[0].legend(fontsize=7)
    return fig


def usefulness_curves(curve: pd.DataFrame, tau: float, matched: float | None = None):
    """Useful share E / L against tau (rows of `curve`) for each column, with the paper's tau
    (dotted) and a matched tau (dash-dotted) marked. Returns the figure."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for color, column in zip(plt.cm.viridis(np.linspace(0, 0.9, curve.shape[1])), curve.columns):
        ax.plot(curve.index, curve[column], "o-", color=color, markersize=3, label=column)
    tau_line(ax, tau, vertical=True, color="k", linestyle=":")
    if matched is not None:
        ax.axvline(matched, color="C3", linestyle="-.", linewidth=1, label=f"matched tau = {matched:.2g}")
    ax.set(xscale="log", xlabel="tau", ylabel="useful share E / L", ylim=(-0.03, 1.03))
    ax.legend(fontsize=7, loc="upper right")
    return fig


def ladder_sensitivity(ladder, taus, tau: float, matched: float | None, figures_dir: str | Path,
                       matrices: str) -> pd.DataFrame:
    """A ladder's (`cod.claims.ladder.Ladder`) useful share at each of `taus`, written to
    figures_dir/usefulness_vs_tau.csv and drawn (`usefulness_curves`), then its score matrices
    (`rung_matrices`) shown as figures_dir/MATRICES.png. Returns the share per tau."""
    curve = ladder.usefulness_curve(taus)
    curve.to_csv(Path(figures_dir) / "usefulness_vs_tau.csv")
    show(usefulness_curves(curve, tau, matched), figures_dir, "usefulness_vs_tau")
    show(rung_matrices(ladder, tau), figures_dir, matrices)
    return curve


def ladder_variance(ladder, title: str):
    """Two panels of a ladder (`cod.claims.ladder.Ladder`): the last layer's output variance during
    training and every layer's at the end, mean over seeds with min..max bands, on log axes."""
    colors = dict(zip(ladder.labels, plt.cm.viridis(np.linspace(0, 0.9, len(ladder.labels)))))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for label, curve in ladder.last_variance_during_training().items():
        seed_band(axes[0], curve.index, curve, colors[label], label)
        logged = ladder.stats[ladder.stats["rung"] == label]
        depth_profile(axes[1], logged, logged["step"].max(), colors[label], label)
    axes[0].set_xlabel("training step")
    axes[0].set_title(title)
    axes[1].set_title("every layer at the end of training")
    for ax in axes:
        ax.set_yscale("log")
        ax.set_ylabel(f"output variance {SIGMA2}")
    axes[1].legend(fontsize=7)
    return fig
