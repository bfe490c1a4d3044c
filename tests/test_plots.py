"""The shared plot helpers: reference lines and the paper's values carry legend labels."""

import io

import matplotlib.pyplot as plt
import PIL.Image

from cod import plots


def test_tau_line_is_labelled_as_paper_bs_threshold():
    fig, ax = plt.subplots()
    line = plots.tau_line(ax, 0.1, vertical=True)
    assert line.get_label() == "tau = 0.1, paper B's usefulness threshold"
    assert ax.get_legend_handles_labels()[1] == [line.get_label()]
    plt.close(fig)


def test_paper_marks_share_one_scale_and_one_label():
    fig, axes = plt.subplots(1, 3, sharey=True)
    twins = plots.paper_marks(axes, 420, [175, 175, 25], "paper A, 130M, 10K steps", "paper's variance")
    assert {twin.get_ylim() for twin in twins} == {(0.0, 1.15 * 175)}
    assert [twin.get_legend_handles_labels()[1] for twin in twins] == [["paper A, 130M, 10K steps"]] * 3
    assert twins[-1].get_ylabel() == "paper's variance" and twins[0].get_ylabel() == ""
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
