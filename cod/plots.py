"""The notebooks' shared figure style and plot helpers: depth colours, seed spreads, heatmaps
on one colour scale, and the paper's values on their own axis, drawn the same way everywhere.

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


def paper_axis(ax, x, values, label: str, color: str = "0.45", **plot_kwargs):
    """The paper's values against the same x, on a twin y axis of their own (their units and
    scale), drawn grey and dashed unless `plot_kwargs` say otherwise; returns the twin axis."""
    twin = ax.twinx()
    style = {"linestyle": "--", "marker": "s", "markersize": 3} | plot_kwargs
    twin.plot(x, values, color=color, label=label, **style)
    twin.set_ylabel(label, color=color)
    twin.tick_params(axis="y", colors=color)
    twin.spines["right"].set_visible(True)
    return twin


def paper_marks(axes, x: float, values: list[float], label: str, ylabel: str) -> list:
    """One value of the paper per axis of `axes` (their panels' end point, say) as a labelled
    marker at `x` with the value written beside it, on twin y axes of their own that share one
    linear scale from 0 (tick labels and `ylabel` on the last); returns the twins."""
    top = 1.15 * max(values)
    twins = []
    for ax, value in zip(axes, values):
        twin = paper_axis(ax, [x], [value], label, linestyle="none", marker="D", markersize=7)
        twin.annotate(f"{value:g}", (x, value), xytext=(-6, 0), textcoords="offset points", ha="right",
                      va="center", fontsize=8, color="0.45")
        twin.set_ylim(0, top)
        twin.set_ylabel("")
        twin.tick_params(axis="y", labelright=False)
        twins.append(twin)
    twins[-1].tick_params(axis="y", labelright=True)
    twins[-1].set_ylabel(ylabel, color="0.45")
    return twins


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
    ax.set_ylabel("training loss")


def rung_scores(ax, values: pd.DataFrame, paper: pd.Series | None = None, label: str = "",
                color: str = "C0") -> None:
    """A ladder's value per rung (rows of `values`, in order; seeds as columns): mean over seeds
    with the min..max band at rung positions 0..n-1 named by the rows, and the paper's value of
    each rung (`paper`, indexed like `values`; missing rungs skipped) on a twin axis of its own."""
    x = np.arange(len(values))
    seed_band(ax, x, values, color, f"ours{f' ({label})' if label else ''}", marker="o", markersize=4)
    ax.set_xticks(x, list(values.index))
    ax.set_ylabel(label, color=color)
    if paper is not None:
        known = paper.reindex(values.index)
        shown = known.notna().to_numpy()
        paper_axis(ax, x[shown], known[shown], f"{paper.name or label}, paper B")


def rung_matrices(ladder, tau: float):
    """Paper B Figs. 20-29 for a ladder (`cod.ladder.Ladder`): per rung (a column), the causal
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
    `usefulness` at tau = 0.1) on twin axes. Returns the figure."""
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.6))
    for ax, name in zip(axes, ["val_ppl", "causal", "permutation", "usefulness_matched"]):
        rung_scores(ax, ladder.by_seed(name), paper["usefulness" if name == "usefulness_matched" else name],
                    label=name)
        ax.tick_params(axis="x", rotation=rotation)
        ax.set_title(name if name != "usefulness_matched" else f"usefulness at matched tau {matched:.2g} (paper: 0.1)")
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


def ladder_variance(ladder, title: str):
    """Two panels of a ladder (`cod.ladder.Ladder`): the last layer's output variance during
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
