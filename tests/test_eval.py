"""Evaluation: the zero-shot scorer against hand-computed log-likelihoods, task loading, perplexity."""

import math

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers

from cod.config import ModelConfig
from cod.data.tasks import TASKS, Item, chance, load_task
from cod.eval.lm import EOT, LanguageModel, load_tokenizer
from cod.eval.perplexity import perplexity, perplexity_text
from cod.eval.zeroshot import evaluate, loglikelihoods, score_items
from cod.model.interop import to_hf_llama
from cod.model import Transformer

WORDS = ["<|endoftext|>", "a", "b", "x", "yyyy", "zz"]  # 6: an even width for RoPE


def word_tokenizer() -> Tokenizer:
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


def bigram_model(table: torch.Tensor) -> Transformer:
    """A Transformer that, run with no blocks, gives logits table[current token] (V = D)."""
    v = table.shape[0]
    model = Transformer(ModelConfig(vocab_size=v, d_model=v, n_layers=1, n_heads=1, max_seq_len=32, norm_eps=0.0))
    with torch.no_grad():
        model.embed_tokens.weight.copy_(math.sqrt(v) * torch.eye(v))  # RMSNorm leaves these rows unchanged
        model.lm_head.weight.copy_(table.T / math.sqrt(v))
    return model.eval()


@pytest.fixture
def table():
    return torch.randn(len(WORDS), len(WORDS), generator=torch.Generator().manual_seed(0))


def test_loglikelihood_matches_hand_computation(table):
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[])
    logp = table.double().log_softmax(-1)  # logp[i, j] = log P(next j | current i)
    a, b, x, yyyy = 1, 2, 3, 4
    scores, greedy = loglikelihoods(lm, [("a b", " x"), ("a", " b yyyy x"), ("b ", "x")])
    expected = [logp[b, x], logp[a, b] + logp[b, yyyy] + logp[yyyy, x], logp[b, x]]
    np.testing.assert_allclose(scores, [e.item() for e in expected], rtol=1e-5)
    greedy_expected = [logp[b].argmax() == x,
                       (logp[a].argmax() == b) & (logp[b].argmax() == yyyy) & (logp[yyyy].argmax() == x)]
    assert list(greedy[:2]) == [bool(g) for g in greedy_expected]


def test_acc_and_acc_norm_differ_where_lengths_differ():
    table = torch.zeros(len(WORDS), len(WORDS))
    table[1, 3], table[1, 4] = 2.0, 1.0  # after "a": "x" is likelier than "yyyy" ...
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[])
    item = Item(("a", "a"), ("x", "yyyy"), gold=1)  # ... but "yyyy" has 4 characters, "x" one
    scores, _ = loglikelihoods(lm, list(zip(item.contexts, item.continuations)))
    assert scores[0] > scores[1] and scores[0] / 1 < scores[1] / 4
    result = score_items(lm, [item])
    assert (result["acc"], result["acc_norm"], result["n"]) == (0.0, 1.0, 1)


def test_greedy_scoring(table):
    table = torch.zeros(len(WORDS), len(WORDS))
    table[1, 2] = table[2, 3] = 5.0  # a -> b -> x
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[])
    items = [Item(("a",), ("b x",), 0), Item(("a",), ("b yyyy",), 0)]
    assert score_items(lm, items, greedy=True)["acc"] == 0.5


def test_uniform_model_perplexity_is_vocab_size():
    model = Transformer(ModelConfig(vocab_size=len(WORDS), d_model=8, n_layers=2, n_heads=2, max_seq_len=16))
    torch.nn.init.zeros_(model.lm_head.weight)
    lm = LanguageModel(model, word_tokenizer())
    tokens = np.random.default_rng(0).integers(0, len(WORDS), 100)
    assert perplexity(lm, tokens, seq_len=8, batch_size=3)["ppl"] == pytest.approx(len(WORDS), rel=1e-6)
    result = perplexity_text(lm, ["a b x yyyy a b"] * 5, seq_len=4, max_tokens=20)
    assert result["ppl"] == pytest.approx(len(WORDS), rel=1e-6) and result["tokens"] == 20


def test_perplexity_of_a_token_array_file(tmp_path, table):
    tokens = np.random.default_rng(1).integers(0, len(WORDS), 50).astype(np.uint16)
    tokens.tofile(tmp_path / "val.bin")
    (tmp_path / "meta.json").write_text('{"dtype": "uint16"}')
    word_tokenizer().save(str(tmp_path / "tokenizer.json"))
    lm = LanguageModel(bigram_model(table), load_tokenizer(tmp_path), order=[])
    from_file = perplexity(lm, tmp_path / "val.bin", seq_len=7, max_tokens=42)
    assert from_file == perplexity(lm, tokens, seq_len=7, max_tokens=42) and from_file["tokens"] == 42
    logp = table.double().log_softmax(-1)
    expected = -np.mean([logp[a, b].item() for a, b in zip(tokens[:42], tokens[1:43])])
    assert from_file["nll"] == pytest.approx(expected, rel=1e-5)


def test_hf_model_scores_like_ours():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=len(WORDS), d_model=16, n_layers=2, n_heads=2, max_seq_len=16)).eval()
    requests = [("a b", " x yyyy"), ("x", " a")]
    ours, _ = loglikelihoods(LanguageModel(model, word_tokenizer()), requests)
    theirs, _ = loglikelihoods(LanguageModel(to_hf_llama(model), word_tokenizer()), requests)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_prefix_is_endoftext_even_when_it_is_also_the_unknown_token():
    """SmolLM2's unknown token is <|endoftext|>: the prefix must still be it, not the chat BOS."""
    from transformers import PreTrainedTokenizerFast

    words = WORDS + ["<|im_start|>"]
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=EOT))
    hf = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token=EOT, bos_token="<|im_start|>")
    model = Transformer(ModelConfig(vocab_size=len(words), d_model=8, n_layers=1, n_heads=1, max_seq_len=8))
    assert hf.unk_token_id == 0 and LanguageModel(model, hf).prefix == 0
    no_eot = Tokenizer(models.WordLevel({"a": 0, "<s>": 1}, unk_token="a"))
    hf = PreTrainedTokenizerFast(tokenizer_object=no_eot, unk_token="a", bos_token="<s>")
    assert LanguageModel(model, hf).prefix == 1  # without <|endoftext|>: the BOS


def test_long_inputs_lose_their_start(table):
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[], max_len=4)
    scores, _ = loglikelihoods(lm, [("a " * 20 + "b", " x")])
    assert scores[0] == pytest.approx(table.double().log_softmax(-1)[2, 3].item(), rel=1e-5)


def test_continuation_longer_than_the_model_scores_its_last_tokens(table):
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[], max_len=2)
    scores, _ = loglikelihoods(lm, [("a", " x yyyy zz")])
    logp = table.double().log_softmax(-1)
    assert scores[0] == pytest.approx((logp[3, 4] + logp[4, 5]).item(), rel=1e-5)  # yyyy|x + zz|yyyy


@pytest.mark.parametrize("name", list(TASKS))
def test_task_loads_and_formats(name):
    items = load_task(name, limit=4)
    assert len(items) == 4
    for item in items:
        assert len(item.contexts) == len(item.choices) >= 1 and 0 <= item.gold < len(item.choices)
        assert all(isinstance(c, str) and c for c in item.contexts + item.choices)
    assert load_task(name, limit=4) == items  # the subset is fixed


def test_prompt_formats():
    arc = load_task("arc_easy", limit=1)[0]
    assert arc.contexts[0].startswith("Question: ") and arc.contexts[0].endswith("\nAnswer:")
    assert arc.continuations[0].startswith(" ")
    wino = load_task("winogrande", limit=1)[0]
    assert wino.contexts[0] != wino.contexts[1] and wino.choices[0] == wino.choices[1]
    assert load_task("boolq", limit=1)[0].choices == ("no", "yes")


@pytest.mark.parametrize("name, level", [("arc_easy", 0.25), ("hellaswag", 0.25), ("mmlu", 0.25), ("piqa", 0.5),
                                         ("boolq", 0.5), ("winogrande", 0.5), ("copa", 0.5), ("sciq", 0.25),
                                         ("social_iqa", 1 / 3), ("commonsense_qa", 0.2), ("lambada", 0.0)])
def test_chance_levels(name, level):
    assert chance(load_task(name, limit=20), name) == pytest.approx(level)


def test_evaluate_reports_chance_and_count(table):
    lm = LanguageModel(bigram_model(table), word_tokenizer(), order=[])
    result = evaluate(lm, "copa", limit=6)
    assert result["task"] == "copa" and result["n"] == 6 and result["chance"] == 0.5
    assert 0.0 <= result["acc"] <= 1.0 and 0.0 <= result["acc_norm"] <= 1.0


def test_bad_names_are_explained():
    with pytest.raises(ValueError, match="allowed: arc_easy"):
        load_task("arc_medium")
