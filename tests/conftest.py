"""Shared fixtures: a tiny token dataset so training tests need no corpus."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test`: a worker a core, so one thread each
    torch.set_num_threads(1)

VOCAB = 300



def documentation() -> str:
    """README.md and the hand-written docs pages, one after the other: where the commands and code
    blocks a user is told to run live (the generated pages, cod.report.docs.PAGES, hold none)."""
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return "\n\n".join(page.read_text() for page in pages)

@pytest.fixture
def tiny_tokens(tmp_path):
    """A tokens_dir holding bpe300/{train,val}.bin of patterned random tokens."""
    folder = tmp_path / "tokens" / f"bpe{VOCAB}"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    pattern = rng.integers(0, VOCAB, 97)  # a repeating sequence a model can learn
    for split, n in (("train", 60_000), ("val", 6_000)):
        tokens = np.where(rng.random(n) < 0.8, np.resize(pattern, n), rng.integers(0, VOCAB, n))
        tokens.astype(np.uint16).tofile(folder / f"{split}.bin")
    (folder / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": VOCAB}))
    return tmp_path / "tokens"


def tiny_run(tokens_dir, *extra: str) -> list[str]:
    """Overrides of a run small enough for a test."""
    return [f"data.tokens_dir={tokens_dir}", f"data.vocab_size={VOCAB}", f"model.vocab_size={VOCAB}",
            "model.d_model=32", "model.n_layers=3", "model.n_heads=2", "model.max_seq_len=32",
            "data.seq_len=32", "data.batch_size=8", "train.steps=24", "train.log_every=4",
            "train.stats_every=8", "train.stats_tokens=64", "train.eval_tokens=2048", "train.ckpt_every=8",
            "optim.lr=1e-2",
            *extra]


def torchrun(*args: str, cwd=None, timeout: int = 300) -> None:
    """`torchrun ARGS` on the CPU (gloo, a thread a process), on a port free now,
    so that the tests of two pytest workers never share one. A run that outlives `timeout` is sent
    SIGABRT, whose Python tracebacks (PYTHONFAULTHANDLER) of the launcher and both processes fail
    the test: a hang names where it hangs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "torch.distributed.run", "--master_port", str(port), *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in (*_descendants(process.pid), process.pid):  # the processes run in sessions of their own
                with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                    os.kill(pid, signal.SIGABRT)
            output, _ = process.communicate()
            pytest.fail(f"torchrun ran past {timeout} s; its tracebacks:\n{output[-6000:]}")
    assert process.returncode == 0, output[-3000:]


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, from /proc (Linux)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


# Tests that take more than about two seconds on 2 idle cores (a pretrained model, a subprocess that
# trains, notebooks, the pipeline, fake-tensor sizing), marked `slow` here so that their files need
# no edit: `make test-fast` (`pytest -m "not slow"`) leaves them out. tests/test_pipeline.py and the
# classes of tests/test_pretrained.py carry the mark themselves. tests/test_suite.py checks that
# every name below still names a test.
SLOW = (
    "test_benchmark.py::test_side_by_side_rounds_give_the_median_ratio_and_its_range",
    "test_cli.py::test_re_execution_on_the_same_inputs_gives_the_same_bytes",
    "test_data.py::test_pinned_snapshot_matches_the_extraction_code",
    "test_data.py::test_snapshot_cli_pins_verifies_and_names_a_changed_source",
    "test_dvc_stages.py::test_dvc_shows_both_profiles_finals_the_claims_summary_and_a_curve",
    "test_dvc_stages.py::test_the_pipeline_page_shows_dvcs_graph_now",
    "test_experiments.py::test_a_forked_cpu_run_trains_from_the_repository_and_returns_its_status",
    "test_experiments.py::test_ctrl_c_stops_the_runs_at_their_checkpoints_and_prints_one_line",
    "test_experiments.py::test_default_profile_meets_the_miniatures_criterion",
    "test_experiments.py::test_forked_processes_ended_side_by_side_report_their_own_exit_status",
    "test_experiments.py::test_plan_prints_every_experiment_and_the_totals",
    "test_experiments.py::test_the_plan_table_counts_each_profiles_runs_and_measured_hours",
    "test_fingerprint.py::test_committed_runs_are_complete_under_the_current_code",
    "test_gpu_lease.py::test_the_dry_call_exports_after_every_item_and_imports_back",
    "test_gpu_path.py::test_a_peak_carried_along_depth_is_the_traced_peak",
    "test_gpu_path.py::test_compiled_model_trains_like_eager",
    "test_gpu_path.py::test_compiled_model_under_fsdp_trains_like_one_eager_process",
    "test_gpu_path.py::test_fsdp_with_two_processes_matches_one_process_and_resumes",
    "test_gpu_path.py::test_padded_targets_are_averaged_over_the_global_batch",
    "test_gpu_path.py::test_sizing_counts_weights_gradients_and_adamw_state",
    "test_gpu_path.py::test_the_lease_runs_dry_end_to_end_without_dvc_papermill_or_jupytext",
    "test_gpu_path.py::test_the_lease_skips_what_its_budget_cannot_hold",
    "test_interop.py::test_smollm2_converts_to_the_same_function",
    "test_memory_record.py::test_a_shape_sized_again_gives_the_recorded_sizes",
    "test_prepare.py::test_a_killed_preparation_resumes_to_the_same_bytes",
    "test_prepare.py::test_an_interrupted_preparation_resumes_to_the_same_bytes",
    "test_prepare.py::test_settings_are_checked_before_resuming_and_a_finished_preparation_is_kept",
    "test_prepare.py::test_the_token_target_stops_reading_the_source",
    "test_readme.py::test_the_notebook_commands_leave_the_committed_results_alone",
    "test_readme.py::test_the_python_blocks_run_as_written_each_on_its_own",
    "test_readme.py::test_the_training_commands_run_as_written",
    "test_train.py::test_a_signal_checkpoints_and_names_the_command_that_resumes",
    "test_train.py::test_ddp_with_two_processes_matches_one_process",
    "test_train.py::test_interrupted_run_resumes_to_the_same_result",
    "test_train.py::test_missing_corpus_is_named_before_training",
)


LONGEST_FIRST = ("test_pipeline.py", "test_gpu_path.py", "test_pretrained.py", "test_fingerprint.py", "test_readme.py",
                 "test_site.py")  # the files that take longest, longest first


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by mark
def pytest_collection_modifyitems(config, items):
    """Mark the tests of SLOW; put the longest files first, so that with one worker a core (`make
    test`) the longest starts at once and the others fill the other workers meanwhile."""
    for item in items:
        if f"{item.path.name}::{item.originalname}" in SLOW:
            item.add_marker(pytest.mark.slow)
    order = {name: rank for rank, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: order.get(item.path.name, len(order)))
