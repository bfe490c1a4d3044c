"""Preparation at scale: worker processes, a token target, resuming, and FineWeb-Edu's absence."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cod.config import DataConfig
from cod.data import fineweb, prepare, tokenizer

WORDS = "depth layer norm variance residual stream gradient token model scaling naïve café “quoted” 漢字".split()
OUTPUTS = {"meta.json", "tokenizer.json", "train.bin", "val.bin", "val_bbc.bin"}
N_DOCS = 120
BATCH = 7  # documents per batch in these tests: many batches, some of them part train, part val


class Interrupted(Exception):
    """Stands for a kill in the middle of a preparation."""


@pytest.fixture
def corpus_files(tmp_path) -> tuple[Path, Path]:
    """FineWeb-like documents in a jsonl file, and a raw snapshot holding only BBC articles (val_bbc)."""
    rng = np.random.default_rng(0)
    docs = tmp_path / "fineweb.jsonl"
    rows = [{"id": f"<urn:uuid:{i:04d}>", "text": f"Page {i}. " + " ".join(rng.choice(WORDS, rng.integers(5, 80))),
             "score": 3.1} for i in range(N_DOCS)]
    docs.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    raw = tmp_path / "raw"
    raw.mkdir()
    with open(raw / "bbc.jsonl", "w", encoding="utf-8") as f:
        for i in range(15):
            text = f"BBC article {i}: " + " ".join(rng.choice(WORDS, 20))
            f.write(json.dumps({"id": f"bbc/x/{i}", "source": "bbc", "split": "val_bbc", "text": text}) + "\n")
    return docs, raw


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    monkeypatch.setattr(prepare, "BATCH_DOCS", BATCH)


def argv(corpus_files, out: Path, *extra: str, kind: str = "bpe") -> list[str]:
    docs, raw = corpus_files
    return ["--tokenizer", kind, "--vocab-size", "300", "--source", "fineweb_edu", "--files", str(docs),
            "--raw", str(raw), "--val-fraction", "0.1", "--out", str(out), *extra]


def outputs(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in out.iterdir()}


def interrupt_after(monkeypatch, writes: int) -> None:
    """Make the parent fail at its `writes`-th document write (after the earlier ones are in the files)."""
    original = prepare.SplitWriter.write
    count = iter(range(writes))

    def write(self, *args):
        if next(count, None) is None:
            raise Interrupted
        original(self, *args)

    monkeypatch.setattr(prepare.SplitWriter, "write", write)


def test_workers_write_the_bytes_of_one_process(corpus_files, tmp_path):
    assert prepare.main(argv(corpus_files, tmp_path / "one", "--workers", "1")) == 0
    assert prepare.main(argv(corpus_files, tmp_path / "two", "--workers", "2")) == 0
    one = outputs(tmp_path / "one")
    assert set(one) == OUTPUTS  # no progress.json left behind
    assert outputs(tmp_path / "two") == one
    meta = json.loads(one["meta.json"])
    assert meta["splits"]["train"]["documents"] + meta["splits"]["val"]["documents"] == N_DOCS
    assert meta["splits"]["val"]["documents"] >= 3 and meta["splits"]["val_bbc"]["documents"] == 15
    tok = tokenizer.Tokenizer.from_file(str(tmp_path / "one" / "tokenizer.json"))
    val = np.frombuffer(one["val.bin"], dtype=np.uint16).tolist()
    rows = [json.loads(line) for line in corpus_files[0].read_text(encoding="utf-8").splitlines()]
    expected = [r["text"] for r in rows if prepare.corpus.id_fraction(r["id"]) < 0.1]
    assert tok.decode(val, skip_special_tokens=False).split(tokenizer.EOT) == expected + [""]  # in document order


@pytest.mark.parametrize("writes, committed", [(30, 28), (N_DOCS + 4, N_DOCS)], ids=["in the source", "in the bbc"])
def test_an_interrupted_preparation_resumes_to_the_same_bytes(
    corpus_files, tmp_path, monkeypatch, capsys, writes, committed
):
    assert prepare.main(argv(corpus_files, tmp_path / "whole", "--workers", "1")) == 0
    out = tmp_path / "resumed"
    with monkeypatch.context() as patch:
        interrupt_after(patch, writes)
        with pytest.raises(Interrupted):
            prepare.main(argv(corpus_files, out, "--workers", "1"))
    progress = json.loads((out / prepare.PROGRESS).read_text())
    assert not (out / "meta.json").exists()
    assert sum(c["documents"] for c in progress["splits"].values()) == committed
    recorded = sum(c["tokens"] for c in progress["splits"].values())
    assert sum(path.stat().st_size for path in out.glob("*.bin")) > 2 * recorded  # the files ran ahead: cut back
    with open(out / "train.bin", "ab") as f:
        f.write(b"\xff" * 100_000)  # whatever lies past the record, even longer than the rest of the work
    capsys.readouterr()
    assert prepare.main(argv(corpus_files, out, "--workers", "2")) == 0
    assert f"resuming {out}: {committed} documents already encoded" in capsys.readouterr().out
    assert outputs(out) == outputs(tmp_path / "whole")


def test_a_killed_preparation_resumes_to_the_same_bytes(corpus_files, tmp_path):
    """A real SIGKILL: nothing is flushed or closed, and pool processes die with their parent."""
    assert prepare.main(argv(corpus_files, tmp_path / "whole", "--workers", "1")) == 0
    out = tmp_path / "killed"
    kill = ("import os, signal, sys; from cod.data import prepare; prepare.BATCH_DOCS = 7; n = iter(range(40)); "
            "write = prepare.SplitWriter.write\n"
            "def killing(self, *a):\n    next(n, None) is None and os.kill(os.getpid(), signal.SIGKILL)\n"
            "    write(self, *a)\n"
            "prepare.SplitWriter.write = killing; prepare.main(sys.argv[1:])")
    result = subprocess.run([sys.executable, "-c", kill, *argv(corpus_files, out, "--workers", "1")],
                            capture_output=True, text=True)
    assert result.returncode == -9, result.stderr
    assert json.loads((out / prepare.PROGRESS).read_text())["documents"] == 35
    assert prepare.main(argv(corpus_files, out, "--workers", "2")) == 0
    assert outputs(out) == outputs(tmp_path / "whole")


def test_the_token_target_stops_reading_the_source(corpus_files, tmp_path, monkeypatch, capsys):
    assert prepare.main(argv(corpus_files, tmp_path / "whole", kind="gpt_neox")) == 0
    whole = outputs(tmp_path / "whole")
    target = len(whole["train.bin"]) // 2 // 3 - 30  # about a third of the train split's tokens
    monkeypatch.setattr(prepare, "PROGRESS_EVERY_S", 0.0)
    capsys.readouterr()
    meta = prepare.prepare(tmp_path / "part", "gpt_neox", source="fineweb_edu", raw=corpus_files[1],
                           files=[corpus_files[0]], val_fraction=0.1, max_tokens=target, workers=2)
    part = outputs(tmp_path / "part")
    train = np.frombuffer(part["train.bin"], dtype=np.uint16)
    ends = np.flatnonzero(train == 0)  # each document ends with the end-of-text id 0
    assert ends[-1] == len(train) - 1 and len(train) >= target > ends[-2] + 1  # stopped at the crossing document
    assert meta["splits"]["train"]["tokens"] == len(train)
    assert (meta["splits"]["train"]["documents"] + meta["splits"]["val"]["documents"]) % BATCH  # inside a batch
    for name in ("train.bin", "val.bin"):
        assert whole[name].startswith(part[name]) and len(part[name]) < len(whole[name])
    assert part["val_bbc.bin"] == whole["val_bbc.bin"]  # the held-out articles are not cut
    line = (r"  encoded [\d,]+ documents, [\d,]+ tokens \([\d.]+ s, [\d.]+M tokens/s; "
            rf"train [\d,]+ of {target:,} tokens, ETA \d+:\d\d:\d\d\)")
    assert any(re.fullmatch(line, s) for s in capsys.readouterr().out.splitlines())


def test_a_bpe_with_a_token_target_trains_on_that_many_bytes_of_train_text():
    docs = [("train", "s", "abcd"), ("val", "s", "xxxxxxxx"), ("train", "s", "efgh"), ("train", "s", "ij")]
    assert list(prepare.bpe_texts(docs, None)) == ["abcd", "efgh", "ij"]
    assert list(prepare.bpe_texts(docs, 9)) == ["abcd", "efgh"]


def test_settings_are_checked_before_resuming_and_a_finished_preparation_is_kept(
    corpus_files, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "tok"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 20)
        with pytest.raises(Interrupted):
            prepare.main(argv(corpus_files, out, "--workers", "1"))
    with pytest.raises(SystemExit) as exit_info:
        prepare.main(argv(corpus_files, out, "--max-tokens", "5000"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unfinished preparation started with max_tokens None (now 5000)" in err and "--restart" in err
    assert prepare.main(argv(corpus_files, out, "--max-tokens", "5000", "--restart")) == 0
    assert prepare.main(argv(corpus_files, tmp_path / "fresh", "--max-tokens", "5000")) == 0
    assert outputs(out) == outputs(tmp_path / "fresh")

    stamps = {path.name: path.stat().st_mtime_ns for path in out.iterdir()}
    capsys.readouterr()
    assert prepare.main(argv(corpus_files, out, "--max-tokens", "5000")) == 0
    assert "is already prepared (meta.json): nothing to do" in capsys.readouterr().out
    assert {path.name: path.stat().st_mtime_ns for path in out.iterdir()} == stamps
    with pytest.raises(SystemExit):
        prepare.main(argv(corpus_files, out, kind="gpt_neox"))
    assert "holds a finished preparation of {'tokenizer': 'bpe'" in capsys.readouterr().err


def test_changed_files_are_not_resumed(corpus_files, tmp_path, monkeypatch, capsys):
    out = tmp_path / "tok"
    with monkeypatch.context() as patch:
        interrupt_after(patch, 20)
        with pytest.raises(Interrupted):
            prepare.main(argv(corpus_files, out, "--workers", "1"))
    with open(corpus_files[0], "a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "<urn:uuid:new>", "text": "A page added since."}) + "\n")
    with pytest.raises(SystemExit):
        prepare.main(argv(corpus_files, out, "--workers", "1"))
    assert re.search(r"started with files \[\[.*fineweb.jsonl', \d+\]\] \(now", capsys.readouterr().err)


def test_missing_fineweb_names_the_dataset_and_the_fix(corpus_files, tmp_path, monkeypatch, capsys):
    import datasets

    local_loader = datasets.load_dataset
    hub_calls = []

    def offline(path, *args, **kwargs):
        if path == fineweb.HUB_DATASET:
            hub_calls.append(kwargs.get("name"))
            raise ConnectionError(f"Couldn't reach '{path}' on the Hub (ConnectError)")
        return local_loader(path, *args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", offline)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        prepare.main(["--tokenizer", "gpt_neox", "--source", "fineweb_edu", "--max-tokens", "1000", "--out", str(out)])
    assert exit_info.value.code == 2 and hub_calls == ["sample-10BT"]
    err = capsys.readouterr().err
    for needed in ("FineWeb-Edu (HuggingFaceFW/fineweb-edu, config sample-10BT) is not at hand", "network access",
                   "hf download HuggingFaceFW/fineweb-edu --repo-type dataset --include 'sample/10BT/*.parquet'",
                   f"python -m cod.data.prepare --tokenizer gpt_neox --source fineweb_edu "
                   f"--files fineweb-edu/sample/10BT/*.parquet --max-tokens 1000 --out {out}"):
        assert needed in err, needed
    assert not out.exists()  # nothing was computed
    assert prepare.main(argv(corpus_files, out, "--workers", "1")) == 0 and hub_calls == ["sample-10BT"]


def test_the_trainer_is_told_a_runnable_fineweb_command():
    command = prepare.prepare_command(DataConfig(source="fineweb_edu", tokenizer="gpt_neox"))
    assert command == ("python -m cod.data.prepare --tokenizer gpt_neox --source fineweb_edu "
                       "--out data/tokens/gpt_neox_fineweb_edu")
    args = prepare.parser().parse_args(shlex.split(command)[3:])
    assert (args.source, args.files, str(args.out)) == ("fineweb_edu", [], DataConfig(source="fineweb_edu",
                                                                                     tokenizer="gpt_neox").dataset_dir)
    assert "--source text_files --files FILE [FILE ...]" in prepare.prepare_command(DataConfig(source="text_files"))
