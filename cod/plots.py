"""Plot helpers shared by the notebooks: depth colours and seed spreads drawn the same way."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


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
    """Save `fig` as figures_dir/name.png and return the path."""
    path = Path(figures_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def loss_curves(ax, history: pd.DataFrame, variants: dict[str, str], smooth: int = 1) -> None:
    """Training loss against tokens for {label: variant}: mean over seeds (each seed's curve a
    running mean over `smooth` logged steps first), min..max band; a diverged seed's curve
    stops where its history does. Colours follow the order of `variants`."""
    for color, (label, variant) in zip(plt.cm.tab10.colors, variants.items()):
        rows = history[history["variant"] == variant]
        if rows.empty:
            continue
        table = rows.pivot_table(index="tokens", columns="seed", values="loss")
        table = table.rolling(smooth, min_periods=1).mean()
        seed_band(ax, table.index, table, color, label=label)
    ax.set_xlabel("training tokens")
    ax.set_ylabel("training loss")
