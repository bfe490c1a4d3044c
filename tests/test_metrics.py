"""Layer-effectiveness metrics: cases with known answers, and prefix caching against naive recomputation."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from cod.config import ModelConfig
from cod.metrics.angular import adjacent_distances, angular_distance, angular_distances, by_offset, column_scaled
from cod.metrics.attention_sparsity import attention_at_lengths, attention_entropy, attention_sparsity, attention_stats
from cod.metrics.causal import causal_scores
from cod.metrics.effectiveness import analyse_layers
from cod.metrics.jacobian import block_jacobians
from cod.metrics.kurtosis import kurtosis, layer_kurtosis
from cod.metrics.permutation import permutation_scores, swapped
from cod.metrics.pruning import layer_removal
import cod.metrics.effectiveness
import cod.metrics.stream
from cod.metrics.stream import first_sequences, loss_after, residual_stream
from cod.metrics.usefulness import fit_affine, usefulness_authors, usefulness_scores
from cod.metrics.weights import weight_sparsity
from cod.model import Transformer

VOCAB, LAYERS, D = 61, 4, 32


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: a second intra-op thread only adds contention on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(norm: str = "pre_ln", seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=4, max_seq_len=32,
                                    norm=norm, init_std=0.2)).eval()
    for p in model.parameters():  # move norm gains off 1 so every parameter matters
        p.data.add_(0.05 * torch.randn_like(p))
    return model


def tokens(batch: int = 4, seq: int = 12, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(0, VOCAB, (batch, seq + 1), generator=torch.Generator().manual_seed(seed))
    return ids[:, :-1], ids[:, 1:]


def silence(block) -> None:
    """Zero the output projections: the block becomes the identity."""
    block.attn.branch.o_proj.weight.data.zero_()
    block.mlp.branch.down_proj.weight.data.zero_()


class Replaced(nn.Module):
    """A model of the protocol whose block `layer` is another module (e.g. an affine map)."""

    def __init__(self, model: Transformer, layer: int, module: nn.Module):
        super().__init__()
        self.model, self.layer, self.module = model, layer, module
        self.blocks = [module if i == layer else b for i, b in enumerate(model.blocks)]

    def embed(self, idx):
        return self.model.embed(idx)

    def run_blocks(self, x, order=None, keep=(), states=None, first_step=0):
        order = range(len(self.blocks)) if order is None else order
        order = [self.module if entry == self.layer and isinstance(entry, int) else entry for entry in order]
        return self.model.run_blocks(x, order=order, keep=keep, states=states, first_step=first_step)

    def head(self, x, targets=None, logits=True):
        return self.model.head(x, targets, logits)


# ----------------------------------------------------------------------------- known answers


def test_identity_blocks_have_no_causal_effect_and_identity_jacobian():
    model = tiny()
    silence(model.blocks[1])
    x, y = tokens()
    stream = residual_stream(model, x, y)
    causal = causal_scores(model, stream)
    assert np.all(causal.matrix[1, 2:] == 0.0)  # skipping an identity block changes nothing later
    assert causal.matrix[0, 1] == 0.0 and np.all(causal.matrix[0, 2:] > 0.0)  # 0/0 := 0
    jac = block_jacobians(model, stream)
    assert jac.deviation[1] == 0.0 and np.all(jac.deviation[[0, 2, 3]] > 0)
    np.testing.assert_array_equal(jac.mean[1], np.eye(D))

    for block in model.blocks:
        silence(block)
    stream = residual_stream(model, x, y)
    assert causal_scores(model, stream).global_score == 0.0
    assert np.all(block_jacobians(model, stream).deviation == 0.0)


def test_jacobian_is_the_same_position_derivative():
    model = tiny()
    x, _ = tokens(batch=2, seq=6)
    stream = residual_stream(model, x)
    jac = block_jacobians(model, stream, seed=3)
    positions = torch.randint(6, (2,), generator=torch.Generator().manual_seed(3))
    h = stream.h[2]
    expected = []
    for b, t in enumerate(positions.tolist()):
        def f(v, b=b, t=t):
            return model.run_blocks(h[b:b + 1].index_put((torch.tensor([0]), torch.tensor([t])), v[None]),
                                    order=[2])[0, t]
        expected.append(torch.autograd.functional.jacobian(f, h[b, t]))
    np.testing.assert_allclose(jac.mean[2], torch.stack(expected).mean(0).numpy(), atol=1e-5)


def test_swapping_identical_blocks_scores_zero():
    model = tiny()
    model.blocks[3].load_state_dict(model.blocks[1].state_dict())
    x, y = tokens()
    perm = permutation_scores(model, residual_stream(model, x, y))
    assert perm.matrix[1, 3] == 0.0
    others = perm.matrix[np.triu_indices(LAYERS, k=1)]
    assert np.count_nonzero(others) == len(others) - 1
    assert perm.global_score == pytest.approx(others.mean())


def test_an_affine_block_is_not_useful():
    model = tiny()
    torch.manual_seed(5)
    linear = nn.Linear(D, D)
    nn.init.orthogonal_(linear.weight)  # far from its transpose
    wrapped = Replaced(model, 2, linear)
    x, y = tokens()
    fit_x, _ = tokens(batch=8, seed=2)
    result = usefulness_scores(wrapped, residual_stream(wrapped, x, y), residual_stream(wrapped, fit_x), tau=0.1)
    assert abs(result.relative_increase[2]) < 1e-4
    assert not result.useful[2]
    assert result.effective + result.wasted == LAYERS and result.score == result.effective / LAYERS


def test_too_few_fit_tokens_are_refused_before_any_metric_runs(monkeypatch):
    """A fit on at most width + 1 tokens interpolates them: one line names fit_tokens, the count
    given and the least allowed, before the residual stream is computed."""
    model = tiny()
    x, y = tokens()
    fit_x, _ = tokens(batch=3, seq=11)  # 33 tokens at width 32
    computed = []
    monkeypatch.setattr(cod.metrics.effectiveness, "residual_stream", lambda *a: computed.append(a))
    with pytest.raises(ValueError, match=r"^fit_tokens=33 is too few .* at width 32: at least 34 ") as refused:
        analyse_layers(model, x, y, fit_x, x[:1])
    assert "\n" not in str(refused.value) and not computed
    with pytest.raises(ValueError, match="fit_tokens=33"):
        usefulness_scores(model, residual_stream(model, x, y), residual_stream(model, fit_x))
    fit_x, _ = tokens(batch=2, seq=17)  # 34 tokens: enough
    assert usefulness_scores(model, residual_stream(model, x, y), residual_stream(model, fit_x)).loss.shape == (LAYERS,)


class NumpyTransposedFit(nn.Module):
    """The authors' replacement written independently: numpy's least squares of y on [x, 1] over the
    given tokens, P (D + 1, D), applied as nn.Linear(weight=P[:D]) does: x P[:D]^T + P[D]."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        super().__init__()
        x2, y2 = x.reshape(-1, x.shape[-1]).double().numpy(), y.reshape(-1, y.shape[-1]).double().numpy()
        solution = np.linalg.lstsq(np.hstack([x2, np.ones((len(x2), 1))]), y2, rcond=None)[0]
        self.weight, self.bias = torch.tensor(solution[:-1]), torch.tensor(solution[-1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.double() @ self.weight.T + self.bias).to(x.dtype)


def test_the_authors_usefulness_against_an_independent_formula():
    model = tiny()
    x, y = tokens(batch=8, seq=12)  # 96 tokens at width 32: fitted and scored on the same ones
    stream = residual_stream(model, x, y)
    authors = usefulness_authors(model, stream, tau=0.1)
    for l in range(LAYERS):
        replaced = NumpyTransposedFit(stream.h[l], stream.h[l + 1])
        out = model.run_blocks(stream.h[l], order=[replaced, *range(l + 1, LAYERS)])
        expected = model.head(out, y)[1].item()
        assert authors.loss[l] == pytest.approx(expected, rel=1e-4)
    assert authors.base_loss == pytest.approx(stream.loss) and authors.tau == 0.1


def test_the_authors_transposed_fit_breaks_an_exactly_affine_block():
    # an affine block far from its transpose: the paper's fit replaces it exactly, the authors' does not
    model = tiny()
    torch.manual_seed(5)
    linear = nn.Linear(D, D)
    nn.init.orthogonal_(linear.weight)
    wrapped = Replaced(model, 2, linear)
    x, y = tokens(batch=8)
    stream = residual_stream(wrapped, x, y)
    assert abs(usefulness_scores(wrapped, stream, stream).relative_increase[2]) < 1e-4
    assert usefulness_authors(wrapped, stream).relative_increase[2] > 0.01
    symmetric = nn.Linear(D, D)
    symmetric.weight.data = (linear.weight.data + linear.weight.data.T) / 2  # its own transpose: both agree
    wrapped = Replaced(model, 2, symmetric)
    stream = residual_stream(wrapped, x, y)
    assert abs(usefulness_authors(wrapped, stream).relative_increase[2]) < 1e-4


def test_affine_fit_is_applied_untransposed():
    torch.manual_seed(0)
    linear = nn.Linear(8, 8)
    x = torch.randn(200, 8)
    fitted = fit_affine(x, linear(x).detach())
    torch.testing.assert_close(fitted(x), linear(x).detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fitted.weight, linear.weight.detach().T, atol=1e-5, rtol=1e-5)


def test_angular_distance_extremes():
    v = torch.randn(5, 16)
    assert angular_distance(v, v).abs().max().item() < 1e-6
    assert (angular_distance(v, -v) - 1).abs().max().item() < 1e-6
    assert angular_distance(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])).item() == pytest.approx(0.5)


def test_angular_matrix_layout():
    model = tiny()
    stream = residual_stream(model, tokens()[0])
    dist = angular_distances(stream)
    assert dist.shape == (LAYERS + 1, LAYERS + 1) and np.allclose(dist, dist.T) and np.all(np.diag(dist) == 0)
    offsets = by_offset(dist)
    assert offsets[0, 2] == dist[2, 3] and offsets[LAYERS - 1, 0] == dist[0, LAYERS]
    assert np.isnan(offsets[LAYERS - 1, 1])
    np.testing.assert_array_equal(adjacent_distances(dist), [dist[l, l + 1] for l in range(LAYERS)])


def test_column_scaling_of_the_offset_grid():
    grid = np.array([[0.2, 0.5, 0.3], [0.4, 0.1, np.nan], [0.6, np.nan, np.nan]])
    scaled = column_scaled(grid)
    np.testing.assert_allclose(scaled[:, 0], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(scaled[:2, 1], [1.0, 0.0])
    assert np.isnan(scaled[:, 2]).all()  # one value: nothing to scale


def causal_mask_uniform(seq: int) -> torch.Tensor:
    return torch.ones(seq, seq).tril() / torch.arange(1, seq + 1)[:, None]


def test_attention_sparsity_and_entropy_of_uniform_and_one_hot():
    seq = 8
    uniform = causal_mask_uniform(seq).expand(2, 3, seq, seq)
    entropy = attention_entropy(uniform)
    assert entropy.shape == (3,)
    np.testing.assert_allclose(entropy, np.mean(np.log(np.arange(1, seq + 1))))
    # entries 1/(i+1) below 0.2 are those of rows i >= 5: 6 + 7 + 8 of 36 valid entries
    np.testing.assert_allclose(attention_sparsity(uniform, [0.2, 1e-3]), [[21 / 36, 0.0]] * 3)

    sink = torch.zeros(1, 2, seq, seq)
    sink[..., 0] = 1.0  # every query attends to the first token only
    np.testing.assert_allclose(attention_entropy(sink), 0.0)
    np.testing.assert_allclose(attention_sparsity(sink, [0.5]), [[(36 - seq) / 36]] * 2)
    np.testing.assert_allclose(attention_sparsity(sink, [0.5], causal=False), [[(64 - seq) / 64]] * 2)


def test_attention_at_several_lengths_of_a_model_with_uniform_attention():
    model = tiny()
    with torch.no_grad():
        for block in model.blocks:  # no query or key: every query attends uniformly to the tokens so far
            block.attn.branch.q_proj.weight.zero_()
            block.attn.branch.k_proj.weight.zero_()
    stats = attention_at_lengths(model, tokens()[0], [4, 12], [0.2])
    for length, at in stats.items():
        np.testing.assert_allclose(at.entropy, np.mean(np.log(np.arange(1, length + 1))), rtol=1e-5)
        below = sum(i + 1 for i in range(length) if 1 / (i + 1) < 0.2)  # rows i >= 5: i + 1 entries each
        np.testing.assert_allclose(at.global_sparsity, [below / (length * (length + 1) / 2)], rtol=1e-6)
    with pytest.raises(ValueError, match="lengths \\[99\\]"):
        attention_at_lengths(model, tokens()[0], [4, 99], [0.2])


def test_attention_stats_of_a_model():
    model = tiny()
    stats = attention_stats(model, residual_stream(model, tokens()[0]), [1e-1, 1e-3])
    assert stats.sparsity.shape == (LAYERS, 4, 2) and stats.entropy.shape == (LAYERS, 4)
    assert np.all(stats.global_sparsity[0] >= stats.global_sparsity[1])
    assert 0 < stats.global_entropy < math.log(12)


def test_kurtosis_of_a_gaussian_is_three():
    sample = torch.randn(200_000, 3, generator=torch.Generator().manual_seed(0))
    np.testing.assert_allclose(kurtosis(sample).numpy(), 3.0, atol=0.06)
    model = tiny()
    result = layer_kurtosis(residual_stream(model, tokens()[0]))
    assert result.per_dim.shape == (LAYERS, D) and result.layer.shape == (LAYERS,)


def test_layer_removal_passes_orders_to_the_task():
    model = tiny()
    seen = []

    def task(order):
        seen.append(order)
        return -model.head(model.run_blocks(model.embed(x), order=order), y, logits=False)[1].item()

    x, y = tokens()
    result = layer_removal(model, residual_stream(model, x, y), task)
    assert seen[-1] == list(range(LAYERS)) and seen[0] == [1, 2, 3]
    np.testing.assert_allclose(result.task_drop, result.loss_increase, rtol=1e-6)
    np.testing.assert_allclose(result.ppl, np.exp(result.loss))


def test_weight_sparsity_counts_small_entries():
    params = [torch.tensor([0.5, -0.05, 0.005]), torch.tensor([[1e-5, -2.0]])]
    np.testing.assert_allclose(weight_sparsity(params, [1e-1, 1e-2, 1e-4]), [3 / 5, 2 / 5, 1 / 5])


# ----------------------------------------------------------------------------- prefix caching


@pytest.mark.parametrize("norm", ["pre_ln", "lns"])
def test_prefix_caching_matches_naive_recomputation(norm):
    model = tiny(norm)
    x, y = tokens()
    fit_x, _ = tokens(batch=6, seed=3)
    stream, fit = residual_stream(model, x, y), residual_stream(model, fit_x)

    def naive_loss(order):
        return model.head(model.run_blocks(model.embed(x), order=order), y, logits=False)[1].item()

    with torch.no_grad():
        base = naive_loss(list(range(LAYERS)))
        assert stream.loss == base
        removal = layer_removal(model, stream)
        np.testing.assert_array_equal(removal.loss, [naive_loss([k for k in range(LAYERS) if k != l])
                                                     for l in range(LAYERS)])
        perm = permutation_scores(model, stream)
        for i in range(LAYERS):
            for j in range(i + 1, LAYERS):
                assert perm.matrix[i, j] == abs(naive_loss(swapped(LAYERS, i, j)) - base) / base
        useful = usefulness_scores(model, stream, fit)
        for l in range(LAYERS):
            order = list(range(LAYERS))
            order[l] = fit_affine(fit.h[l], fit.h[l + 1])
            assert useful.loss[l] == naive_loss(order)
        causal = causal_scores(model, stream)
        for s in range(LAYERS - 1):
            states = {}
            kept = [k for k in range(LAYERS) if k != s]
            model.run_blocks(model.embed(x), order=kept, keep=("resid_post",), states=states)
            altered = [stream.h[0]] + [states[f"resid_post.{i}"] for i in range(LAYERS - 1)]
            for l in range(s + 1, LAYERS):
                new = altered[l] - altered[l - 1]  # block l runs at step l - 1 once s is gone
                old = stream.h[l + 1] - stream.h[l]
                expected = (new - old).norm(dim=-1).mean().item() / old.norm(dim=-1).mean().item()
                assert causal.matrix[s, l] == expected


def test_resumed_losses_in_groups_of_sequences_equal_one_pass(monkeypatch):
    model = tiny()
    x, y = tokens(batch=7)
    y = y.clone()
    y[2, :5] = -100  # groups with fewer counted tokens weigh less
    stream = residual_stream(model, x, y)
    order = [2, 1, 0]
    with torch.no_grad():
        whole = loss_after(model, stream, 0, order)
        monkeypatch.setattr(cod.metrics.stream, "CHUNK_TOKENS", 24)  # two sequences of 12 per group: 4 groups
        grouped = loss_after(model, stream, 0, order)
        expected = model.head(model.run_blocks(stream.h[0], order=order), y)[1].item()
    assert grouped == pytest.approx(whole, rel=1e-6) and whole == pytest.approx(expected, rel=1e-6)


def test_analyse_layers_runs_everything():
    model = tiny()
    x, y = tokens()
    result = analyse_layers(model, x, y, tokens(batch=6, seed=3)[0], x[:2], attention_thresholds=[1e-2])
    assert result.variance.shape == (LAYERS,) and result.jacobians.mean.shape == (LAYERS, D, D)
    assert result.attention.sparsity.shape == (LAYERS, 4, 1)
    assert {"stream", "causal", "permutation", "usefulness", "jacobian"} <= set(result.seconds)


def test_sampled_permutation_pairs_are_entries_of_the_full_matrix():
    model = tiny()
    stream = residual_stream(model, *tokens())
    full = permutation_scores(model, stream)
    sampled = permutation_scores(model, stream, pairs=3, seed=5)
    drawn = ~np.isnan(sampled.matrix)
    assert drawn.sum() == 3 and not np.isnan(full.matrix[drawn]).any()
    np.testing.assert_allclose(sampled.matrix[drawn], full.matrix[drawn], rtol=1e-6)
    assert sampled.global_score == pytest.approx(full.matrix[drawn].mean())
    again = permutation_scores(model, stream, pairs=3, seed=5)
    np.testing.assert_array_equal(np.isnan(again.matrix), ~drawn)  # seeded
    np.testing.assert_allclose(permutation_scores(model, stream, pairs=100).matrix, full.matrix)  # all pairs


def test_first_sequences_is_the_stream_of_those_sequences():
    model = tiny()
    x, y = tokens(batch=5)
    part = first_sequences(model, residual_stream(model, x, y), 2)
    alone = residual_stream(model, x[:2], y[:2])
    assert part.loss == pytest.approx(alone.loss, rel=1e-6) and part.n_layers == LAYERS
    for mine, theirs in zip(part.h, alone.h):
        torch.testing.assert_close(mine, theirs)
    whole = residual_stream(model, x, y)
    assert first_sequences(model, whole, 9) is whole


def test_usefulness_at_another_tau_and_the_matched_tau():
    from cod.metrics.usefulness import Usefulness, matched_tau

    u = Usefulness(base_loss=2.0, loss=np.array([2.02, 2.1, 2.4, 3.0]), tau=0.1)  # rises 0.01, 0.05, 0.2, 0.5
    assert (u.effective, u.at(0.03).effective, u.at(0.6).effective) == (2, 3, 0)
    assert u.at(0.03).tau == 0.03 and u.tau == 0.1
    v = Usefulness(base_loss=1.0, loss=np.array([1.0, 1.3, 1.7, 1.9]), tau=0.1)  # rises 0, 0.3, 0.7, 0.9
    tau = matched_tau([u, v], share=0.75)  # 6 of the 8 pooled rises above it
    assert 0.01 < tau < 0.05
    assert sum(x.at(tau).effective for x in (u, v)) == 6
    with pytest.raises(ValueError, match="share=1"):
        matched_tau([u], share=1)


def test_the_authors_usefulness_is_left_out_where_the_scoring_tokens_cannot_fit_it():
    """The authors' fit is solved on the scoring tokens themselves: with at most width + 1 of them (an
    open-weight model's few windows) the analysis leaves it out instead of refusing the whole analysis."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=2, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))
    few = analyse_layers(model, ids[:2, :-1], ids[:2, 1:], ids[4:, :-1], ids[:1, :-1])  # 16 scored, width 16
    many = analyse_layers(model, ids[:4, :-1], ids[:4, 1:], ids[4:, :-1], ids[:1, :-1])  # 32 scored
    assert few.usefulness_authors is None and few.usefulness is not None
    assert many.usefulness_authors is not None and len(many.usefulness_authors.loss) == 2
