"""The training path's own kernels: attention and the chunked loss equal PyTorch's reference
ops, and one training step of our model equals Hugging Face LLaMA's, gradients included."""

import pytest
import torch
import torch.nn.functional as F

import cod.model.loss
from cod.config import ModelConfig
from cod.model.cpu_attention import softmax_attention
from cod.model.interop import HF, OURS, _rename, to_hf_llama
from cod.model.loss import IGNORE_INDEX, linear_cross_entropy
from cod.model import Transformer


def _qkv(groups: int, dtype=torch.float64):
    g = torch.Generator().manual_seed(groups)
    q = torch.randn(3, groups * 7, 5, generator=g, dtype=dtype, requires_grad=True)  # (N, G*T, hd)
    k, v = (torch.randn(3, 7, 5, generator=g, dtype=dtype, requires_grad=True) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("groups", [1, 3], ids=["mha", "gqa"])
def test_attention_equals_sdpa_with_exact_gradients(causal, groups):
    q, k, v = _qkv(groups)
    out, probs = softmax_attention(q, k, v, causal)
    # the reference: G query heads attending to one key/value head each
    expected = F.scaled_dot_product_attention(q.view(3, groups, 7, 5), k[:, None], v[:, None], is_causal=causal)
    torch.testing.assert_close(out, expected.reshape(3, groups * 7, 5))
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, groups * 7, dtype=torch.float64))
    if causal:  # no query sees a later key
        assert (probs.view(3, groups, 7, 7).triu(1) == 0).all()
    assert torch.autograd.gradcheck(lambda *t: softmax_attention(*t, causal)[0], (q, k, v))


def test_attention_works_under_jacrev():
    q, k, v = _qkv(2)
    jac = torch.func.jacrev(lambda q: softmax_attention(q, k, v, True)[0])(q)  # (N, G*T, hd, N, G*T, hd)
    numeric = torch.autograd.functional.jacobian(lambda q: softmax_attention(q, k, v, True)[0], q)
    torch.testing.assert_close(jac, numeric)


@pytest.mark.parametrize("chunk", [40, 2**17], ids=["many-chunks", "one-chunk"])
def test_chunked_loss_equals_cross_entropy_with_gradients(chunk, monkeypatch):
    monkeypatch.setattr(cod.model.loss, "CHUNK_ELEMENTS", chunk)  # 40 logits: rows of 13 split into chunks of 3
    monkeypatch.setattr(cod.model.loss, "MIN_ROWS", 1)
    g = torch.Generator().manual_seed(0)
    h = torch.randn(50, 8, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(13, 8, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 13, (50,), generator=g)
    targets[[0, 7, 8, 49]] = IGNORE_INDEX
    loss = linear_cross_entropy(h, w, targets)
    (2.5 * loss).backward()  # a non-unit incoming gradient reaches both inputs
    ours = h.grad.clone(), w.grad.clone()
    h.grad = w.grad = None
    expected = F.cross_entropy(h @ w.T, targets, ignore_index=IGNORE_INDEX)
    (2.5 * expected).backward()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(ours[0], h.grad)
    torch.testing.assert_close(ours[1], w.grad)


def test_chunked_loss_without_gradients_and_under_bf16_autocast():
    g = torch.Generator().manual_seed(1)
    h, w = torch.randn(64, 16, generator=g), torch.randn(40, 16, generator=g)
    targets = torch.randint(0, 40, (64,), generator=g)
    with torch.no_grad():
        torch.testing.assert_close(linear_cross_entropy(h, w, targets), F.cross_entropy(h @ w.T, targets))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = linear_cross_entropy(h, w, targets)
        expected = F.cross_entropy((h @ w.T).float(), targets)  # the logits in bf16, the loss in fp32
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, expected, atol=0.05, rtol=0.01)


@pytest.mark.parametrize("kv_heads", [4, 1], ids=["mha", "mqa"])
def test_a_training_step_equals_hf_llama(kv_heads):
    """Loss and every parameter's gradient of our training path (logits=False) against
    LlamaForCausalLM's (labels=, which shifts the targets itself)."""
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=97, d_model=32, n_layers=3, n_heads=4, n_kv_heads=kv_heads, max_seq_len=64)
    ours = Transformer(cfg)
    hf = to_hf_llama(ours).train()
    idx = torch.randint(0, 97, (3, 20), generator=torch.Generator().manual_seed(1))
    targets = torch.cat([idx[:, 1:], torch.full((3, 1), IGNORE_INDEX)], dim=1)
    loss = ours(idx, targets, logits=False).loss
    expected = hf(input_ids=idx, labels=idx).loss
    loss.backward()
    expected.backward()
    torch.testing.assert_close(loss, expected, atol=1e-6, rtol=1e-6)
    grads = {_rename(name, HF, OURS): p.grad for name, p in hf.named_parameters()}
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, grads[name], atol=1e-6, rtol=1e-4, msg=name)
