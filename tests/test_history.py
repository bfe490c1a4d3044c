"""history.jsonl's digits: per-layer statistics are float32 and are written with float32's
shortest digits, then read back as exactly the values the trainer logged."""

import json

import numpy as np

from cod.records.results import compact_history, history_line, read_history


def float32s(*values: float) -> list[float]:
    return [float(np.float32(v)) for v in values]


def test_float32_statistics_take_their_shortest_digits_and_read_back_exactly(tmp_path):
    var = float32s(0.38936567306518555, 6.050716547179036e-05, 1.0)
    load = [float32s(0.25, 1 / 3), float32s(0.1, 0.7)]  # moe_load: (layers, experts)
    row = {"step": 10, "loss": 5.123456789012345, "lr": 1e-3, "resid_var": var, "moe_load": load}
    line = history_line(row)
    assert '"resid_var": [0.38936567, 6.0507165e-05, 1.0]' in line
    assert '"loss": 5.123456789012345' in line and '"lr": 0.001' in line  # scalars keep float64's digits
    assert len(line) < len(json.dumps(row))
    (tmp_path / "history.jsonl").write_text(line)
    assert read_history(tmp_path / "history.jsonl") == [row]  # equal to the last bit


def test_a_list_holding_a_number_float32_cannot_hold_is_written_as_it_is():
    row = {"step": 0, "resid_var": [0.1, float(np.float32(0.5))], "counts": [3, None]}
    assert history_line(row) == json.dumps(row) + "\n"


def test_compacting_an_old_history_changes_no_value_a_reader_sees(tmp_path):
    path = tmp_path / "history.jsonl"
    rows = [{"step": s, "resid_var": float32s(0.3 * s + 0.01, 1 / (s + 3))} for s in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # float64's digits, as runs were written before
    before = path.stat().st_size
    compact_history(path)
    assert path.stat().st_size < before and read_history(path) == rows
