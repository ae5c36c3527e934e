"""Helpers of the tests that run several sweep processes at once (test_sweep, test_multihost)."""

import re
import subprocess

TINY_EXPERIMENT = """
from pe_research import encodings, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig

def runs():
    return [
        RunConfig(
            task=tasks.get("copy"),
            encoding=encodings.get(enc),
            model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
            train=TrainConfig(steps=3, batch_size=4, train_length=3, log_every=1),
            eval=EvalConfig(lengths=(3, 6), batch_size=4),
        )
        for enc in ("nope", "rope")
    ]
"""


def trained_runs(output):
    """Run directories a sweep process reports as trained by it ("[k/n] task/enc/seedN-hash")."""
    return [line.split()[1] for line in output.splitlines() if re.match(r"\[\d+/\d+\] ", line)]


def run_together(commands, cwd, timeout=120):
    """Start the commands at once; their outputs, or a failure naming the one that broke."""
    procs = [
        subprocess.Popen(c, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for c in commands
    ]
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=timeout)[0])
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    for proc, output in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, f"{proc.args} failed:\n{output}"
    return outputs
