"""A causal language model and its tokenizer behind the calls evaluation needs.

`LanguageModel(model, tokenizer)` accepts our `Transformer` with a `tokenizers.Tokenizer`
(the `tokenizer.json` beside a token array), or a Hugging Face `*ForCausalLM` with its
tokenizer; `order` evaluates the model with blocks removed, repeated or replaced (as in
`Transformer.run_blocks`). Every text is encoded without special tokens and preceded by
one `prefix` token, the document separator the model saw in training: `<|endoftext|>`
where the vocabulary has it (our BPE, GPT-NeoX, SmolLM2), else the tokenizer's BOS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from tokenizers import Tokenizer
from torch import nn

from cod.metrics.adapters import HFEncoder, as_layer_model
from cod.metrics.stream import device_of
from cod.model import Transformer

EOT = "<|endoftext|>"


def load_tokenizer(path: str | Path):
    """A `tokenizers.Tokenizer` from a tokenizer.json file or a folder holding one."""
    path = Path(path)
    path = path / "tokenizer.json" if path.is_dir() else path
    if not path.is_file():
        from cod.data.prepare import prepare_command_of  # lazy: the corpus modules, for this message only

        folder = path.parent if path.suffix == ".json" else path  # tokenizer.json lies in its tokens' folder
        raise FileNotFoundError(f"tokenizer {path} not found: `{prepare_command_of(folder)}` makes it")
    return Tokenizer.from_file(str(path))


def _positions(model) -> int | None:
    if isinstance(model, Transformer):
        return model.cfg.max_seq_len
    return getattr(model.config, "max_position_embeddings", None)


class TextEncoder:
    """Text to token ids the way the model saw documents in training: no special tokens added,
    one `prefix` token (the document separator) before each document."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.prefix = self._prefix_token()

    def _prefix_token(self) -> int | None:
        if hasattr(self.tokenizer, "token_to_id"):  # tokenizers.Tokenizer
            return self.tokenizer.token_to_id(EOT)
        if EOT in self.tokenizer.get_vocab():  # a membership test: SmolLM2's unknown token *is* EOT
            return self.tokenizer.convert_tokens_to_ids(EOT)
        return self.tokenizer.bos_token_id

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, no special tokens added."""
        if hasattr(self.tokenizer, "token_to_id"):
            return self.tokenizer.encode(text, add_special_tokens=False).ids
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def document(self, text: str) -> list[int]:
        """`prefix` followed by the ids of `text`."""
        return ([] if self.prefix is None else [self.prefix]) + self.encode(text)

    def request(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """(context ids, continuation ids) the lm-evaluation-harness way: the context is encoded as
        `document(context)`, the whole as `document(context + continuation)`, and the continuation's
        ids are the whole's after the context's (trailing spaces of the context move to the
        continuation first)."""
        moved = len(context) - len(context.rstrip(" "))
        if moved:
            context, continuation = context[:-moved], context[-moved:] + continuation
        head = self.document(context)
        if not head:
            raise ValueError("an empty context needs a prefix token: give a tokenizer that has one")
        return head, self.document(context + continuation)[len(head):]


class LanguageModel:
    """Token ids in, per-position log-probabilities out, for any model with a tokenizer."""

    def __init__(self, model: nn.Module, tokenizer=None, *, order: Sequence[int | nn.Module] | None = None,
                 max_len: int | None = None):
        self.model = as_layer_model(model)
        if isinstance(self.model, HFEncoder):
            raise TypeError("evaluation scores next tokens: `model` must be a causal LM, not an encoder")
        self.model.eval()
        self.tokenizer, self.order = tokenizer, order
        limits = [n for n in (_positions(self.model), max_len) if n]
        self.max_len = min(limits) if limits else None  # longest input; longer ones lose their start
        self.text = None if tokenizer is None else TextEncoder(tokenizer)
        self.prefix = None if tokenizer is None else self.text.prefix

    @property
    def device(self) -> torch.device:
        """Where the model's weights are, and evaluation makes its inputs."""
        return device_of(self.model)

    def _text(self) -> TextEncoder:
        if self.text is None:
            raise ValueError("this LanguageModel has no tokenizer: pass `tokenizer` to score text")
        return self.text

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, no special tokens added."""
        return self._text().encode(text)

    def document(self, text: str) -> list[int]:
        """`prefix` followed by the ids of `text`."""
        return self._text().document(text)

    def request(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """(context ids, continuation ids); see `TextEncoder.request`."""
        return self._text().request(context, continuation)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, D) last residual stream of the (possibly reordered) model."""
        return self.model.run_blocks(self.model.embed(idx), order=self.order)

    def head(self, x: torch.Tensor, targets: torch.Tensor | None = None):
        """(B, T, D) -> logits (B, T, V) and the mean next-token loss."""
        return self.model.head(x, targets)
