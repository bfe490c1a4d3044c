"""The tracked tree stays small enough to travel: a lent GPU takes the working tree with each
command (64 MiB at most, carried data included), so what git tracks is held to 40 MiB."""

import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 40 * 2**20  # bytes


def tracked_sizes() -> dict[str, int]:
    """Bytes of every file `git ls-files` lists that exists in the working tree."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    sizes = {}
    for name in names.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file():
            sizes[name] = path.stat().st_size
    return sizes


def biggest_folders(sizes: dict[str, int], depth: int = 3, top: int = 12) -> list[tuple[str, int]]:
    folders = Counter()
    for name, size in sizes.items():
        folders["/".join(Path(name).parts[:-1][:depth]) or "."] += size
    return folders.most_common(top)


def test_tracked_tree_is_at_most_40_mib():
    sizes = tracked_sizes()
    total = sum(sizes.values())
    print(f"\ntracked: {len(sizes)} files, {total / 2**20:.1f} MiB (limit {LIMIT / 2**20:.0f} MiB)")
    for folder, size in biggest_folders(sizes):
        print(f"  {size / 2**20:6.1f} MiB  {folder}")
    assert total <= LIMIT, f"the tracked tree holds {total / 2**20:.1f} MiB, above {LIMIT / 2**20:.0f} MiB"


def test_committed_histories_are_written_in_float32_digits():
    """Every tracked history.jsonl is as cod.records.results.history_line writes it (the per-layer statistics
    in float32's shortest digits): a third of the runs' bytes, which a float64 writer would spend."""
    from cod.records.results import history_line, read_history

    histories = [name for name in tracked_sizes() if name.endswith("/history.jsonl")]
    assert histories
    loose = [name for name in histories
             if "".join(history_line(row) for row in read_history(ROOT / name)) != (ROOT / name).read_text()]
    assert not loose, f"{len(loose)} histories in float64 digits, e.g. {loose[:3]}: cod.records.results.compact_history"
