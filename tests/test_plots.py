"""The shared plot helpers: reference lines and the paper's values carry legend labels."""

import io

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import PIL.Image

from cod import plots


def test_tau_line_is_labelled_as_paper_bs_threshold():
    fig, ax = plt.subplots()
    line = plots.tau_line(ax, 0.1, vertical=True)
    assert line.get_label() == "tau = 0.1, paper B's usefulness threshold"
    assert ax.get_legend_handles_labels()[1] == [line.get_label()]
    plt.close(fig)


def test_paper_marks_go_on_the_axis_ours_is_drawn_on():
    """The paper's value and ours share one scale: no twin axis, the axis spans both."""
    fig, axes = plt.subplots(1, 3, sharey=True)
    for ax in axes:
        ax.plot([0, 420], [1.0, 16.0])
    marks = plots.paper_marks(axes, 420, [175, 175, 25], "paper A, 130M, 10K steps")
    assert len(fig.axes) == 3 and [mark.axes for mark in marks] == list(axes)
    assert axes[0].get_ylim()[1] >= 175 and axes[0].get_ylim()[0] <= 1.0
    assert [ax.get_legend_handles_labels()[1] for ax in axes] == [["paper A, 130M, 10K steps"]] * 3
    plt.close(fig)


def test_a_ladders_perplexity_and_the_papers_are_ratios_to_their_first_rung():
    fig, ax = plt.subplots()
    ours = pd.DataFrame({0: [200.0, 190.0, 180.0], 1: [210.0, 199.5, 189.0]}, index=["L=12", "L=16", "L=24"])
    paper = pd.Series({"L=12": 14.0, "L=16": 13.3, "L=24": 12.6})
    plots.rung_scores(ax, ours, paper, label="perplexity / L=12's", relative=True)
    mean, paper_line = ax.lines[0].get_ydata(), ax.lines[-1].get_ydata()
    assert np.allclose(mean, [1.0, 0.95, 0.9]) and np.allclose(paper_line, [1.0, 0.95, 0.9])
    assert len(fig.axes) == 1 and ax.get_ylabel() == "perplexity / L=12's"
    plt.close(fig)


def test_labels_of_nearby_points_do_not_overlap():
    fig, ax = plt.subplots()
    ax.plot([1, 20, 20.5], [0.0, -0.07, -0.071], "s")
    labels = plots.label_points(ax, [(1, 0.0, "paper A 130M"), (20, -0.07, "paper A 250M (24 layers)"),
                                     (20.5, -0.071, "paper A 350M (24 layers)")])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [label.get_window_extent(renderer) for label in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    plt.close(fig)


def test_halves_line_splits_after_block_l_over_2_and_is_labelled():
    fig, ax = plt.subplots()
    line = plots.halves_line(ax, 12)
    assert line.get_xdata()[0] == 6.5
    assert ax.get_legend_handles_labels()[1] == ["shallow | deep halves"]
    plt.close(fig)


def test_show_displays_the_saved_file_and_closes_the_figure(tmp_path, monkeypatch):
    """A figure is drawn once: the notebook shows the PNG written to figures/ (in fewer colours), not a
    second rendering."""
    shown = []
    monkeypatch.setattr(plots, "display", shown.append)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert plots.show(fig, tmp_path, "line") is None  # nothing for a notebook cell to print
    saved, displayed = (PIL.Image.open(io.BytesIO(data))
                        for data in ((tmp_path / "line.png").read_bytes(), shown[0].data))
    assert displayed.size == saved.size and displayed.mode == "P" and len(displayed.getcolors()) <= plots.SHOWN_COLOURS
    assert not plt.fignum_exists(fig.number)
