"""The example files of docs/clusters.md (a SLURM array script, a Kubernetes Indexed Job, a TPU
pod script): the shell scripts parse, and each asks the sweep for its shard the way its engine
numbers its workers. None of them ran here: that needs the cluster."""

import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def bash_parses(path):
    checked = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_slurm_array_script_parses_and_shards_by_array_task():
    script = EXAMPLES / "slurm_array.sbatch"
    bash_parses(script)
    text = script.read_text()
    assert "pe-research sweep" in text and "--shard auto" in text and "--no-summarize" in text
    assert "--tables-only" in text and "afterany" in text  # the table step, once all have ended


def test_the_tpu_pod_script_parses_and_joins_the_hosts_in_one_jax_job():
    script = EXAMPLES / "tpu_pod.sh"
    bash_parses(script)
    text = script.read_text()
    assert "--worker=all" in text and "--shard auto" in text and "--coordinator" in text
    assert "--tables-only" in text


def test_the_kubernetes_job_is_indexed_with_its_size_in_the_environment():
    text = (EXAMPLES / "k8s_indexed_job.yaml").read_text()
    lines = [line.strip() for line in text.splitlines()]
    assert "completionMode: Indexed" in lines
    assert {"completions: 8", "parallelism: 8", "- name: JOB_COMPLETIONS", 'value: "8"'} <= set(
        lines
    )
    assert '"--shard", "auto",' in text and "persistentVolumeClaim:" in lines
    yaml = pytest.importorskip("yaml")  # the structure too, where PyYAML is installed
    shards, tables = yaml.safe_load_all(text)
    spec = shards["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 8, 8)
    (container,) = spec["template"]["spec"]["containers"]
    assert {"name": "JOB_COMPLETIONS", "value": "8"} in container["env"]
    assert container["command"][:5] == ["pe-research", "sweep", "leaderboard", "--shard", "auto"]
    assert "--tables-only" in tables["spec"]["template"]["spec"]["containers"][0]["command"]
    assert [d["metadata"]["labels"]["step"] for d in (shards, tables)] == ["shards", "tables"]
