"""A LLaMA-style decoder whose norm placement, per-layer states and layer order are open.

RMSNorm, SwiGLU (or a mixture of SwiGLU experts, `MoE`), rotary position embeddings
(optionally with Llama 3.1's scaling), causal scaled-dot-product attention with any number
of key/value heads (MHA, GQA, MQA), untied embeddings by default, no biases except optional
q/k/v ones (Qwen2). Parameter names follow Hugging Face's LLaMA (q_proj ... down_proj) so
weights map one to one. `model.causal=false` and `model.rope=false` give the bidirectional,
position-free blocks of a ViT (`cod.model.vision`, which replaces the layers before and after the
blocks).

Named states. `model(idx, keep=["resid_post", "mlp_out"])` returns, in `out.states`:
    resid_pre.{i}   residual stream entering step i (resid_pre.0 = token embeddings)
    attn_out.{i}    what the attention branch adds to the residual stream at step i
    resid_mid.{i}   residual stream between the attention and the MLP sublayer
    mlp_out.{i}     what the MLP branch adds at step i
    resid_post.{i}  residual stream leaving step i (the last one before the final norm)
    final_norm      output of the final norm (input to the unembedding)
where i counts executed steps; with the default order step i runs block i (0-based).

Mixture of experts. With `model.ffn=moe` every block's FFN is an `MoE`; the forward's
`out.aux_loss` holds its weighted load-balancing and z-losses, which the trainer adds to
`out.loss` (which stays the plain cross-entropy), and `out.routing` the expert loads.

Layer order. `model(idx, order=[0, 1, 1, 3])` runs block 1 twice and skips block 2;
an entry may also be any module mapping (B, T, D) -> (B, T, D), which replaces a block
without copying weights. Each block keeps its own depth-dependent factors (LNS 1/sqrt(l))
wherever it runs.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from cod.config import FFN, BranchGain, ConfigError, Init, LNSPosition, ModelConfig, Norm, RopeScaling
from cod.model.cpu_attention import softmax_attention
from cod.model.loss import linear_cross_entropy

SMALL_HEAD = 8  # largest head size that `cod.model.cpu_attention` serves on CPUs (measured in cod.tools.benchmark's notes)
LOW_PRECISION = (torch.bfloat16, torch.float16)  # activations the rotary tables are cast to (fp32/fp64 keep theirs)
GROUP_ROWS = 8  # rows a grouped product's token groups are padded to: 16 bytes of bf16, as its kernels align
STATE_KINDS = ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post", "final_norm")


@dataclass
class ModelOutput:
    logits: torch.Tensor | None  # (B, T, V); a ViT's: (B, n_classes); None when not asked for
    loss: torch.Tensor | None = None  # mean next-token (a ViT's: class) cross-entropy when targets are given
    states: dict[str, torch.Tensor] = field(default_factory=dict)  # name -> (B, T, D)
    aux_loss: torch.Tensor | None = None  # MoE: weighted load-balancing + z-loss, for training to add to `loss`
    routing: dict[str, torch.Tensor] = field(default_factory=dict)  # MoE: `Routing.summary` of the forward's layers


class RMSNorm(nn.Module):
    """RMSNorm with a per-channel gain. With `groups` > 1 it is Group-LN: each of `groups`
    contiguous channel groups of a token is divided by its own RMS (Wu & He's group
    normalisation taken per token, so it stays causal, in RMSNorm's form: no mean subtracted)."""

    def __init__(self, dim: int, eps: float, groups: int = 1):
        super().__init__()
        self.eps, self.groups = eps, groups
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wide = x.to(torch.promote_types(x.dtype, torch.float32))  # fp32 at least, float64 stays
        if self.groups == 1 and wide is x:  # one fused kernel: fp32 or float64 inputs
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
        grouped = wide.unflatten(-1, (self.groups, -1))  # (..., G, D/G)
        normed = (grouped * torch.rsqrt(grouped.pow(2).mean(-1, keepdim=True) + self.eps)).flatten(-2)
        return self.weight * normed.type_as(x)


class Rotary(nn.Module):
    """cos/sin tables of rotary embeddings, in Hugging Face LLaMA's half-split convention."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.max_seq_len, head_dim = cfg.max_seq_len, cfg.head_dim
        dtype = torch.promote_types(torch.get_default_dtype(), torch.float32)  # float64 in fingerprint probes
        inv_freq = 1.0 / cfg.rope_theta ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim)  # (hd/2,)
        if cfg.rope_scaling == RopeScaling.LLAMA3:
            inv_freq = llama3_frequencies(inv_freq, cfg)
        angles = torch.outer(torch.arange(cfg.max_seq_len, dtype=dtype), inv_freq)  # (T, hd/2)
        angles = torch.cat([angles, angles], dim=-1)  # (T, hd)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.cos[:seq_len], self.sin[:seq_len]


def llama3_frequencies(inv_freq: torch.Tensor, cfg: ModelConfig) -> torch.Tensor:
    """Llama 3.1's rescaled rotary frequencies (hd/2,). A frequency turning fewer than
    `rope_low_freq_factor` times over the pre-training context is divided by `rope_factor`, one
    turning more than `rope_high_freq_factor` times is kept, and in between the two are blended
    linearly in the number of turns."""
    turns = cfg.rope_original_max_seq_len * inv_freq / (2 * math.pi)  # (hd/2,)
    low, high = cfg.rope_low_freq_factor, cfg.rope_high_freq_factor
    kept = ((turns - low) / (high - low)).clamp(0.0, 1.0)  # share of the frequency kept unscaled
    return (1 - kept) * inv_freq / cfg.rope_factor + kept * inv_freq


def rotate_half(w: torch.Tensor, head_dim: int) -> torch.Tensor:
    """Rows (or entries) of w (heads * hd, ...) with each head's halves exchanged, the second
    negated: rotate_half(W) x equals HF LLaMA's rotate_half(W x), so rotary embeddings need
    no shuffling of activations."""
    halves = w.unflatten(0, (-1, 2, head_dim // 2))  # (heads, 2, hd/2, ...)
    return torch.cat([-halves[:, 1:], halves[:, :1]], dim=1).flatten(0, 2)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        self.causal, self.rope = cfg.causal, cfg.rope
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.head_dim, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.head_dim, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)

    def qkv(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]):
        """q (B, H, T, hd), k and v (B, KV, T, hd), from one matrix product. With rotary
        embeddings the product also yields rotate_half(q) and rotate_half(k) (`rotate_half` on
        the weights), so q' = q cos + rotate_half(q) sin takes two multiplications and a sum."""
        B, T, _ = x.shape
        H, KV, hd = self.n_heads, self.n_kv_heads, self.head_dim
        weights = [self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]
        biases = [self.q_proj.bias, self.k_proj.bias, self.v_proj.bias] if self.q_proj.bias is not None else None
        if self.rope:
            weights += [rotate_half(w, hd) for w in weights[:2]]
            biases = biases and biases + [rotate_half(b, hd) for b in biases[:2]]
        out = F.linear(x, torch.cat(weights), biases and torch.cat(biases))  # (B, T, (H+2KV)hd [+ (H+KV)hd])
        qk, v, rotated = out.split([(H + KV) * hd, KV * hd, out.shape[-1] - (H + 2 * KV) * hd], dim=-1)
        if self.rope:
            if qk.dtype in LOW_PRECISION and rope[0].dtype != qk.dtype:  # bf16 autocast: fp32 tables would promote q, k
                rope = tuple(table.to(qk.dtype) for table in rope)
            cos, sin = (table.repeat(1, H + KV) for table in rope)  # (T, (H+KV)hd)
            qk = qk * cos + rotated * sin
        q, k = qk.split([H * hd, KV * hd], dim=-1)
        return tuple(t.view(B, T, -1, hd).transpose(1, 2) for t in (q, k, v))

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        B, T, _ = x.shape
        y, _ = self.attend(*self.qkv(x, rope))  # (B, T, H, hd)
        return self.o_proj(y.reshape(B, T, -1))  # (B, T, D)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               probs: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Output (B, T, H, hd) and, if asked, the probabilities (B, H, T, T). Small heads on a
        CPU go through `cod.model.cpu_attention` (PyTorch's fused CPU kernel is up to 2x slower there);
        larger heads and GPUs through scaled_dot_product_attention's fused kernels."""
        B, H, T, hd = q.shape
        KV = self.n_kv_heads
        if not probs and (hd > SMALL_HEAD or q.device.type != "cpu"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=KV != H)
            return y.transpose(1, 2), None
        # the G = H / KV query heads sharing a key/value head are stacked along the rows
        y, p = softmax_attention(q.reshape(B * KV, (H // KV) * T, hd), k.reshape(B * KV, T, hd),
                                 v.reshape(B * KV, T, hd), self.causal)  # (B*KV, G*T, hd), (B*KV, G*T, T)
        y = y.view(B, KV, H // KV, T, hd).permute(0, 3, 1, 2, 4).reshape(B, T, H, hd)
        return y, p.view(B, H, T, T)

    def pattern(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Attention probabilities (B, H, T, T) for analysis (x is the normed input)."""
        return self.attend(*self.qkv(x, rope), probs=True)[1]


class SwiGLU(nn.Module):
    def __init__(self, cfg: ModelConfig, width: int | None = None):
        super().__init__()
        width = cfg.ffn_width if width is None else width  # hidden width
        self.gate_proj = nn.Linear(cfg.d_model, width, bias=False)
        self.up_proj = nn.Linear(cfg.d_model, width, bias=False)
        self.down_proj = nn.Linear(width, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, torch.cat([self.gate_proj.weight, self.up_proj.weight])).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)  # one product for gate and up


@dataclass
class Routing:
    """What one run of an `MoE` layer reports: its auxiliary losses and its expert load."""

    balance_loss: torch.Tensor  # () Switch load-balancing loss n * sum_i f_i P_i (1 when perfectly balanced)
    z_loss: torch.Tensor  # () router z-loss mean_t logsumexp(logits_t)^2
    counts: torch.Tensor  # (n,) token-assignments given to each expert (N k in all; detached)

    @property
    def load(self) -> torch.Tensor:
        """(n,) f_i: expert i's share of the token-assignments."""
        return self.counts / self.counts.sum()

    @staticmethod
    def summary(runs: Sequence["Routing"]) -> dict[str, torch.Tensor]:
        """Means of the losses over layer runs (as MegaBlocks' dropless MoE, whose loss averages over
        layers, so the weight of the auxiliary terms does not grow with depth), and per layer run
        (runs, n) the loads f and the assignment counts."""
        return {"balance_loss": torch.stack([r.balance_loss for r in runs]).mean(),
                "z_loss": torch.stack([r.z_loss for r in runs]).mean(),
                "load": torch.stack([r.load for r in runs]), "counts": torch.stack([r.counts for r in runs])}


def _compute_dtype(x: torch.Tensor, weight: torch.Tensor) -> torch.dtype:
    """The dtype a product of x and weight runs in: autocast's where it is on, else theirs."""
    if torch.is_autocast_enabled(x.device.type):
        return torch.get_autocast_dtype(x.device.type)
    return torch.promote_types(x.dtype, weight.dtype)


def router_losses(logits: torch.Tensor, probs: torch.Tensor, counts: torch.Tensor) -> Routing:
    """Auxiliary losses of one routing. logits and probs (N, n) over all n experts, counts (n,)
    token-assignments per expert (N k in all). Load balancing (Fedus et al. 2022, per expert
    i: f_i = counts_i / (N k), P_i = mean_t probs_{t,i}): n * sum_i f_i P_i, whose gradient
    flows through P; z-loss (Zoph et al. 2022): mean_t logsumexp(logits_t)^2."""
    counts = counts.detach()
    balance = probs.shape[-1] * (counts / counts.sum() * probs.mean(0)).sum()
    z = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return Routing(balance, z, counts)


class MoE(nn.Module):
    """Mixture of SwiGLU experts (paper B section 3.2.2 eq. 18 and 4.2.2).

    Each token x gets router logits s = W_r x over the n experts and probabilities
    p = softmax(s) over *all* n; the k largest are its experts E and their probabilities its
    gates, so y = sum_{i in E} p_i f_i(x) (+ f_shared(x) with a shared expert, always on, as
    DeepSeekMoE). The gates are not renormalised and sum to at most 1: the practice of OLMoE
    (norm_topk_prob false), whose setup and OLMo-core implementation paper B adopts
    (appendix C.5). With `moe_renormalize` they are divided by their sum, so they sum to 1 (the
    uniform-gating average of paper B's Theorem 6 is that case with equal probabilities).

    Dispatch is exact and dropless (no capacity): every token reaches its k experts; each
    expert gathers its tokens (index_select), runs on them, and adds its gated outputs back
    (index_add). Every expert runs, with no tokens if none chose it, so all its weights get
    (zero) gradients, as DDP expects. Each call computes its `Routing`; it is appended to
    `records` when that is a list (set by `Transformer.forward` for the duration of a forward).

    How tokens reach their experts (`dispatch`; "auto" picks by device):
      "each"     expert by expert, each finding its tokens (`assignments`: a nonzero(), which waits
                 for the device, per expert and layer); the CPU's, and the reference;
      "sorted"   the token-assignments sorted by expert once (a stable argsort: tokens stay in order
                 within an expert) and the experts run on contiguous slices: one wait per layer
                 (the slice sizes); GPUs without a grouped product;
      "grouped"  the same sorted assignments through one grouped product per projection
                 (`torch._grouped_mm`, each expert's group padded to GROUP_ROWS rows): no wait at
                 all; CUDA in bf16.
    All three add each token's expert outputs in the order of the experts.
    """

    dispatch = "auto"  # each | sorted | grouped | auto (a class setting; an instance may set its own)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.top_k, self.renormalize = cfg.moe_top_k, cfg.moe_renormalize
        self.router = nn.Linear(cfg.d_model, cfg.moe_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(cfg, cfg.expert_width) for _ in range(cfg.moe_experts))
        self.shared_expert = SwiGLU(cfg, cfg.expert_width) if cfg.moe_shared_expert else None
        self.records: list[Routing] | None = None

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (N, D) -> router logits and probabilities (N, n) in fp32 at least, gates (N, k) and
        the chosen experts (N, k), in decreasing order of probability."""
        logits = self.router(x)
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        probs = logits.softmax(dim=-1)
        gates, chosen = probs.topk(self.top_k, dim=-1)
        if self.renormalize:
            gates = gates / gates.sum(dim=-1, keepdim=True)
        return logits, probs, gates, chosen

    def assignments(self, chosen: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per expert i, the tokens (n_i,) that chose it among their k (N, k), and at which rank."""
        return [(chosen == i).nonzero(as_tuple=True) for i in range(len(self.experts))]

    def dispatch_for(self, x: torch.Tensor) -> str:
        """The dispatch this call takes: `dispatch`, or under "auto" "each" on the CPU and on a GPU
        "grouped" where its products run in bf16 and torch has the grouped product, else "sorted"."""
        if self.dispatch != "auto":
            return self.dispatch
        if x.device.type == "cpu":
            return "each"
        bf16 = _compute_dtype(x, self.router.weight) == torch.bfloat16
        return "grouped" if x.device.type == "cuda" and bf16 and hasattr(torch, "_grouped_mm") else "sorted"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])  # (N, D)
        logits, probs, gates, chosen = self.route(flat)
        dispatch = self.dispatch_for(flat)
        if dispatch == "each":
            out, counts = self._each(flat, gates, chosen)
        else:
            out, counts = self._sorted(flat, gates, chosen, grouped=dispatch == "grouped")
        if self.shared_expert is not None:
            out = out + self.shared_expert(flat)
        # computed on every call, so that activation checkpointing recomputes the same graph
        routing = router_losses(logits, probs, counts.to(probs.dtype))
        if self.records is not None:
            self.records.append(routing)
        return out.view(x.shape)

    def _each(self, flat: torch.Tensor, gates: torch.Tensor, chosen: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Expert by expert: the output (N, D) and the assignments per expert (n,)."""
        out = torch.zeros(flat.shape, dtype=torch.promote_types(flat.dtype, gates.dtype), device=flat.device)
        counts = []
        for expert, (token, slot) in zip(self.experts, self.assignments(chosen)):
            y = expert(flat.index_select(0, token)) * gates[token, slot].unsqueeze(-1)  # (n_i, D)
            out.index_add_(0, token, y.to(out.dtype))
            counts.append(token.numel())
        return out, torch.tensor(counts, dtype=gates.dtype, device=gates.device)

    def _sorted(self, flat: torch.Tensor, gates: torch.Tensor, chosen: torch.Tensor,
                grouped: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The token-assignments sorted by expert: the output (N, D) and the assignments per expert
        (n,), computed on the device (`grouped`: without reading anything back)."""
        n = len(self.experts)
        expert_of = chosen.flatten()  # (N k,) the expert of each token-assignment, token-major
        order = expert_of.argsort(stable=True)  # grouped by expert; tokens in order within each
        counts = torch.zeros(n, dtype=torch.long, device=flat.device)
        counts.index_add_(0, expert_of, torch.ones_like(expert_of))  # (n,); bincount would read its max back
        token = order // self.top_k  # (N k,) the token of each sorted assignment
        xs = flat.index_select(0, token)  # (N k, D)
        ys = self._grouped_experts(xs, counts) if grouped else self._split_experts(xs, counts)
        y = ys * gates.flatten().index_select(0, order).unsqueeze(-1)  # (N k, D)
        out = torch.zeros(flat.shape, dtype=torch.promote_types(flat.dtype, gates.dtype), device=flat.device)
        out.index_add_(0, token, y.to(out.dtype))
        return out, counts

    def _split_experts(self, xs: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """Each expert on its contiguous slice of the sorted rows xs (N k, D); one read-back."""
        pieces = xs.split(counts.tolist())
        return torch.cat([expert(piece) for expert, piece in zip(self.experts, pieces)])

    def _grouped_experts(self, xs: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """Every expert's SwiGLU on its slice of the sorted rows xs (N k, D) in two grouped products.
        Each group starts at a multiple of GROUP_ROWS rows: the rows are scattered into a buffer of
        static size (N k + n GROUP_ROWS), so no size is read back."""
        n, rows = len(self.experts), xs.shape[0]
        dtype = _compute_dtype(xs, self.experts[0].up_proj.weight)
        padded = (counts + GROUP_ROWS - 1) // GROUP_ROWS * GROUP_ROWS
        ends = padded.cumsum(0)
        offsets = ends.to(torch.int32)
        starts = ends - padded  # where each expert's group begins in the buffer
        first = counts.cumsum(0) - counts  # where each expert's rows begin in xs
        expert_of = torch.repeat_interleave(torch.arange(n, device=xs.device), counts, output_size=rows)
        position = starts.index_select(0, expert_of) + torch.arange(rows, device=xs.device) \
            - first.index_select(0, expert_of)  # (N k,) each row's place in the buffer
        buffer = xs.new_zeros((rows + n * GROUP_ROWS, xs.shape[1]), dtype=dtype).index_copy(0, position, xs.to(dtype))
        w_in = torch.stack([torch.cat([e.gate_proj.weight, e.up_proj.weight]).to(dtype) for e in self.experts])
        w_out = torch.stack([e.down_proj.weight.to(dtype) for e in self.experts])  # (n, D, F)
        with torch.autocast(xs.device.type, enabled=False):
            gate, up = torch._grouped_mm(buffer, w_in.transpose(1, 2), offs=offsets).chunk(2, dim=-1)  # (., F)
            hidden = (F.silu(gate) * up).contiguous()
            out = torch._grouped_mm(hidden, w_out.transpose(1, 2), offs=offsets)  # (., D)
        return out.index_select(0, position)


class LayerScale(nn.Module):
    """Learnable gain on a branch output: per channel (LayerScale) or one scalar (SkipInit)."""

    def __init__(self, size: int, init: float):
        super().__init__()
        self.gain = nn.Parameter(torch.full((size,), init))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gain


def _scaled(x: torch.Tensor, factor: float | torch.Tensor) -> torch.Tensor:
    return x if isinstance(factor, float) and factor == 1.0 else x * factor


POST_NORMS = (Norm.POST_LN, Norm.DEEPNORM, Norm.DEEPNORM_RELEASE, Norm.ADMIN)  # the norm sits on the residual stream
RELEASED_DEEPNORM_LAYERS = 32  # the depth whose alpha = (2 x 32)^(1/4) paper A's released code hard-codes


def deepnorm_alpha(norm: Norm, n_layers: int) -> float:
    """DeepNorm's residual weight: DeepNet's (2L)^(1/4), or the released code's constant for 32 layers."""
    if norm == Norm.DEEPNORM_RELEASE:
        return (2 * RELEASED_DEEPNORM_LAYERS) ** 0.25
    return (2 * n_layers) ** 0.25 if norm == Norm.DEEPNORM else 1.0


class Sublayer(nn.Module):
    """A branch (attention or FFN) with its norm(s), depth factors and residual connection.

    Pre-norm family:  y = (x + g(norm2(f(norm(x * a) * s)) * b)) * r
    Post-norm family: y = norm(w * x + g(f(x)))
    where s, a, b, r are LNS's 1/sqrt(l) at the chosen position (1 elsewhere), norm2 is the
    Sandwich-LN output norm, g an optional learnable gain, and w the residual weight: 1 for
    Post-LN, DeepNorm's constant alpha, Admin's learnable per-channel omega (set by
    `Transformer.profile_admin`). Group-LN is Pre-LN with grouped norms.
    """

    def __init__(self, branch: nn.Module, cfg: ModelConfig, layer: int, kind: str, norm: Norm):
        super().__init__()
        self.branch = branch
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps, cfg.norm_groups if norm == Norm.GROUP_LN else 1)
        self.post_norm = norm in POST_NORMS
        if norm == Norm.ADMIN:
            self.residual_weight = nn.Parameter(torch.ones(cfg.d_model))
        else:
            self.residual_weight = deepnorm_alpha(norm, cfg.n_layers)
        self.out_norm = RMSNorm(cfg.d_model, cfg.norm_eps) if norm == Norm.SANDWICH_LN else nn.Identity()
        self.gain = _branch_gain(cfg)
        factor = 1.0 / math.sqrt(layer) if norm == Norm.LNS else 1.0
        position = cfg.lns_position
        applies_here = {LNSPosition.ATTN_ONLY: kind == "attn", LNSPosition.MLP_ONLY: kind == "mlp"}.get(position, True)
        at = lambda *where: factor if position in where and applies_here else 1.0  # noqa: E731
        self.input_scale = at(LNSPosition.BEFORE_NORM)
        self.norm_scale = at(LNSPosition.AFTER_NORM, LNSPosition.ATTN_ONLY, LNSPosition.MLP_ONLY)
        self.output_scale = at(LNSPosition.AFTER_BRANCH)
        self.sum_scale = at(LNSPosition.AFTER_RESIDUAL)

    def normed_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the branch sees (pre-norm family)."""
        return _scaled(self.norm(_scaled(x, self.input_scale)), self.norm_scale)

    def forward(self, x: torch.Tensor, **branch_kwargs) -> tuple[torch.Tensor, torch.Tensor]:
        if self.post_norm:
            out = self.gain(self.branch(x, **branch_kwargs))
            return self.norm(_scaled(x, self.residual_weight) + out), out
        out = self.branch(self.normed_input(x), **branch_kwargs)
        out = _scaled(self.gain(self.out_norm(out)), self.output_scale)
        return _scaled(x + out, self.sum_scale), out


def _branch_gain(cfg: ModelConfig) -> nn.Module:
    if cfg.branch_gain == BranchGain.LAYERSCALE:
        return LayerScale(cfg.d_model, cfg.layerscale_init)
    if cfg.branch_gain == BranchGain.SKIPINIT:
        return LayerScale(1, 1.0 / math.sqrt(cfg.n_layers))
    return nn.Identity()


def block_norm(cfg: ModelConfig, layer: int) -> Norm:
    """Norm placement of block `layer` (1-based); resolves Mix-LN into Post- or Pre-LN."""
    if cfg.norm == Norm.MIX_LN:
        return Norm.POST_LN if layer <= math.floor(cfg.mix_ln_fraction * cfg.n_layers) else Norm.PRE_LN
    return cfg.norm


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.layer = layer  # 1-based depth index l
        norm = block_norm(cfg, layer)
        self.attn = Sublayer(Attention(cfg), cfg, layer, "attn", norm)
        self.mlp = Sublayer(MoE(cfg) if cfg.ffn == FFN.MOE else SwiGLU(cfg), cfg, layer, "mlp", norm)

    def forward(self, x: torch.Tensor, rope) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        mid, attn_out = self.attn(x, rope=rope)
        out, mlp_out = self.mlp(mid)
        return out, {"attn_out": attn_out, "resid_mid": mid, "mlp_out": mlp_out}


class Transformer(nn.Module):
    EMBEDDINGS = ("embed_tokens",)  # names of the input embeddings, exempt from weight decay by default

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.build_embedding()
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(1, cfg.n_layers + 1))
        last_norm = block_norm(cfg, cfg.n_layers)
        groups = cfg.norm_groups if last_norm == Norm.GROUP_LN else 1
        self.final_norm = nn.Identity() if last_norm in POST_NORMS else RMSNorm(cfg.d_model, cfg.norm_eps, groups)
        self.build_head()
        self.rotary = Rotary(cfg)
        self.reset_parameters()

    def build_embedding(self) -> None:
        """The layers in front of the first block: the token embedding."""
        self.embed_tokens = nn.Embedding(self.cfg.vocab_size, self.cfg.d_model)

    def build_head(self) -> None:
        """The layers behind the final norm: the unembedding (tied to the embedding if asked)."""
        self.lm_head = nn.Linear(self.cfg.d_model, self.cfg.vocab_size, bias=False)
        if self.cfg.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    # ------------------------------------------------------------------ initialisation
    def reset_parameters(self) -> None:
        cfg = self.cfg
        self.reset_embedding_and_head()
        for block in self.blocks:
            for name, linear in block.named_modules():
                if isinstance(linear, nn.Linear):
                    leaf = name.split(".")[-1]
                    if cfg.norm == Norm.DEEPNORM_RELEASE and leaf in _DEEPNORM_SCALED + ("q_proj", "k_proj"):
                        gain = (8 * cfg.n_layers) ** 0.25 if leaf in _DEEPNORM_SCALED else 1.0
                        nn.init.xavier_normal_(linear.weight, gain=gain)  # the released code's init, not DeepNet's
                    else:
                        nn.init.normal_(linear.weight, std=_init_std(cfg, block.layer, name))
                    if cfg.norm == Norm.DEEPNORM and leaf in _DEEPNORM_SCALED:
                        linear.weight.data.mul_((8 * cfg.n_layers) ** -0.25)
                    if linear.bias is not None:
                        nn.init.zeros_(linear.bias)
            for module in block.modules():
                if isinstance(module, RMSNorm):
                    nn.init.ones_(module.weight)
                elif isinstance(module, LayerScale):
                    init = cfg.layerscale_init if module.gain.numel() > 1 else 1.0 / math.sqrt(cfg.n_layers)
                    nn.init.constant_(module.gain, init)
        if isinstance(self.final_norm, RMSNorm):
            nn.init.ones_(self.final_norm.weight)
        if cfg.norm == Norm.ADMIN and not next(self.parameters()).is_meta:
            self.profile_admin()

    def reset_embedding_and_head(self) -> None:
        """N(0, embed_init_std^2) embedding (init_std unless set) and N(0, init_std^2) unembedding."""
        std = self.cfg.init_std
        embed_std = std if self.cfg.embed_init_std is None else self.cfg.embed_init_std
        nn.init.normal_(self.embed_tokens.weight, std=embed_std)
        if not self.cfg.tie_embeddings:
            nn.init.normal_(self.lm_head.weight, std=std)

    @torch.no_grad()
    def profile_admin(self, idx: torch.Tensor | None = None) -> list[float]:
        """Admin's initialisation (Liu et al. 2020, section 4.3). One forward at omega = 1
        measures every sublayer's input x_{i-1} and branch output f_i (attention and MLP
        counted separately, in order); then omega_i = sqrt((Var[x_0] + sum_{j<i} Var[f_j]) /
        Var[x_{i-1}]), so that omega_i * x_{i-1} has the variance a Pre-LN residual stream
        would have there. Post-norm inputs have unit variance after the first sublayer, where
        this is Liu et al.'s sqrt(sum_{j<i} Var[f_j]) plus the embeddings' share; at the first
        sublayer it is 1 (the embeddings pass unweighted). Variances are over all elements; `idx`
        defaults to 8 sequences of random token ids, which profile like text at initialisation
        (the embedding rows are i.i.d.; `random_input`). Returns the omegas."""
        sublayers = [sub for block in self.blocks for sub in (block.attn, block.mlp)]
        for sub in sublayers:
            sub.residual_weight.fill_(1.0)
        idx = self.random_input() if idx is None else idx
        keep = ["resid_pre", "attn_out", "resid_mid", "mlp_out"]
        states = self(idx.to(next(self.parameters()).device), keep=keep).states
        total, omegas = states["resid_pre.0"].var(), []
        for i, sub in enumerate(sublayers):
            block, is_attn = i // 2, i % 2 == 0
            inputs = states[f"resid_pre.{block}" if is_attn else f"resid_mid.{block}"]
            omegas.append((total / inputs.var()).sqrt().item())
            sub.residual_weight.fill_(omegas[-1])
            total = total + states[f"{'attn' if is_attn else 'mlp'}_out.{block}"].var()
        return omegas

    def random_input(self) -> torch.Tensor:
        """A fixed batch of 8 random inputs for profiling: token ids (8, min(64, max_seq_len))."""
        shape = (8, min(64, self.cfg.max_seq_len))
        return torch.randint(self.cfg.vocab_size, shape, generator=torch.Generator().manual_seed(0))

    # ------------------------------------------------------------------ forward pieces
    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, D) residual stream entering the first block."""
        if idx.shape[1] > self.cfg.max_seq_len:
            raise ConfigError(
                f"sequence length {idx.shape[1]} exceeds model.max_seq_len={self.cfg.max_seq_len}"
            )
        return self.embed_tokens(idx)

    def run_blocks(
        self,
        x: torch.Tensor,
        order: Sequence[int | nn.Module] | None = None,
        keep: Iterable[str] = (),
        states: dict[str, torch.Tensor] | None = None,
        first_step: int = 0,
    ) -> torch.Tensor:
        """Run blocks in `order` on the residual stream x (B, T, D); store kept states.

        `first_step` numbers the states when resuming from a cached prefix.
        """
        keep = _check_keep(keep)
        states = {} if states is None else states
        rope = self.rotary(x.shape[1])
        order = range(len(self.blocks)) if order is None else order
        for step, entry in enumerate(order, start=first_step):
            block = entry if isinstance(entry, nn.Module) else self.blocks[operator.index(entry)]
            if "resid_pre" in keep:
                states[f"resid_pre.{step}"] = x
            if isinstance(block, Block):
                x, branches = block(x, rope)
                states.update({f"{kind}.{step}": v for kind, v in branches.items() if kind in keep})
            else:
                x = block(x)
            if "resid_post" in keep:
                states[f"resid_post.{step}"] = x
        return x

    def head(
        self, x: torch.Tensor, targets: torch.Tensor | None = None, logits: bool = True
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Final norm and unembedding; (B, T, D) -> logits (B, T, V) and the mean loss over
        targets other than -100. With logits=False and targets, only the loss is formed, in
        chunks that never hold the full logits (`cod.model.loss`)."""
        h = self.final_norm(x)
        if not logits and targets is not None:
            return None, linear_cross_entropy(h.flatten(0, 1), self.lm_head.weight, targets.flatten())
        out = self.lm_head(h)
        loss = None
        if targets is not None:
            wide = out.to(torch.promote_types(out.dtype, torch.float32))
            loss = F.cross_entropy(wide.flatten(0, 1), targets.flatten())
        return out, loss

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        *,
        order: Sequence[int | nn.Module] | None = None,
        keep: Iterable[str] = (),
        logits: bool = True,
    ) -> ModelOutput:
        """idx (B, T) token ids; targets (B, T) or None. logits=False skips the logits where only
        the loss is wanted (training), which saves their memory and time."""
        keep = _check_keep(keep)
        states: dict[str, torch.Tensor] = {}
        moes = [m for m in self.modules() if isinstance(m, MoE)] if self.cfg.ffn == FFN.MOE else []
        records: list[Routing] = []  # every MoE run of this forward, in order
        for moe in moes:
            moe.records = records
        try:
            x = self.run_blocks(self.embed(idx), order=order, keep=keep, states=states)
        finally:
            for moe in moes:
                moe.records = None
        if "final_norm" in keep:
            states["final_norm"] = self.final_norm(x)
        out, loss = self.head(x, targets, logits)
        if not records:
            return ModelOutput(logits=out, loss=loss, states=states)
        routing = Routing.summary(records)
        aux_loss = self.cfg.moe_balance_coef * routing["balance_loss"] + self.cfg.moe_z_coef * routing["z_loss"]
        return ModelOutput(logits=out, loss=loss, states=states, aux_loss=aux_loss, routing=routing)

    def num_params(self, embeddings: bool = True) -> int:
        total = sum(p.numel() for p in self.parameters())
        if not embeddings:
            total -= sum(p.numel() for p in self.embedding_parameters())
        return total

    def embedding_parameters(self) -> set[nn.Parameter]:
        """Parameters of the layers before and after the blocks (left out by num_params(embeddings=False))."""
        return set(self.parameters()) - set(self.blocks.parameters()) - set(self.final_norm.parameters())


_INPUT_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
_OUTPUT_PROJECTIONS = ("o_proj", "down_proj")
_DEEPNORM_SCALED = ("v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _init_std(cfg: ModelConfig, layer: int, name: str) -> float:
    """Standard deviation of one block matrix under the configured scheme."""
    leaf = name.split(".")[-1]
    if cfg.init == Init.SCALED and leaf in _OUTPUT_PROJECTIONS:
        return cfg.init_std / math.sqrt(2 * cfg.n_layers)
    if cfg.init == Init.DEPTH_SCALED:
        return cfg.init_std / math.sqrt(2 * layer)
    if cfg.init == Init.OLMO:
        if leaf in _OUTPUT_PROJECTIONS:
            return 1.0 / math.sqrt(2 * cfg.d_model * layer)
        return 1.0 / math.sqrt(cfg.d_model)
    return cfg.init_std


def _check_keep(keep: Iterable[str]) -> frozenset[str]:
    keep = frozenset([keep] if isinstance(keep, str) else keep)
    unknown = keep - set(STATE_KINDS)
    if unknown:
        raise ConfigError(f"keep={sorted(unknown)} not allowed; allowed: {', '.join(STATE_KINDS)}")
    return keep
