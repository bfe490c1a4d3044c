"""Supervised fine-tuning: the instruction mix, its batches, the trainer mode and its identity."""

import json

import numpy as np
import pytest
import torch

from cod.config import COMMONSENSE_TASKS, ConfigError, LossOn, run_config
from cod.data.instructions import IGNORE, Example, InstructionBatches, encode_example, instruction_mix
from cod.data.tasks import check_fine_tuning, load_task, part_indices
from cod.data.tokenizer import train_bpe
from cod.eval.lm import TextEncoder
from cod.train import fingerprint
from cod.train.run import main
from cod.train.trainer import FineTuning, Trainer
from conftest import VOCAB, tiny_run

SMALL_MIX = ["finetune.tasks=piqa,arc_easy", "finetune.items_per_task=24"]


@pytest.fixture
def sft_tokens(tiny_tokens):
    """tiny_tokens plus a BPE tokenizer.json of its vocabulary, trained on the mix's own text."""
    texts = [c + " " + x for name in ("piqa", "arc_easy") for item in load_task(name, limit=200)
             for c, x in zip(item.contexts, item.choices)]
    train_bpe(texts, VOCAB).save(str(tiny_tokens / f"bpe{VOCAB}" / "tokenizer.json"))
    return tiny_tokens


def pretrained(tokens_dir, tmp_path, *extra):
    """A tiny pre-trained run; returns its model.pt."""
    out = tmp_path / "base"
    assert main(["--out", str(out), *tiny_run(tokens_dir, "train.steps=8", *extra)]) == 0
    return out / "model.pt"


def test_parts_split_every_set_in_two_disjoint_halves():
    for name in COMMONSENSE_TASKS.split(","):
        tune, held = part_indices(name, "tune"), part_indices(name, "eval")
        assert len(np.intersect1d(tune, held)) == 0
        assert len(tune) + len(held) == len(load_task(name)) and abs(len(tune) - len(held)) <= 1
    with pytest.raises(ValueError, match="allowed: tune, eval"):
        part_indices("piqa", "train")


def test_the_mix_holds_no_evaluation_item():
    names = COMMONSENSE_TASKS.split(",")
    mix = instruction_mix(names)
    assert {example.task for example in mix} == set(names)
    tune_items = sum(len(part_indices(name, "tune")) for name in names)
    assert 0.99 * tune_items <= len(mix) <= tune_items  # only pairs repeated in the other half are dropped
    for name in names:
        evaluated = {request for item in load_task(name, part="eval")
                     for request in zip(item.contexts, item.continuations)}
        assert not {(e.prompt, e.answer) for e in mix if e.task == name} & evaluated, name


def test_an_example_is_the_right_answer_in_the_scoring_format():
    item = load_task("piqa", limit=1, part="tune")[0]
    example = instruction_mix(["piqa"], items_per_task=1)[0]
    assert (example.prompt, example.answer) == (item.contexts[item.gold], item.continuations[item.gold])


def test_loss_covers_the_answer_tokens_only(sft_tokens):
    from tokenizers import Tokenizer

    text = TextEncoder(Tokenizer.from_file(str(sft_tokens / f"bpe{VOCAB}" / "tokenizer.json")))
    example = Example("piqa", "Question: how do you boil water?\nAnswer:", " heat it in a pot")
    prompt, answer = text.request(example.prompt, example.answer)
    x, y = encode_example(text, example, seq_len=64)
    assert x == (prompt + answer)[:-1]
    assert y == [IGNORE] * (len(prompt) - 1) + answer  # each answer token predicted from what precedes it
    _, y_all = encode_example(text, example, seq_len=64, loss_on=LossOn.ALL)
    assert y_all == (prompt + answer)[1:]
    x_cut, y_cut = encode_example(text, example, seq_len=len(answer) + 2)  # a long prompt loses its start
    assert len(x_cut) == len(answer) + 2 and y_cut[-len(answer):] == answer


def test_batches_are_deterministic_padded_and_rank_sliced(sft_tokens):
    cfg = run_config(tiny_run(sft_tokens, *SMALL_MIX, "data.batch_size=6"))
    tokenizer_path = sft_tokens / f"bpe{VOCAB}"
    from cod.eval.lm import load_tokenizer

    whole = InstructionBatches(cfg, load_tokenizer(tokenizer_path))
    again = InstructionBatches(cfg, load_tokenizer(tokenizer_path))
    halves = [InstructionBatches(cfg, load_tokenizer(tokenizer_path), rank=r, world_size=2) for r in (0, 1)]
    assert len(whole) == 48
    for step in (0, 7, 8, 20):  # 8 steps of 6 make an epoch: 7 straddles nothing, 8 starts epoch 1
        x, y = whole.batch(step)
        assert torch.equal(x, again.batch(step)[0]) and torch.equal(y, again.batch(step)[1])
        assert x.shape == y.shape and x.shape[0] == 6 and x.shape[1] <= cfg.data.seq_len
        assert (y != IGNORE).any(dim=1).all()  # every example has answer tokens
        parts = [h.batch(step) for h in halves]
        for r, (xr, yr) in enumerate(parts):
            width = xr.shape[1]
            assert torch.equal(xr, x[3 * r:3 * r + 3, :width]) and (x[3 * r:3 * r + 3, width:] == 0).all()
    epoch = torch.cat([whole.batch(s)[0][:, :1] for s in range(8)])
    assert len(epoch) == 48  # one epoch visits each example once
    seen = {tuple(whole.batch(s // 6)[0][s % 6].tolist()) for s in range(48)}
    assert len(seen) == len({tuple(ids) for ids, _ in whole.examples})


def test_fine_tuning_starts_from_the_base_and_resumes_exactly(sft_tokens, tmp_path):
    base = pretrained(sft_tokens, tmp_path)
    overrides = tiny_run(sft_tokens, *SMALL_MIX, f"finetune.base={base}", "train.steps=12", "train.ckpt_every=4")
    cfg = run_config(overrides)
    fresh = Trainer(cfg, tmp_path / "probe")
    assert isinstance(fresh.task, FineTuning) and isinstance(fresh.batches, InstructionBatches)
    fresh.load_base()
    base_state = torch.load(base)["model"]
    assert all(torch.equal(fresh.model.state_dict()[k], base_state[k]) for k in base_state)

    assert main(["--out", str(tmp_path / "straight"), *overrides]) == 0
    t = Trainer(cfg, tmp_path / "resumed", identity=fingerprint.describe(cfg))
    t.out.mkdir(parents=True)
    t.load_base()
    while t.step < 6:
        t.train_step()
    t.save_checkpoint()
    assert main(["--out", str(tmp_path / "resumed"), *overrides]) == 0
    a = json.loads((tmp_path / "straight" / "final.json").read_text())
    b = json.loads((tmp_path / "resumed" / "final.json").read_text())
    assert a["final_train_loss"] == b["final_train_loss"] and a["tokens"] == b["tokens"]
    tuned = torch.load(tmp_path / "straight" / "model.pt")["model"]
    assert not torch.equal(tuned["lm_head.weight"], base_state["lm_head.weight"])
    assert a["base"] == fingerprint.base_digest(cfg)


def test_fine_tuning_loss_falls_on_a_repeated_mix(sft_tokens, tmp_path):
    base = pretrained(sft_tokens, tmp_path)
    out = tmp_path / "sft"
    assert main(["--out", str(out), *tiny_run(sft_tokens, "finetune.tasks=piqa", "finetune.items_per_task=8",
                                             f"finetune.base={base}", "train.steps=40")]) == 0
    losses = [row["loss"] for row in map(json.loads, (out / "history.jsonl").read_text().splitlines())
              if "loss" in row]
    assert np.mean(losses[-3:]) < np.mean(losses[:2]) - 0.5  # 8 examples, 5 epochs: memorised


def test_a_retrained_base_makes_the_fine_tuned_run_stale(sft_tokens, tmp_path):
    base = pretrained(sft_tokens, tmp_path)
    overrides = tiny_run(sft_tokens, *SMALL_MIX, f"finetune.base={base}", "train.steps=4")
    assert main(["--out", str(tmp_path / "sft"), *overrides]) == 0
    cfg = run_config(overrides)
    assert fingerprint.is_complete(tmp_path / "sft", cfg)
    pretrained(sft_tokens, tmp_path, "seed=1")  # the base is trained again, differently
    assert not fingerprint.is_complete(tmp_path / "sft", cfg)


def test_bad_fine_tuning_settings_are_named_before_compute(sft_tokens, tmp_path, capsys):
    with pytest.raises(ConfigError, match="finetune.tasks='piqa,lambada'.*allowed"):
        check_fine_tuning(run_config(["finetune.tasks=piqa,lambada"]).finetune)
    assert main(["--out", str(tmp_path / "t"), *tiny_run(sft_tokens, "finetune.tasks=piqa,lambada")]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "t").exists()
    with pytest.raises(ConfigError, match="finetune.loss_on='prompt' is not allowed; allowed: answer, all"):
        run_config(["finetune.loss_on=prompt"])
    assert main(["--out", str(tmp_path / "r"), *tiny_run(sft_tokens, "finetune.base=nowhere/model.pt")]) == 2
    assert "finetune.base=nowhere/model.pt not found" in capsys.readouterr().err
    base = pretrained(sft_tokens, tmp_path)
    wider = run_config(tiny_run(sft_tokens, *SMALL_MIX, f"finetune.base={base}", "model.n_layers=4"))
    with pytest.raises(ConfigError, match="other model settings"):
        Trainer(wider, tmp_path / "wider").load_base()
