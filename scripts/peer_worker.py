"""The peer's side of scripts/peer_side_by_side.py: DeepMind's randomized_positional_encodings
training its default encoder on its own curriculum, timed window by window on request.

Runs under a Python that has the peer's requirements (dm-haiku, chex, einshape, optax), not
this project's; scripts/peer_side_by_side.py starts it and talks to it over stdin and stdout:

    PEER_PYTHON scripts/peer_worker.py --src DIR [--batch 128] [--max-length 40] ...

DIR holds the peer's checkout as `DIR/randomized_positional_encodings/` (its modules import
themselves by that name). The model, task, loss, optimizer and loop body are the peer's own
(experiments/example.py and experiments/training.py): `constants.MODEL_BUILDERS`,
`utils.make_model_with_empty_targets`, `hk.transform`, Adam clipped at 1.0 and the jitted
`training._update_parameters`, with a batch sampled by the task on the host each step as its
TrainingWorker does. It first compiles the update for every length of the curriculum (the peer
compiles one program per length), prints one JSON line, then for each line `STEPS SEED` read
from stdin times STEPS steps of lengths drawn uniformly from 1..max-length by SEED and prints
one JSON line: seconds per step and sequences per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--src", required=True, help="folder holding randomized_positional_encodings/"
    )
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=40)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--encoding", default="ROTARY", help="the peer's name, e.g. ROTARY, NONE")
    parser.add_argument("--task", default="reverse_string")
    args = parser.parse_args()
    sys.path.insert(0, args.src)

    import haiku as hk
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from randomized_positional_encodings.experiments import constants, training, utils

    task = constants.TASK_BUILDERS[args.task]()
    model = constants.MODEL_BUILDERS["transformer_encoder"](
        output_size=task.output_size,
        return_all_outputs=True,
        num_layers=5,
        embedding_dim=64,
        dropout_prob=args.dropout,
        positional_encodings=args.encoding,
        positional_encodings_params={},
    )
    model = hk.transform(utils.make_model_with_empty_targets(model, task))

    def loss_fn(output, target):  # example.py's
        return jnp.mean(jnp.sum(task.pointwise_loss_fn(output, target), axis=-1)), {}

    def accuracy_fn(output, target):
        mask = task.accuracy_mask(target)
        return jnp.sum(mask * task.accuracy_fn(output, target)) / jnp.sum(mask)

    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    rng_seq = hk.PRNGSequence(0)
    params = model.init(
        jax.random.PRNGKey(0), task.sample_batch(next(rng_seq), 10, args.batch)["input"]
    )
    opt_state = optimizer.init(params)

    def step(params, opt_state, length):
        batch = task.sample_batch(next(rng_seq), length=length, batch_size=args.batch)
        params, opt_state, _ = training._update_parameters(
            params=params, rng_key=next(rng_seq), batch=batch, model_apply_fn=model.apply,
            loss_fn=loss_fn, accuracy_fn=accuracy_fn, optimizer=optimizer, opt_state=opt_state,
        )  # fmt: skip
        return params, opt_state

    t0 = time.perf_counter()
    for length in range(1, args.max_length + 1):
        params, opt_state = step(params, opt_state, length)
    jax.block_until_ready(params)
    print(json.dumps({"ready": True, "compile_s": round(time.perf_counter() - t0, 2),
                      "jax": jax.__version__, "haiku": hk.__version__}), flush=True)  # fmt: skip

    for line in sys.stdin:
        steps, seed = (int(x) for x in line.split())
        lengths = np.random.default_rng(seed).integers(1, args.max_length + 1, size=steps)
        t0 = time.perf_counter()
        for length in lengths:
            params, opt_state = step(params, opt_state, int(length))
        jax.block_until_ready(params)
        s = (time.perf_counter() - t0) / steps
        print(json.dumps({"s_per_step": s, "sequences_per_s": args.batch / s,
                          "mean_length": float(lengths.mean())}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
