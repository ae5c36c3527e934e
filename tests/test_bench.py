"""The speed benchmark's measurements: FLOP counts, compile counts, the persistent cache."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pe_research import bench, encodings, tasks
from pe_research.bench import accelerator
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps.experiments import load_experiment
from pe_research.training import evaluate

TINY = RunConfig(
    task=tasks.get("copy"),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=2, d_model=32, num_heads=2, mlp_dim=64),
    train=TrainConfig(steps=3, batch_size=8, train_length=8),
    eval=EvalConfig(batch_size=4),
)


def test_analytic_flops_agree_with_xlas_count_of_the_step():
    row = bench.measure_training(TINY, num_models=2, peak=1e11, steps=1, repeats=1)
    # XLA also counts elementwise work (softmax, norms, Adam), so it is a little above.
    assert row["flops_per_step"] <= row["xla_flops_per_step"] <= 1.3 * row["flops_per_step"]
    assert row["flops_per_step"] == 2 * bench.train_step_flops(TINY)
    assert row["tokens_per_step"] == 2 * 8 * TINY.task.seq_len(8, causal=True)
    assert row["tokens_per_s"] > 0 and 0 < row["fraction_of_peak"]


def test_the_peer_workloads_train_the_peers_encoder():
    """The speed comparison with the peer times the model the randomized experiment reproduces
    (its block, and dropout on as the peer trains), not a lighter one."""
    randomized = load_experiment(Path(__file__).parents[1] / "experiments" / "randomized.py")
    for name in ("peer", "peer-curriculum"):
        assert bench.WORKLOADS[name].cfg.model == randomized.ENCODER
    assert bench.PEER_MODEL.dropout == 0.1 and bench.PEER_MODEL.norm_position == "post"


SECOND_PROCESS = """
import json, sys
import jax
from pe_research import bench, cli, train
from pe_research.training import evaluate
from pe_research.config import RunConfig
cli._enable_compilation_cache()
cfg = RunConfig.from_dict(json.loads(sys.argv[1]))
graphdef, state = train.init_state(cfg, train.keys_from_seed(0))
params_K = jax.tree.map(lambda x: x[None], state.params)
with bench.CompileCounter() as counter:
    evaluate.evaluate_packed(cfg, graphdef, params_K)
print(json.dumps({"compiles": counter.compiles, "xla_compiles": counter.xla_compiles}))
"""


def test_eight_lengths_compile_four_programs_once_across_processes(tmp_path):
    """Evaluating 8 lengths needs one model program per power-of-two bucket (4) and one that
    samples the data of all lengths, and with the persistent compilation cache a second process
    compiles none of them again."""
    assert len(TINY.eval_lengths) == 8 and len(set(evaluate.buckets(TINY).values())) == 4
    env = {**os.environ, "PE_RESEARCH_JAX_CACHE": str(tmp_path / "cache")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # the CLI's cache, not the test session's
    script = textwrap.dedent(SECOND_PROCESS)
    counts = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, json.dumps(TINY.to_dict())],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert counts[0] == {"compiles": 5, "xla_compiles": 5}, counts
    assert counts[1] == {"compiles": 5, "xla_compiles": 0}, counts


def test_accelerator_suite_writes_one_json_at_tiny_sizes(tmp_path):
    path = accelerator.run_suite(tmp_path, tiny=True, steps=1, repeats=1, log=lambda _: None)
    data = json.loads(path.read_text())
    assert path.name == "accelerator.json" and data["device"] and data["tiny"]
    assert set(data["matmul_peak_tflop_per_s"]) == {"float32", "bfloat16"}
    seen = {(r["workload"], r["dtype"], r["models"]) for r in data["rows"]}
    assert seen == {
        ("main-packed", "float32", 1), ("main-packed", "float32", 2),
        ("peer", "float32", 1), ("peer", "bfloat16", 1),
        ("paper-scale", "bfloat16", 1), ("paper-scale", "float32", 1),
    }  # fmt: skip
    for row in data["rows"]:
        assert "error" not in row, row
        assert row["model_steps_per_s"] > 0 and row["real_tokens_per_s"] > 0
        assert 0 < row["fraction_of_fp32_peak"] and 0 < row["fraction_of_dtype_peak"]
    one, two = (r for r in data["rows"] if r["workload"] == "main-packed")
    assert one["vs_k_times_one"] == 1.0 and two["vs_k_times_one"] > 0
    assert "main-packed" in data["saturates_at"]


def test_accelerator_suite_runs_only_the_workloads_and_dtypes_named(tmp_path):
    path = accelerator.run_suite(
        tmp_path, tiny=True, only=("paper-scale:float32", "peer"), steps=1, repeats=1,
        log=lambda _: None,
    )  # fmt: skip
    data = json.loads(path.read_text())
    seen = [(r["workload"], r["dtype"], r["models"]) for r in data["rows"]]
    assert seen == [("peer", "float32", 1), ("peer", "bfloat16", 1), ("paper-scale", "float32", 1)]
    assert data["only"] == ["paper-scale:float32", "peer"] and "saturates_at" not in data


@pytest.mark.parametrize("entry", ["papers", "peer:float16", ":float32"])
def test_accelerator_suite_names_its_workloads_when_one_is_unknown(tmp_path, entry):
    with pytest.raises(ValueError, match=r"--only .*main-packed \(float32\), peer"):
        accelerator.run_suite(tmp_path, tiny=True, only=(entry,), log=lambda _: None)
    assert not (tmp_path / "accelerator.json").exists()  # checked before anything is measured
