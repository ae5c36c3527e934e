"""Orbax checkpoints of a run: parameters, optimizer state, step and RNG keys.

Each run directory keeps its own model's checkpoints in `checkpoints/<step>/`, saved every N
steps and at the end, the last few kept. Orbax writes a checkpoint to a temporary folder and
renames it when complete, so a process killed mid-save leaves the previous checkpoints intact
(the temporary folder is cleared on the next start). Batches and positions are functions of
(seed, step), so step and keys are the whole data and RNG state: a resumed run repeats the
uninterrupted one bit for bit.

A checkpoint that cannot be read back (truncated or corrupted files) is reported and skipped;
training resumes from the newest one that reads.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from pe_research import runs
from pe_research.training import selection

DIR = runs.CHECKPOINTS
KEEP = 3


def manager(run_dir: Path, *, keep: int = KEEP) -> ocp.CheckpointManager:
    """The checkpoint manager of one run, this process's alone.

    By default orbax coordinates every save, deletion and folder creation across all processes
    of a multi-process JAX job, as if each process held a shard of one model. Here each process
    trains runs of its own (sweeps split runs, not models), at its own steps, so coordinating
    would make a process wait at a barrier no other process reaches: the manager is told that
    this process is the only one taking part."""
    # Orbax logs every save at INFO through absl; a run saves often, so keep it to warnings.
    logging.getLogger("absl").setLevel(logging.WARNING)
    folder = (Path(run_dir) / DIR).absolute()
    folder.mkdir(parents=True, exist_ok=True)  # orbax's create=True is a cross-process step
    me = jax.process_index()
    return ocp.CheckpointManager(
        folder,
        options=ocp.CheckpointManagerOptions(
            max_to_keep=keep,
            cleanup_tmp_directories=True,
            create=False,
            multiprocessing_options=ocp.options.MultiprocessingOptions(
                primary_host=me, active_processes={me}
            ),
        ),
    )


def _item(state: Any, keys: dict[str, jax.Array]) -> dict[str, Any]:
    return {"state": state, "keys": {name: jax.random.key_data(k) for name, k in keys.items()}}


def save(mgr: ocp.CheckpointManager, step: int, state: Any, keys: dict[str, jax.Array]) -> None:
    """Save one model's host copy of `state` (its arrays fetched first, so the caller may donate
    the device buffers to the next step right away) and its RNG keys, as step `step`."""
    host = jax.device_get(_item(state, keys))
    mgr.save(step, args=ocp.args.StandardSave(host), force=True)


class Checkpointer:
    """Checkpoints of the runs of a packed program: each run saves its own model of the pack
    (`model_of[r]`) with its RNG keys, every `every` steps and at the last step."""

    def __init__(
        self,
        run_dirs: list[Path],
        model_of: list[int],
        keys: list[dict[str, jax.Array]],
        *,
        every: int,
        last: int,
    ):
        self.model_of, self.keys, self.every, self.last = model_of, keys, every, last
        self._stack = contextlib.ExitStack()
        self._managers = []
        for d in run_dirs:
            mgr = self._stack.enter_context(contextlib.closing(manager(d)))
            self._stack.callback(mgr.wait_until_finished)  # runs before close
            self._managers.append(mgr)

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()

    def due(self, step: int) -> bool:
        return step % self.every == 0 or step == self.last

    def save(self, step: int, state_S: Any, run_ids: list[int]) -> None:
        """Save step `step` of the runs `run_ids` (each its model's slice of `state_S`)."""
        for r in run_ids:
            k = self.model_of[r]
            save(self._managers[r], step, jax.tree.map(lambda x, k=k: x[k], state_S), self.keys[r])


def steps(run_dir: Path) -> list[int]:
    """Steps of the complete checkpoints of a run, oldest first. Only reads the folder (orbax
    renames a checkpoint to its step number once complete), so another process may be saving."""
    folder = Path(run_dir) / DIR
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def discard_after(run_dir: Path, step: int) -> None:
    """Delete the checkpoints of steps after `step` (unreadable ones a resumed run skipped; it
    writes them again)."""
    for later in (s for s in steps(run_dir) if s > step):
        shutil.rmtree(Path(run_dir) / DIR / str(later))


def restore(run_dir: Path, step: int, like_state: Any, keys: dict[str, jax.Array]) -> Any:
    """One model's state at `step`, shaped like `like_state` (a TrainState, or a tuple whose
    first item is one and whose others travel with it: the best parameters of select_best).

    ValueError if the checkpoint cannot be read, or holds another seed's keys.
    """
    abstract = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), _item(like_state, keys)
    )
    mgr = manager(run_dir)
    try:
        item = mgr.restore(step, args=ocp.args.StandardRestore(abstract))
    except Exception as e:  # orbax and tensorstore raise many kinds on damaged files
        raise ValueError(
            f"checkpoint {step} of {run_dir} cannot be read ({type(e).__name__}: {e})"[:400]
        ) from None
    finally:
        mgr.close()
    for name, k in keys.items():
        if not np.array_equal(item["keys"][name], np.asarray(jax.random.key_data(k))):
            raise ValueError(
                f"checkpoint {step} of {run_dir} holds another seed's {name} key: the run "
                "directory was copied from another run. Delete its checkpoints/ to start over."
            )
    state = item["state"]
    train_state = state[0] if isinstance(state, tuple) and not hasattr(state, "step") else state
    held = int(train_state.step)
    if held != step:
        raise ValueError(f"checkpoint {step} of {run_dir} holds step {held}")
    return state


def restore_latest(
    run_dirs: list[Path], like_states: list[Any], keys: list[dict[str, jax.Array]]
) -> tuple[int, list[Any]] | None:
    """The newest step checkpointed by every run that all of them read back, and their states;
    None if there is none. Unreadable checkpoints are reported (a warning) and skipped."""
    common = set.intersection(*(set(steps(d)) for d in run_dirs))
    for step in sorted(common, reverse=True):
        try:
            states = [
                restore(d, step, s, k) for d, s, k in zip(run_dirs, like_states, keys, strict=True)
            ]
        except ValueError as e:
            warnings.warn(f"{e}; trying the previous checkpoint.", stacklevel=2)
            continue
        return step, states
    return None


def load_params(
    run_dir: Path, like_state: Any, keys: dict[str, jax.Array], select_best: bool = False
) -> tuple[Any, int]:
    """(parameters, step) of the model a run evaluates, from its newest readable checkpoint (its
    final one once it is done): the checkpoint's own parameters and step, or with select_best
    (train.select_best) the best parameters its checkpoints carry and the step they came from."""
    like = (like_state, selection.initial_one(like_state.params)) if select_best else like_state
    found = restore_latest([Path(run_dir)], [like], [keys])
    if found is None:
        raise FileNotFoundError(f"{run_dir} has no readable checkpoint in {DIR}/.")
    step, (state,) = found
    if select_best:
        return state[1]["params"], int(state[1]["step"])
    return state.params, step
