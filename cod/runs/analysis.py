"""Analyses of trained weights, stored as small per-run files that notebooks read without the weights.

    python -m cod.runs.analysis b_depth               # what DVC's analyse@b_depth stage runs
    python -m cod.runs.analysis b_depth --device cpu  # the models on the CPU (default: cuda when available)
    python -m cod.runs.analysis open_weights gemma3-270m   # an open-weight decoder (analyse_open@gemma3-270m)
    python -m cod.runs.analysis open_weight_depth     # paper A's depth measures of the open-weight models (a1)

`params.yaml` declares each analysis under `analyses:` (the experiment whose runs it measures
and the metrics' settings). For every run of that experiment it writes, to
analyses/<profile>/<analysis>/<variant>_s<seed>/ (and the settings used to settings.json beside them):

    layers.json      every layer-effectiveness score (`cod.metrics.effectiveness.LayerAnalysis`)
    jacobians.npz    the mean block Jacobians (L, D, D), float16, of the seeds in `jacobian_seeds`
    zero_shot.json   accuracy per task in lm-evaluation-harness conventions (with chance and n)
    attention.json   with `attention_lengths`: attention sparsity and entropy at each evaluation length

With `layers: false` only zero_shot.json is written (the fine-tuned models of Table 2).

The open-weight decoders of `cod.eval.pretrained` are measured alike (`open_weights:` in
params.yaml) on held-out BBC news text, into analyses/<profile>/open_weights/<model>/layers.json,
without the Jacobian matrices (tens of MB at their widths; their distances from I are kept).

Paper A's depth measures of the open-weight decoders and encoders (`open_weight_depth:` in
params.yaml; `cod.metrics.depth`: removal cost and angular distances on groups of windows of BBC
news, the dominant dimensions, per-token Jacobians of spaced blocks, ARC-Easy with blocks removed
from the first decoder), which notebook a1 judges and draws, go to
analyses/<profile>/open_weight_depth/<model>/: depth.json (every number), corners.npz (the
top-left corners of the token-mean J - I of the blocks a figure shows, float32: only drawn), with
settings.json beside them.

The files' formats, and their readers that notebooks use, are `cod.records.analyses`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import typing
from pathlib import Path
from typing import Any

import torch

from cod.config import ConfigError
from cod.data.corpus import read_source
from cod.eval import LanguageModel, evaluate, load_tokenizer
from cod.eval.lm import TextEncoder
from cod.eval.pretrained import PRETRAINED, load_layered
from cod.metrics.attention_sparsity import attention_at_lengths
from cod.metrics.depth import measure_depth
from cod.metrics.effectiveness import analyse_layers, held_out_tokens
from cod.runs.params import PROFILES, ROOT, load_params, pick, resolve_runs
from cod.paths import analysis_dir
from cod.records.analyses import OPEN_DEPTH, OpenModelDepth, save_attention, save_layers, save_open_depth
from cod.records.results import load_model, train_command

LAYER_SETTINGS = ("eval_tokens", "fit_tokens", "jacobian_tokens", "jacobian_context", "tau")  # with layers: true
SETTINGS = ("experiment", *LAYER_SETTINGS, "zero_shot_tasks", "zero_shot_limit")
DEVICES = ("cpu", "cuda")
OPTIONAL = {
    "variants": None,  # the experiment's variants to measure; None: all of them
    "layers": True,  # measure the layer scores and Jacobians (false: zero-shot only)
    "zero_shot_part": None,  # 'eval': score only the half of each set that fine-tuning never sees
    "attention_lengths": None,  # evaluation lengths of attention sparsity and entropy (attention.json); None: none
    "attention_thresholds": [0.1, 0.01, 0.001],  # epsilon of attention sparsity (paper B eq. 15)
    "attention_tokens": 4096,  # validation tokens at each length: windows of the longest length
    "jacobian_seeds": None,  # seeds whose Jacobian matrices are stored (a3 and b1 draw them); None: all, []: none
}


def analysis_settings(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The settings of analysis `name` under the active profile (its `profiles:` entry applied
    last, as for experiments), checked: every key known, none missing."""
    analyses = {**(params.get("analyses") or {}), **(params.get("headline_analyses") or {})}
    if name not in analyses:
        raise ConfigError(f"analyses.{name} is not declared; allowed: {', '.join(analyses)}")
    spec = {**OPTIONAL, **analyses[name]}
    spec.update(spec.pop("profiles", {}).get(params["profile"], {}))
    required = set(SETTINGS) - (set() if spec["layers"] else set(LAYER_SETTINGS))
    unknown, missing = set(spec) - set(SETTINGS) - set(OPTIONAL), required - set(spec)
    if unknown or missing:
        raise ConfigError(f"analyses.{name}: unknown {sorted(unknown)}, missing {sorted(missing)}; "
                          f"allowed: {', '.join([*SETTINGS, *OPTIONAL])}")
    return spec


def analysed_runs(spec: dict[str, Any], params: dict[str, Any]) -> list:
    """The runs of the analysis's experiment that it measures (`variants`, when given, in that order)."""
    runs = resolve_runs(spec["experiment"], params)
    if spec["variants"] is None:
        return runs
    known = {run.variant for run in runs}
    unknown = [v for v in spec["variants"] if v not in known]
    if unknown:
        raise ConfigError(f"variants={unknown} are not variants of experiments.{spec['experiment']}; "
                          f"allowed: {', '.join(sorted(known))}")
    return [run for run in runs if run.variant in spec["variants"]]


def analyse(name: str, params: dict[str, Any], device: str = "cpu", progress: bool | None = None,
            only: list[str] | None = None) -> None:
    """Measure every run of analysis `name`'s experiment on `device` and write its per-run files;
    `only`: just these runs (`<variant>_s<seed>`), the others' files left as they are (runs that
    finish one by one are measured while their weights are here); `progress`: bars of the long
    loops on stderr (see cod.progress)."""
    spec = analysis_settings(name, params)
    profile = params["profile"]
    runs = analysed_runs(spec, params)
    if only is not None:
        runs = pick(runs, only, lambda run: run.name, "--runs", f"runs of analysis {name} under profile {profile!r}")
    longest = max(spec["attention_lengths"] or [0])
    too_short = {run.name: run.config.model.max_seq_len for run in runs if run.config.model.max_seq_len < longest}
    if too_short:
        raise ConfigError(f"analyses.{name}: attention_lengths up to {longest} exceed the max_seq_len of {too_short}; "
                          f"allowed: 1..{min(too_short.values())}")
    missing = [run.name for run in runs if not (run.weights / "model.pt").exists()]
    if missing:
        raise FileNotFoundError(f"no weights for {missing} in checkpoints/{profile}/{spec['experiment']}: "
                                f"`{train_command(spec['experiment'], profile)}` trains them")
    root = analysis_dir(profile, name, ROOT)
    root.mkdir(parents=True, exist_ok=True)
    (root / "settings.json").write_text(json.dumps(spec, indent=1) + "\n")
    torch.set_num_threads(1)
    for run in runs:
        model, cfg = load_model(run.weights / "model.pt")
        model = model.to(device)
        folder = root / run.name
        folder.mkdir(parents=True, exist_ok=True)
        if spec["layers"]:
            seq = cfg.data.seq_len
            x, y, x_fit = held_out_tokens(ROOT / cfg.data.dataset_dir / "val.bin", seq, spec["eval_tokens"],
                                          spec["fit_tokens"])
            x_jac = x[:spec["jacobian_tokens"], :min(spec["jacobian_context"], seq)]
            with torch.no_grad():
                layers = analyse_layers(model, x, y, x_fit, x_jac, tau=spec["tau"], seed=run.seed, progress=progress)
            keep = spec["jacobian_seeds"] is None or run.seed in spec["jacobian_seeds"]
            save_layers(layers, folder, matrices=keep)
        if spec["attention_lengths"]:
            idx, _, _ = held_out_tokens(ROOT / cfg.data.dataset_dir / "val.bin", longest,
                                        max(longest, spec["attention_tokens"]), 0)
            save_attention(attention_at_lengths(model, idx.to(device), spec["attention_lengths"],
                                                spec["attention_thresholds"]), folder)
        start = time.perf_counter()
        lm = LanguageModel(model, load_tokenizer(ROOT / cfg.data.dataset_dir))
        zero_shot = [evaluate(lm, task, limit=spec["zero_shot_limit"], part=spec["zero_shot_part"], progress=progress)
                     for task in spec["zero_shot_tasks"]]
        (folder / "zero_shot.json").write_text(json.dumps(zero_shot, indent=1) + "\n")
        timing = f"{sum(layers.seconds.values()):.1f}s of layer metrics, " if spec["layers"] else ""
        print(f"[analyse {name}] {run.name} on {device}: {len(model.blocks)} layers, {timing}"
              f"{time.perf_counter() - start:.1f}s of zero-shot", flush=True)


OPEN_SETTINGS = ("models", "seq_len", "eval_tokens", "permutation_tokens", "permutation_pairs", "fit_tokens",
                 "jacobian_tokens", "jacobian_context", "attention_thresholds", "tau", "threads")


def open_weight_settings(params: dict[str, Any]) -> dict[str, Any]:
    """`open_weights:` of params.yaml under the active profile, checked."""
    spec = dict(params.get("open_weights") or {})
    spec.update(spec.pop("profiles", {}).get(params["profile"], {}))
    unknown, missing = set(spec) - set(OPEN_SETTINGS), set(OPEN_SETTINGS) - set(spec)
    if unknown or missing:
        raise ConfigError(f"open_weights: unknown {sorted(unknown)}, missing {sorted(missing)}; "
                          f"allowed: {', '.join(OPEN_SETTINGS)}")
    if spec["permutation_tokens"] > spec["eval_tokens"]:
        raise ConfigError(f"open_weights.permutation_tokens={spec['permutation_tokens']} must not exceed "
                          f"open_weights.eval_tokens={spec['eval_tokens']} (it scores the first of those windows)")
    return spec


def leading_bos(tokenizer) -> int | None:
    """The token a model's own tokenizer puts before every text (Gemma's <bos>), or None."""
    bos = getattr(tokenizer, "bos_token_id", None)
    return bos if bos is not None and tokenizer("a")["input_ids"][:1] == [bos] else None


def open_weight_windows(tokenizer, seq_len: int, counts: typing.Sequence[int]) -> list[torch.Tensor]:
    """Windows of seq_len + 1 tokens (inputs and their next tokens) of BBC news (`data/raw/bbc.jsonl`,
    which no model here trained on), each article preceded by the tokenizer's document separator,
    split into groups of counts[k] windows: disjoint tokens for each purpose. Consecutive windows
    overlap by one token; for a model whose tokenizer starts every text with a BOS token (Gemma,
    which degrades without it), each window is that token followed by the next seq_len tokens, so
    every token is a target once."""
    bos = leading_bos(tokenizer)
    needed = sum(counts) * seq_len + (1 if bos is None else 0)
    encoder, ids = TextEncoder(tokenizer), []
    for record in read_source(ROOT / "data" / "raw", "bbc"):
        ids += encoder.document(record["text"])
        if len(ids) > needed:
            break
    if bos is not None:
        ids = ids[1:]  # the first document's separator is the BOS every window starts with
    if len(ids) < needed:
        raise ValueError(f"BBC news holds {len(ids)} tokens, fewer than the {needed} asked for")
    stream = torch.tensor(ids[:needed])
    if bos is None:
        windows = stream.unfold(0, seq_len + 1, seq_len)  # (sum(counts), seq_len + 1)
    else:
        body = stream.view(-1, seq_len)
        windows = torch.cat([torch.full((len(body), 1), bos), body], dim=1)
    return list(windows.split(list(counts)))


def analyse_open(name: str, params: dict[str, Any], device: str = "cpu", progress: bool | None = None) -> None:
    """Paper B's layer scores of open-weight decoder `name` (one of open_weights.models); `progress`:
    bars of the long loops on stderr (see cod.progress)."""
    spec = open_weight_settings(params)
    if name not in spec["models"]:
        raise ConfigError(f"model={name!r} is not in open_weights.models; allowed: {', '.join(spec['models'])}")
    seq = spec["seq_len"]
    torch.set_num_threads(spec["threads"])
    model, tokenizer = load_layered(name)
    model = model.to(device)
    counts = [max(1, spec[key] // seq) for key in ("eval_tokens", "fit_tokens")]
    scored, fit = open_weight_windows(tokenizer, seq, counts)
    context = min(spec["jacobian_context"], seq)
    jac = fit[-spec["jacobian_tokens"]:, :context]  # the starts of the last fit windows
    with torch.no_grad():
        layers = analyse_layers(model, scored[:, :-1], scored[:, 1:], fit[:, :-1], jac, tau=spec["tau"],
                                attention_thresholds=spec["attention_thresholds"],
                                permutation_sequences=max(1, spec["permutation_tokens"] // seq),
                                permutation_pairs=spec["permutation_pairs"], progress=progress)
    folder = analysis_dir(params["profile"], "open_weights", ROOT) / name
    save_layers(layers, folder, matrices=False)
    (folder / "settings.json").write_text(json.dumps({**spec, "model": name, "device": device}, indent=1) + "\n")
    print(f"[analyse open_weights] {name} on {device}: {len(model.blocks)} layers, "
          + ", ".join(f"{k} {v:.0f}s" for k, v in layers.seconds.items()), flush=True)


OPEN_DEPTH_SETTINGS = {  # open_weight_depth: in params.yaml, each setting and what it may be
    "models": "a list of distinct names of cod.eval.pretrained.PRETRAINED",
    "seq_len": "an integer from 3 up (an encoder's window is [CLS], at least one token, [SEP])",
    "text_tokens": "an integer from 1 up",
    "groups": "an integer from 1 up",
    "arc_limit": "an integer from 0 up (0 skips ARC-Easy)",
    "arc_layers": "null (the first, middle and last block) or a list of block indices from 0 up",
    "jacobian_sequences": "an integer from 1 to the number of windows, max(groups, text_tokens // seq_len)",
    "jacobian_seq_len": "an integer from 1 to seq_len",
    "jacobian_blocks": "an integer from 1 up",
    "threads": "an integer from 1 up",
}
ZERO_SHOT_TASK = "arc_easy"  # scored with blocks removed from the first decoder (the paper's MMLU: chance at 135M)
DOMINANT_SEQUENCES = 2  # windows of a decoder whose dominant dimensions are measured (`cod.metrics.depth`)


def _is_integer(value: Any, low: int, high: int | None = None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)


def open_depth_settings(params: dict[str, Any]) -> dict[str, Any]:
    """`open_weight_depth:` of params.yaml under the active profile, checked before any model loads:
    every key known, none missing, each value allowed (else one line naming the setting and what it
    may be). Whether arc_layers fit the decoder's depth is known once it is loaded."""
    spec = dict(params.get(OPEN_DEPTH) or {})
    spec.update(spec.pop("profiles", {}).get(params["profile"], {}))
    unknown, missing = set(spec) - set(OPEN_DEPTH_SETTINGS), set(OPEN_DEPTH_SETTINGS) - set(spec)
    if unknown or missing:
        raise ConfigError(f"{OPEN_DEPTH}: unknown {sorted(unknown)}, missing {sorted(missing)}; "
                          f"allowed: {', '.join(OPEN_DEPTH_SETTINGS)}")

    def refuse(key: str) -> ConfigError:
        allowed = OPEN_DEPTH_SETTINGS[key] + (f" ({', '.join(PRETRAINED)})" if key == "models" else "")
        return ConfigError(f"{OPEN_DEPTH}.{key}={spec[key]!r} is not allowed; allowed: {allowed}")

    models = spec["models"]
    if (not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models)
            or len(set(models)) < len(models) or any(m not in PRETRAINED for m in models)):
        raise refuse("models")
    for key, low in (("seq_len", 3), ("text_tokens", 1), ("groups", 1), ("arc_limit", 0), ("jacobian_blocks", 1),
                     ("threads", 1)):
        if not _is_integer(spec[key], low):
            raise refuse(key)
    layers = spec["arc_layers"]
    if layers is not None and not (isinstance(layers, list) and layers and all(_is_integer(b, 0) for b in layers)):
        raise refuse("arc_layers")
    if not _is_integer(spec["jacobian_sequences"], 1, max(spec["groups"], spec["text_tokens"] // spec["seq_len"])):
        raise refuse("jacobian_sequences")
    if not _is_integer(spec["jacobian_seq_len"], 1, spec["seq_len"]):
        raise refuse("jacobian_seq_len")
    return spec


def encoder_windows(tokenizer, n: int, length: int) -> torch.Tensor:
    """(n, length) windows `[CLS] ... [SEP]` of BBC news (`data/raw/bbc.jsonl`) for an encoder: the
    articles' tokens one after another, without separators, cut into n bodies of length - 2."""
    ids: list[int] = []
    for record in read_source(ROOT / "data" / "raw", "bbc"):
        ids += tokenizer(record["text"], add_special_tokens=False, verbose=False)["input_ids"]
        if len(ids) >= n * (length - 2):
            break
    if len(ids) < n * (length - 2):
        raise ValueError(f"BBC news holds {len(ids)} tokens, fewer than the {n * (length - 2)} asked for")
    body = torch.tensor(ids[: n * (length - 2)]).view(n, length - 2)
    cls, sep = torch.full((n, 1), tokenizer.cls_token_id), torch.full((n, 1), tokenizer.sep_token_id)
    return torch.cat([cls, body, sep], dim=1)


def depth_windows(kind: str, tokenizer, seq_len: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(idx, targets), each (n, seq_len): a decoder's consecutive windows of BBC news and their next
    tokens (`open_weight_windows`, b9's; Gemma's start with BOS), or an encoder's `encoder_windows`
    and, as its targets, the same ids (`cod.metrics.adapters.HFEncoder` measures the drop against the intact
    model's embedding of them)."""
    if kind == "decoder":
        (windows,) = open_weight_windows(tokenizer, seq_len, [n])
        return windows[:, :-1], windows[:, 1:]
    idx = encoder_windows(tokenizer, n, seq_len)
    return idx, idx


def removal_zero_shot(model, tokenizer, blocks: list[int], limit: int,
                      progress: bool | None = None) -> list[dict[str, Any]]:
    """ZERO_SHOT_TASK of a decoder intact (removed 'none') and with each of `blocks` (0-based) removed,
    a row each: {'removed', 'task', 'acc', 'acc_norm', 'chance', 'n'} on its first `limit` items."""
    n = len(model.blocks)

    def score(order: list[int] | None) -> dict[str, Any]:
        return evaluate(LanguageModel(model, tokenizer, order=order), ZERO_SHOT_TASK, limit=limit, progress=progress)

    return [{"removed": "none", **score(None)}] + [
        {"removed": block, **score([k for k in range(n) if k != block])} for block in blocks]


def analyse_open_depth(params: dict[str, Any], device: str = "cpu", progress: bool | None = None) -> None:
    """Paper A's depth measures (`cod.metrics.depth.measure_depth`) of each model of open_weight_depth.models,
    one at a time, and ARC-Easy with blocks removed from the first decoder; written to
    analyses/<profile>/open_weight_depth/<model>/ (`save_open_depth`), settings.json beside them.
    `progress`: bars of the long loops on stderr (see cod.progress)."""
    spec = open_depth_settings(params)
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)  # no measure draws from it: the Jacobians' tokens have a generator of their own
    seq = spec["seq_len"]
    n_windows = max(spec["groups"], spec["text_tokens"] // seq)
    decoders = [name for name in spec["models"] if PRETRAINED[name].kind == "decoder"]
    scored = decoders[0] if spec["arc_limit"] and decoders else None  # the decoder ARC-Easy scores
    root = analysis_dir(params["profile"], OPEN_DEPTH, ROOT)
    root.mkdir(parents=True, exist_ok=True)
    for folder in root.iterdir():  # models measured under earlier settings
        if folder.is_dir() and folder.name not in spec["models"]:
            shutil.rmtree(folder)
    (root / "settings.json").write_text(json.dumps({**spec, "device": device}, indent=1) + "\n")
    for name in spec["models"]:
        start = time.perf_counter()
        model, tokenizer = load_layered(name)  # our Transformer where it converts exactly, else HF's modules
        model = model.to(device)
        load_seconds = time.perf_counter() - start
        kind, n_layers = PRETRAINED[name].kind, len(model.blocks)
        zero_shot_blocks = spec["arc_layers"] or [0, n_layers // 2, n_layers - 1]
        if name == scored and max(zero_shot_blocks) >= n_layers:
            raise ConfigError(f"{OPEN_DEPTH}.arc_layers={spec['arc_layers']!r} is not allowed: {name} has {n_layers} "
                              f"blocks; allowed: block indices from 0 to {n_layers - 1}")
        idx, targets = depth_windows(kind, tokenizer, seq, n_windows)
        jacobian_idx = idx[:spec["jacobian_sequences"], :spec["jacobian_seq_len"]]
        if kind == "encoder":  # keep the [SEP] token at the end
            jacobian_idx = torch.cat([jacobian_idx[:, :-1], idx[:spec["jacobian_sequences"], -1:]], dim=1)
        measures = measure_depth(model, idx, targets, spec["groups"], jacobian_idx, spec["jacobian_blocks"],
                                 DOMINANT_SEQUENCES if kind == "decoder" else 0, progress)
        start = time.perf_counter()
        zero_shot = (removal_zero_shot(model, tokenizer, zero_shot_blocks, spec["arc_limit"], progress)
                     if name == scored else None)
        if zero_shot is not None:
            measures.seconds["zero_shot"] = time.perf_counter() - start
        sandwich = hasattr(model.blocks[0], "post_feedforward_layernorm")  # Gemma-3 normalises branch outputs too
        label = "Post-LN encoder" if kind == "encoder" else "sandwich-norm decoder" if sandwich else "Pre-LN decoder"
        save_open_depth(OpenModelDepth(kind, label, type(model).__name__, sum(p.numel() for p in model.parameters()),
                                       n_layers, idx.numel(), load_seconds, measures, zero_shot), root / name)
        print(f"[analyse {OPEN_DEPTH}] {name} on {device}: {n_layers} layers, loaded in {load_seconds:.0f}s, "
              + ", ".join(f"{k} {v:.0f}s" for k, v in measures.seconds.items()), flush=True)
        del model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("analysis", help=f"analysis name from params.yaml (analyses:), open_weights or {OPEN_DEPTH}")
    parser.add_argument("model", nargs="?", help="with open_weights: the decoder (one of open_weights.models)")
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--device", choices=DEVICES, help="where the models run (default: cuda when available)")
    parser.add_argument("--profile", choices=PROFILES, help="the profile to use (default: params.yaml's)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction,
                        help="progress bars of the long loops on stderr (default: when stderr is a terminal)")
    parser.add_argument("--runs", type=lambda text: text.split(","),
                        help="only these runs (comma-separated <variant>_s<seed>); the others' files stay")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is visible here; allowed here: cpu")
    params = load_params(args.params)
    params["profile"] = args.profile or params["profile"]
    if args.analysis == "open_weights":
        if args.model is None:
            parser.error(f"open_weights needs a model; allowed: {', '.join(open_weight_settings(params)['models'])}")
        analyse_open(args.model, params, device, args.progress)
    elif args.analysis == OPEN_DEPTH:
        if args.model is not None or args.runs is not None:
            parser.error(f"{OPEN_DEPTH} takes no model and no --runs: it measures every model of {OPEN_DEPTH}.models")
        analyse_open_depth(params, device, args.progress)
    else:
        analyse(args.analysis, params, device, args.progress, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
