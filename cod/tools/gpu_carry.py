"""What travels to a lent GPU and what comes back (`cod.tools.gpu_lease` uses it; nothing here needs torch).

The device tool sends the working tree (tracked files, untracked ones git does not ignore, and the
ignored paths a call names in `carry`), at most `TREE_LIMIT` in all, and brings back only the
folder `$OUT`: at most `EXPORT_FILES` files of `EXPORT_FILE_LIMIT` each, named in letters, digits,
'.', '_' and '-'. The device copy of the tree is thrown away afterwards. So:

- the tokens travel packed: `pack_tokens` writes a token folder (data/tokens/bpe2048, 23 MiB) as
  one xz archive under `CARRY` (.cache/gpu_carry, ignored by git; 7.7 MiB), and `unpack_tokens`
  restores it on the device;
- `tree_bytes` adds up what a call sends, so that a dry run can refuse a call over the limit;
- `export` mirrors a lease's results folder into `$OUT` after every item, flat: each results file
  as it is, each subfolder (a mode's runs) packed into one `<subfolder>.files.json`;
  `import_results` unpacks what came back under runs/gpu/<the lease's folder>/, as the lease wrote it.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

from cod import ROOT

CARRY = Path(".cache/gpu_carry")  # relative to the repository: the path a call names in `carry`
TREE_LIMIT = 64 * 2**20  # bytes of working tree a call may send, carried paths included
EXPORT_FILES = 8  # files that come back from $OUT
EXPORT_FILE_LIMIT = 16 * 2**20  # bytes of each
PACKED = ".files.json"  # suffix of a subfolder packed into one file
NAME = re.compile(r"[A-Za-z0-9._-]+")  # what a file coming back from $OUT may be called
RESULTS = ROOT / "runs" / "gpu"


class Refusal(Exception):
    """A one-line reason why a call cannot go ahead (or its results cannot be imported)."""


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# ----------------------------------------------------------------------------- tokens


def archive_of(tokens: Path, carry: Path) -> Path:
    """Where the packed copy of the token folder `tokens` travels."""
    return carry / f"{tokens.name}.tar.xz"


def is_packed(tokens: Path, carry: Path) -> bool:
    """True when the archive exists and is newer than every file of `tokens`."""
    archive = archive_of(tokens, carry)
    return archive.exists() and all(f.stat().st_mtime <= archive.stat().st_mtime for f in tokens.iterdir())


def pack_tokens(tokens: Path, carry: Path) -> Path:
    """Write `tokens` as `<carry>/<name>.tar.xz` (written aside, then renamed: never half an archive)."""
    archive = archive_of(tokens, carry)
    carry.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".partial")
    with tarfile.open(partial, "w:xz", preset=6) as tar:
        for file in sorted(tokens.iterdir()):
            tar.add(file, arcname=f"{tokens.name}/{file.name}")
    partial.replace(archive)
    return archive


def unpack_tokens(tokens: Path, carry: Path) -> None:
    """Restore the token folder `tokens` from its archive (its members must all lie inside it);
    through the `tar` command where this Python lacks lzma."""
    archive = archive_of(tokens, carry)
    tokens.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, "r:xz") as tar:
            outside = [n for n in tar.getnames() if Path(n).parts[:1] != (tokens.name,) or ".." in Path(n).parts]
            if outside:
                raise Refusal(f"archive {archive} holds {outside[0]!r}, outside {tokens.name}/")
            tar.extractall(tokens.parent, filter="data")
    except tarfile.CompressionError:
        subprocess.run(["tar", "-xJf", str(archive), "-C", str(tokens.parent), tokens.name], check=True)


def ready_tokens(tokens: Path, carry: Path) -> str:
    """Make sure `tokens/train.bin` is there, unpacking the carried archive if need be; say how.
    Refuses, in one line, when neither the folder nor its archive is there."""
    if (tokens / "train.bin").exists():
        return f"tokens in {tokens}"
    if archive_of(tokens, carry).exists():
        unpack_tokens(tokens, carry)
        return f"tokens unpacked from {archive_of(tokens, carry)}"
    from cod.data.prepare import prepare_command_of  # lazy: the tokenizers library, for this message only

    raise Refusal(f"--tokens {tokens}: no train.bin there and no {archive_of(tokens, carry)}; make the tokens "
                  f"with `{prepare_command_of(tokens)}` (`dvc repro prepare` makes params.yaml's), then "
                  "`python -m cod.tools.gpu_lease lease --dry` packs them")


# ----------------------------------------------------------------------------- the tree that travels


def _git_files(root: Path, *options: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", *options], cwd=root, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name]


def _bytes(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
        total += sum(f.stat().st_size for f in files if not f.is_symlink())
    return total


def tree_bytes(root: Path, carried: list[Path]) -> dict[str, int]:
    """Bytes a call from `root` sends: tracked files, untracked ones git does not ignore, shared/,
    and the `carried` paths (relative to `root`)."""
    tracked = _bytes([root / n for n in _git_files(root)])
    untracked = _bytes([root / n for n in _git_files(root, "--others", "--exclude-standard")])
    shared = _bytes([root / "shared"]) if (root / "shared").is_dir() else 0
    carry = _bytes([root / c for c in carried])
    return {"tracked": tracked, "untracked": untracked, "shared": shared, "carried": carry,
            "total": tracked + untracked + shared + carry}


def check_tree(root: Path, carried: list[Path]) -> str:
    """One line on what a call sends; refuses, in one line, when it is over `TREE_LIMIT`."""
    size = tree_bytes(root, carried)
    names = [str(c.relative_to(root)) if c.is_relative_to(root) else str(c) for c in carried]
    line = (f"tree {_mib(size['tracked'])} tracked + {_mib(size['untracked'] + size['shared'])} untracked + "
            f"{_mib(size['carried'])} carried ({', '.join(names) or 'nothing'}) = {_mib(size['total'])} "
            f"of {_mib(TREE_LIMIT)}")
    if size["total"] > TREE_LIMIT:
        raise Refusal(f"{line}: over the limit; carry less or ignore what need not travel")
    return line


# ----------------------------------------------------------------------------- export and import


def _write(path: Path, text: str) -> None:
    """Write aside, then rename: a kill never leaves half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def exported(folder: Path) -> dict[str, str]:
    """The flat files that stand for `folder`: {name: text}, each results file as it is, each
    subfolder packed as {"folder": its name, "files": {its relative paths: their text}}."""
    flat = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix == ".json":
            flat[path.name] = path.read_text()
        elif path.is_dir():
            files = {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob("*")) if p.is_file()}
            flat[path.name + PACKED] = json.dumps({"folder": path.name, "files": files})
    return flat


def export(folder: Path, out: Path) -> None:
    """Mirror `folder` (a lease's results) into `out`, flat, within what comes back from $OUT."""
    flat = exported(folder)
    names = set(flat) | {p.name for p in out.iterdir() if p.is_file() and not p.name.endswith(".partial")}
    if len(names) > EXPORT_FILES:
        raise Refusal(f"export to {out}: {len(names)} files, more than the {EXPORT_FILES} that come back")
    for name, text in flat.items():
        if not NAME.fullmatch(name) or len(text.encode()) > EXPORT_FILE_LIMIT:
            raise Refusal(f"export to {out}: {name} cannot come back (a name of letters, digits, '.', '_', '-' "
                          f"and at most {_mib(EXPORT_FILE_LIMIT)})")
        _write(out / name, text)


def _results(source: Path) -> dict[str, dict]:
    """The results files of an export: {file name: contents}, each naming its lease's folder."""
    found = {}
    for path in sorted(source.glob("*.json")):
        if path.name.endswith(PACKED):
            continue
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not NAME.fullmatch(str(data.get("folder", ""))):
            raise Refusal(f"--import {source}: {path.name} is not a lease's results file (no 'folder')")
        found[path.name] = data
    if not found or len({d["folder"] for d in found.values()}) != 1:
        raise Refusal(f"--import {source}: expected the results files of one lease, found {sorted(found) or 'none'}")
    return found


def _target(into: Path, name: str, results: dict[str, dict]) -> Path:
    """runs/gpu/<name>, or, when that holds another call's results, the first free <name>_<n>
    (a lease's later calls, as the report pools them); the same call imported again overwrites itself."""
    for n in range(1, 100):
        target = into / (name if n == 1 else f"{name}_{n}")
        same = all(json.loads((target / f).read_text()).get("started") == d.get("started")
                   for f, d in results.items() if (target / f).exists())
        if not target.exists() or same:
            return target
    raise Refusal(f"--import: {into}/{name}_<n> are all taken")


def import_results(source: Path, into: Path = RESULTS, dry: bool = False) -> Path:
    """Put what a lease exported (`source`: the files that came back from $OUT) under `into`, in the
    folder the lease wrote on the device; return that folder. A dry run's export is refused unless `dry`."""
    results = _results(source)
    if not dry and any(d.get("dry") for d in results.values()):
        raise Refusal(f"--import {source}: a --dry run's results, not a lent GPU's; they stay out of {into}")
    target = _target(into, next(iter(results.values()))["folder"], results)
    target.mkdir(parents=True, exist_ok=True)
    for name in results:
        (target / name).write_text((source / name).read_text())
    for pack in sorted(source.glob("*" + PACKED)):
        data = json.loads(pack.read_text())
        for relative, text in data["files"].items():
            if ".." in Path(relative).parts or Path(relative).is_absolute() or not NAME.fullmatch(data["folder"]):
                raise Refusal(f"--import {source}: {pack.name} names {relative!r}, outside its folder")
            path = target / data["folder"] / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return target
