"""Shards of a sweep from the scheduler (`--shard auto`): SLURM job arrays, Kubernetes Indexed
Jobs; together the processes cover the grid once, seeds kept together."""

import pytest

from pe_research import encodings, tasks
from pe_research.config import RunConfig
from pe_research.sweeps import grouping, sweep

GRID = [
    RunConfig(task=tasks.get(t), encoding=encodings.get(e), seed=s)
    for t in ("copy", "reverse", "offset")
    for e in ("nope", "rope", "alibi")
    for s in (0, 1)
]


def partition(envs, count=None):
    groups = grouping.group_by_seed(GRID)
    shards = [sweep.parse_shard("auto", count, env) for env in envs]
    return shards, [grouping.shard_of(groups, *shard) for shard in shards]


def covered_once(parts):
    runs_ = sorted(i for part in parts for group in part for i in group)
    return runs_ == list(range(len(GRID)))


def test_a_slurm_array_gives_each_task_its_shard():
    # --array=1-7:2 (tasks 1, 3, 5, 7): the index counts from the array's first task, by its step.
    envs = [
        {"SLURM_ARRAY_TASK_ID": str(t), "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "2",
         "SLURM_ARRAY_TASK_COUNT": "4"}
        for t in (1, 3, 5, 7)
    ]  # fmt: skip
    shards, parts = partition(envs)
    assert shards == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert covered_once(parts) and all(parts)


def test_a_kubernetes_indexed_job_gives_each_pod_its_shard():
    envs = [{"JOB_COMPLETION_INDEX": str(i), "JOB_COMPLETIONS": "3"} for i in range(3)]
    shards, parts = partition(envs)
    assert shards == [(0, 3), (1, 3), (2, 3)] and covered_once(parts)
    # Without JOB_COMPLETIONS, --shard-count gives the job's size.
    shards, parts = partition([{"JOB_COMPLETION_INDEX": str(i)} for i in range(2)], count=2)
    assert shards == [(0, 2), (1, 2)] and covered_once(parts)
    with pytest.raises(ValueError, match="pass --shard-count N .*or set JOB_COMPLETIONS"):
        sweep.parse_shard("auto", None, {"JOB_COMPLETION_INDEX": "0"})
    with pytest.raises(ValueError, match="index 5, outside the 3 shards"):
        sweep.parse_shard("auto", None, {"JOB_COMPLETION_INDEX": "5", "JOB_COMPLETIONS": "3"})


def test_without_a_scheduler_auto_names_the_variables_it_reads():
    with pytest.raises(ValueError, match="SLURM_ARRAY_TASK_ID .* JOB_COMPLETION_INDEX .* --shard"):
        sweep.parse_shard("auto", None, {})
    assert sweep.parse_shard("2/5") == (2, 5)
