"""Build `data/raw` from the installed packages and check it against the pin in `data.dvc`.

    python -m cod.data.snapshot            # build if absent or changed, verify, cache
    python -m cod.data.snapshot --update   # rebuild and re-pin deliberately

`data.dvc` tracks `data/raw` and keeps, under `meta`, the MD5 of each source's JSONL and
the package versions it came from, so a mismatch names the source that changed. When the
rebuilt snapshot matches, `dvc commit` puts it in the DVC cache and `dvc repro` is content.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from cod import load_yaml
from cod.data import corpus

RAW = "data/raw"  # relative to the directory of the .dvc file


def file_md5s(directory: Path) -> dict[str, str]:
    """MD5 of every file in a directory, by name."""
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def dir_md5(files: dict[str, str]) -> str:
    """DVC 3's hash of a flat directory, from its files' MD5s (dvc_data's `Tree.digest`)."""
    listing = [{"md5": md5, "relpath": name} for name, md5 in sorted(files.items())]
    return hashlib.md5(json.dumps(listing, sort_keys=True).encode()).hexdigest() + ".dir"


def read_pin(dvc_file: Path) -> tuple[str, dict]:
    """The pinned directory hash of `data/raw` ("" if none) and the .dvc file's `meta`."""
    doc = load_yaml(dvc_file) if dvc_file.is_file() else None
    doc = doc or {}
    outs = doc.get("outs") or [{}]
    return str(outs[0].get("md5", "")), doc.get("meta") or {}


def write_pin(dvc_file: Path, files: dict[str, str]) -> None:
    """Write a .dvc file tracking `data/raw` with `meta`; `dvc commit` fills in the hash."""
    packages = {s.name: f"{s.distribution}=={corpus.installed_version(s)}" for s in corpus.SOURCES}
    doc = {"meta": {"files": files, "packages": packages}, "outs": [{"path": RAW}]}
    dvc_file.write_text(yaml.safe_dump(doc, sort_keys=False))


def dvc(root: Path, *args: str) -> str:
    """Run a dvc command in `root` and return its output; raise with its message on failure."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"dvc {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def is_cached(root: Path, digest: str) -> bool:
    """Whether the default DVC cache holds the object with this hash."""
    return (root / ".dvc/cache/files/md5" / digest[:2] / digest[2:]).is_file()


def describe_changes(meta: dict, files: dict[str, str]) -> str:
    """One line per snapshot file whose MD5 differs from the pin, naming its source."""
    sources = {f"{s.name}.jsonl": s for s in corpus.SOURCES}
    pinned_files = meta.get("files", {})
    lines = []
    for name in sorted(set(files) | set(pinned_files)):
        if files.get(name) == pinned_files.get(name):
            continue
        source = sources.get(name)
        if source is None:
            lines.append(f"  {name}: not a file of the current source list")
        else:
            pinned = meta.get("packages", {}).get(source.name, "?")
            installed = f"{source.distribution}=={corpus.installed_version(source)}"
            why = f"pinned from {pinned}, installed {installed}" if pinned != installed else (
                f"same package {installed}: its extraction in cod/data/corpus.py changed")
            lines.append(f"  source {source.name!r} ({name}): {why}")
    return "\n".join(lines) or "  every file matches `meta`, but the pinned directory hash does not"


def snapshot(dvc_file: Path, update: bool = False) -> int:
    """Make `data/raw` match the pin (or re-pin with `update`); return a process exit code."""
    root, raw = dvc_file.parent, dvc_file.parent / RAW
    pinned, meta = read_pin(dvc_file)
    if pinned and not update and raw.is_dir() and dir_md5(file_md5s(raw)) == pinned and is_cached(root, pinned):
        print(f"{raw} matches {dvc_file.name}: nothing to do")
        return 0
    fresh = raw.with_name(raw.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    start = time.perf_counter()
    stats = corpus.build(fresh)
    files = file_md5s(fresh)
    for name, splits in stats.items():
        print(f"{name:12s}", "  ".join(f"{k} {v['documents']} docs {v['bytes'] / 1e6:.2f} MB" for k, v in splits.items()))
    print(f"built in {time.perf_counter() - start:.1f} s")
    if pinned and not update and dir_md5(files) != pinned:
        print(
            f"error: the snapshot rebuilt from the installed packages differs from {dvc_file.name}:\n"
            f"{describe_changes(meta, files)}\n"
            f"The rebuilt snapshot is in {fresh}. Install the pinned packages, or re-pin "
            f"deliberately with `python -m cod.data.snapshot --update`.",
            file=sys.stderr,
        )
        return 1
    shutil.rmtree(raw, ignore_errors=True)
    fresh.rename(raw)
    if update or not pinned:
        write_pin(dvc_file, files)
        print(f"pinned {raw} in {dvc_file.name}")
    dvc(root, "commit", "--force", "--quiet", dvc_file.name)
    print(f"{raw} matches {dvc_file.name} and is in the DVC cache")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.data.snapshot", description=__doc__.split("\n")[0])
    parser.add_argument("--dvc-file", type=Path, default=Path("data.dvc"), help="the .dvc file pinning data/raw")
    parser.add_argument("--update", action="store_true", help="rebuild and re-pin the snapshot deliberately")
    args = parser.parse_args(argv)
    try:
        return snapshot(args.dvc_file, args.update)
    except (corpus.SourceError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
