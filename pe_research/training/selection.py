"""Best-checkpoint selection (train.select_best): train to the step cap, check every
`select_every` steps (and at the last) on the held-out sequences of the validation lengths, and
keep each packed model's best parameters, which evaluation then scores.

The best parameters, their score and their step are carried through checkpoints beside the
training state, so a resumed run selects exactly as an uninterrupted one.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pe_research.config import RunConfig


def initial(params_S: Any) -> dict[str, Any]:
    """No check yet: the starting parameters, score -1 (any check beats it), step 0."""
    S = jax.tree.leaves(params_S)[0].shape[0]
    return {
        "params": jax.tree.map(jnp.copy, params_S),
        "exact_match": jnp.full((S,), -1.0, jnp.float32),
        "step": jnp.zeros((S,), jnp.int32),
    }


def initial_one(params: Any) -> dict[str, Any]:
    """One model's slice of `initial` (unstacked parameters): the shape a run's checkpoints hold
    beside its training state."""
    return {"params": params, "exact_match": jnp.float32(-1.0), "step": jnp.int32(0)}


@jax.jit
def _keep_better(best: dict[str, Any], params_S: Any, score_S: jax.Array, step: jax.Array):
    better_S = score_S > best["exact_match"]  # ties keep the earlier check

    def pick(old: jax.Array, new: jax.Array) -> jax.Array:
        return jnp.where(better_S.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)

    return {
        "params": jax.tree.map(pick, best["params"], params_S),
        "exact_match": jnp.where(better_S, score_S, best["exact_match"]),
        "step": jnp.where(better_S, step, best["step"]),
    }


class Selection:
    """The best check so far of each packed model; `check(params_S)` scores them (the mean exact
    match over the validation lengths, evaluate.make_select_check)."""

    def __init__(self, cfg: RunConfig, check: Any, best: dict[str, Any]):
        self.every, self.last, self.check, self.best = (
            cfg.train.select_every, cfg.train.steps, check, best
        )  # fmt: skip

    def due(self, step: int) -> bool:
        return step % self.every == 0 or step == self.last

    def update(self, step: int, params_S: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Check the models at `step`, keep those that beat their best; (scores, best steps,
        best scores) as host arrays."""
        score_S = jnp.asarray(self.check(params_S), jnp.float32)
        self.best = _keep_better(self.best, params_S, score_S, jnp.int32(step))
        best_step, best_score = jax.device_get((self.best["step"], self.best["exact_match"]))
        return np.asarray(jax.device_get(score_S)), best_step, best_score
