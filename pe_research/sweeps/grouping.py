"""How a sweep's runs become programs: groups of runs trained as one packed program, why a
group trains apart, the shards of several hosts, and compiling the next groups ahead."""

from __future__ import annotations

import concurrent.futures

import jax

from pe_research import train
from pe_research.config import RunConfig, encoding_label, task_label
from pe_research.training import hyperparameters


def group_by_seed(configs: list[RunConfig]) -> list[list[int]]:
    """Indices of configs trained together (`train.group_key`: they differ only in their seed,
    packable numbers such as the learning rate or RoPE's base, or evaluation), groups in order
    of first appearance."""
    groups: dict[RunConfig, list[int]] = {}
    for i, cfg in enumerate(configs):
        groups.setdefault(train.group_key(cfg), []).append(i)
    return list(groups.values())


def split_reasons(configs: list[RunConfig], groups: list[list[int]]) -> list[str]:
    """For each group after the first, what keeps it apart from the nearest earlier group:
    the fields (shapes, or numbers no program takes as inputs) in which their keys differ."""
    keys = [train.group_key(configs[g[0]]) for g in groups]
    lines = []
    for j in range(1, len(groups)):
        apart = min((hyperparameters.differences(keys[j], keys[i]) for i in range(j)), key=len)
        first = configs[groups[j][0]]
        lines.append(
            f"{task_label(first.task)}/{encoding_label(first)} trains apart (differs in "
            f"{', '.join(apart)}: not packable into one program)"
        )
    return lines


def shard_of(groups: list[list[int]], index: int, count: int) -> list[list[int]]:
    """Every count-th group from `index` on: shards partition the groups, seeds stay together."""
    return groups[index::count]


COMPILE_AHEAD: bool | None = None
"""Whether a sweep compiles its next groups' programs in a background thread while one trains:
None (the default) on accelerators only, where the device trains while the host compiles; on a
CPU compilation and training would share the same cores."""
GROUPS_AHEAD = 2


class CompileAhead:
    """Compiles the training programs of the next GROUPS_AHEAD groups in a background thread."""

    def __init__(self, configs: list[RunConfig], groups: list[list[int]], checkpoint_every: int):
        on = COMPILE_AHEAD if COMPILE_AHEAD is not None else jax.default_backend() != "cpu"
        self.configs, self.groups, self.every = configs, groups, checkpoint_every
        self.pool = concurrent.futures.ThreadPoolExecutor(1) if on else None
        self.started: set[int] = set()

    def next_after(self, group: list[int]) -> None:
        if self.pool is None or group not in self.groups:
            return
        j = self.groups.index(group)
        for k in range(j + 1, min(j + 1 + GROUPS_AHEAD, len(self.groups))):
            if k not in self.started:
                self.started.add(k)
                self.pool.submit(self._compile, [self.configs[i] for i in self.groups[k]])

    def _compile(self, cfgs: list[RunConfig]) -> None:
        try:
            train.compile_group(cfgs, self.every)
        except Exception:  # the group's own training reports the error where it belongs
            pass

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
