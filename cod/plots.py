"""The notebooks' shared figure style and plot helpers: depth colours, seed spreads, heatmaps
on one colour scale, and the paper's values on their own axis, drawn the same way everywhere.

Importing this module sets the style once (`STYLE`): mathtext for formulas in labels (write
`SIGMA2`, not "sigma^2"), constrained layout so labels do not collide, and figures saved at
a fixed resolution with tight bounds.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

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
    """Save `fig` as figures_dir/name.png (in the module's style) and return the path."""
    path = Path(figures_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


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
    scale), drawn grey and dashed; returns the twin axis."""
    twin = ax.twinx()
    twin.plot(x, values, color=color, linestyle="--", marker="s", markersize=3, label=label, **plot_kwargs)
    twin.set_ylabel(label, color=color)
    twin.tick_params(axis="y", colors=color)
    twin.spines["right"].set_visible(True)
    return twin


def loss_curves(ax, history: pd.DataFrame, variants: dict[str, str], smooth: int = 1, x: str = "tokens") -> None:
    """Training loss against `x` (tokens or step) for {label: variant}: mean over seeds (each
    seed's curve a running mean over `smooth` logged steps first), min..max band; a diverged
    seed's curve stops where its history does. Colours follow the order of `variants`."""
    for color, (label, variant) in zip(plt.cm.tab10.colors, variants.items()):
        rows = history[history["variant"] == variant]
        if rows.empty:
            continue
        table = rows.pivot_table(index=x, columns="seed", values="loss")
        table = table.rolling(smooth, min_periods=1).mean()
        seed_band(ax, table.index, table, color, label=label)
    ax.set_xlabel("training tokens" if x == "tokens" else "training step")
    ax.set_ylabel("training loss")
