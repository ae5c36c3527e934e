"""Position samplers: determinism, ranges, padding at 0, the registry, and the samplers that read
the task's coordinates (coupled, abacus) with the rules they bend."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, positions, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.positions import Contiguous, Grid, MRoPE, Offset, Randomized, Scaled

LENGTHS = jnp.array([[3], [8], [1], [6]])
VALID_BL = jnp.arange(8)[None, :] < LENGTHS  # rows of n = 3, 8, 1, 6 real tokens, width 8
SAMPLERS = [Contiguous(), Offset(max_offset=50), Randomized(max_pos=20), Scaled(stride=3)]


@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda s: s.name)
def test_contract_same_key_same_positions_padding_zero_increasing(sampler):
    key = jax.random.key(0)
    pos_BL = sampler.sample(key, VALID_BL)
    assert pos_BL.dtype == jnp.int32 and pos_BL.shape == VALID_BL.shape
    np.testing.assert_array_equal(pos_BL, sampler.sample(key, VALID_BL))
    np.testing.assert_array_equal(pos_BL, jax.jit(sampler.sample)(key, VALID_BL))
    pos, valid = np.asarray(pos_BL), np.asarray(VALID_BL)
    assert (pos[~valid] == 0).all()
    assert 0 <= pos.min() and pos.max() <= sampler.max_position(8)
    for row, n in zip(pos, np.asarray(LENGTHS)[:, 0], strict=True):
        assert (np.diff(row[:n]) > 0).all()


def test_offset_shifts_each_row_by_a_constant_that_varies_across_rows():
    valid_BL = jnp.ones((16, 5), bool)
    pos = np.asarray(Offset(max_offset=1000).sample(jax.random.key(1), valid_BL))
    offset_B = pos[:, 0]
    np.testing.assert_array_equal(pos, offset_B[:, None] + np.arange(5)[None, :])
    assert len(set(offset_B)) > 1 and 0 <= offset_B.min() and offset_B.max() <= 1000
    assert Offset(max_offset=7).max_position(5) == 11


def test_offset_covers_both_ends_of_its_range():
    pos = np.asarray(Offset(max_offset=2).sample(jax.random.key(2), jnp.ones((200, 1), bool)))
    assert set(pos[:, 0]) == {0, 1, 2}


def test_randomized_positions_are_sorted_distinct_samples_within_range():
    sampler = Randomized(max_pos=12)
    valid_BL, lengths_B = jnp.tile(VALID_BL, (16, 1)), np.tile(np.asarray(LENGTHS)[:, 0], 16)
    pos = np.asarray(sampler.sample(jax.random.key(3), valid_BL))
    for row, n in zip(pos, lengths_B, strict=True):
        assert (np.diff(row[:n]) > 0).all() and 0 <= row[:n].min() and row[:n].max() < 12
        assert (row[n:] == 0).all()
    # Every value of [0, max_pos) is reachable, and a full-width row is all of them in order.
    assert set(pos[np.asarray(valid_BL)]) == set(range(12))
    full = np.asarray(sampler.sample(jax.random.key(5), jnp.ones((2, 12), bool)))
    np.testing.assert_array_equal(full, np.tile(np.arange(12), (2, 1)))


def test_randomized_range_smaller_than_the_sequence_is_a_clear_error():
    sampler = Randomized(max_pos=5)
    with pytest.raises(ValueError, match="randomized position range smaller than the sequence"):
        sampler.max_position(6)
    with pytest.raises(ValueError, match="raise max_pos to at least 6"):
        sampler.check(6)
    assert sampler.max_position(5) == 4


def test_randomized_fills_a_padded_width_beyond_its_range():
    """Buckets may be wider than max_pos; only the real tokens need distinct positions."""
    valid_BL = jnp.broadcast_to(jnp.arange(8) < 5, (3, 8))
    pos = np.asarray(Randomized(max_pos=5).sample(jax.random.key(0), valid_BL))
    np.testing.assert_array_equal(pos[:, :5], np.broadcast_to(np.arange(5), (3, 5)))
    assert (pos[:, 5:] == 0).all()


def test_scaled_multiplies_by_an_integer_stride():
    pos = np.asarray(Scaled(stride=4).sample(jax.random.key(0), VALID_BL))
    np.testing.assert_array_equal(pos[1], 4 * np.arange(8))
    assert Scaled(stride=4).max_position(8) == 28
    with pytest.raises(ValueError, match="integer"):
        Scaled(stride=1.5)


def test_registry_round_trip_and_helpful_errors():
    expected = ["contiguous", "offset", "randomized", "scaled", "grid", "coupled", "abacus"]
    expected += ["mrope"]
    assert positions.names() == expected
    for sampler in [*SAMPLERS, Grid(), MRoPE()]:
        assert positions.from_dict(positions.to_dict(sampler)) == sampler
        hash(sampler)
    with pytest.raises(
        ValueError, match="Known position samplers: contiguous, offset, randomized, scaled, grid"
    ):
        positions.get("shuffled")
    with pytest.raises(ValueError, match="it takes: \\['max_pos'\\]"):
        positions.get("randomized", stride=2)


def test_every_sampler_declares_its_position_axes():
    for name, cls in positions.classes().items():
        assert cls.position_axes == {"grid": 2, "mrope": 3}.get(name), name


def test_grid_sampler_passes_the_task_coordinates_and_zeroes_padding():
    batch = tasks.get("grid").sample(jax.random.key(0), 4, 3, pad_to=24)
    pos_BLA = Grid().sample(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    assert pos_BLA.shape == (4, 24, 2) and pos_BLA.dtype == jnp.int32
    np.testing.assert_array_equal(pos_BLA, batch.coords)
    assert (np.asarray(pos_BLA)[~np.asarray(batch.valid)] == 0).all()
    assert int(pos_BLA.max()) <= Grid().max_position(24)
    # 1-D samplers ignore the coordinates: positions over the flattened grid.
    flat_BL = Contiguous().sample(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    np.testing.assert_array_equal(flat_BL, Contiguous().sample(jax.random.key(1), batch.valid))


def test_grid_sampler_without_coordinates_says_to_use_a_grid_task():
    with pytest.raises(ValueError, match="has no 2-D coordinates.*use a grid task"):
        Grid().sample(jax.random.key(0), VALID_BL)
    with pytest.raises(ValueError, match=r"must have shape \(4, 8, 2\)"):
        Grid().sample(jax.random.key(0), VALID_BL, coords_BLA=jnp.zeros((4, 8, 3), jnp.int32))


def test_mrope_sampler_gives_text_its_index_on_every_axis_and_patches_their_cell():
    text_BLA = MRoPE().sample(jax.random.key(0), VALID_BL)
    flat_BL = Contiguous().sample(jax.random.key(0), VALID_BL)
    assert text_BLA.shape == (*VALID_BL.shape, 3)
    for a in range(3):
        np.testing.assert_array_equal(text_BLA[..., a], flat_BL)
    batch = tasks.get("grid").sample(jax.random.key(0), 4, 3, pad_to=24)
    image_BLA = MRoPE().sample(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    assert (np.asarray(image_BLA[..., 0]) == 0).all()
    np.testing.assert_array_equal(image_BLA[..., 1:], batch.coords)
    # Addition's digit places ([B, L, 1], the coupled samplers' input) are text to M-RoPE.
    sums = tasks.get("addition").sample(jax.random.key(0), 4, 3, pad_to=24)
    assert sums.coords is not None and sums.coords.shape == (4, 24, 1)
    sums_BLA = MRoPE().sample(jax.random.key(1), sums.valid, coords_BLA=sums.coords)
    flat_BL = Contiguous().sample(jax.random.key(1), sums.valid)
    for a in range(3):
        np.testing.assert_array_equal(sums_BLA[..., a], flat_BL)
    with pytest.raises(ValueError, match=r"must be \(row, col\) or \(frame, row, col\)"):
        MRoPE().sample(jax.random.key(0), VALID_BL, coords_BLA=jnp.zeros((4, 8, 4), jnp.int32))


def test_a_random_offset_on_a_sampler_without_one_names_the_samplers_that_have_it():
    for name in ("contiguous", "randomized", "scaled"):
        with pytest.raises(ValueError, match=r"max_offset.*choose one of those.*offset --max"):
            positions.get(name, max_offset=8)
    assert positions.get("coupled", max_offset=8).max_offset == 8


# -- the coupled sampler ---------------------------------------------------------------------------


@functools.cache
def compiled_sampler(task, batch_size, length, causal):
    """One compiled program per task and shape instead of eager ops."""
    return jax.jit(lambda key: task.sample(key, batch_size, length, causal=causal))


def test_coupled_sampler_gives_equal_significance_one_position_plus_an_offset():
    batch = compiled_sampler(tasks.get("addition"), 64, 6, True)(jax.random.key(0))
    sampler = positions.Coupled(max_offset=10)
    pos = np.asarray(
        jax.jit(sampler.sample)(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    )
    valid, coords = np.asarray(batch.valid), np.asarray(batch.coords)[..., 0]
    assert pos.dtype == np.int32 and (pos[~valid] == 0).all()
    offsets = set()
    for b in range(64):
        offset = pos[b][valid[b]] - coords[b][valid[b]]
        assert len(set(offset)) == 1  # one offset per row
        offsets.add(int(offset[0]))
    assert offsets == set(range(11))
    assert pos.max() <= sampler.max_position(batch.inputs.shape[1])
    plain = positions.Coupled().sample(jax.random.key(1), batch.valid, coords_BLA=batch.coords)
    np.testing.assert_array_equal(plain, np.where(valid, coords, 0))


def test_coupled_sampler_without_coupling_names_the_task_and_the_sampler():
    copy = compiled_sampler(tasks.get("copy"), 2, 4, True)(jax.random.key(0))
    with pytest.raises(ValueError, match="coupled position sampler.*use a task with coupled"):
        positions.Coupled().sample(jax.random.key(0), copy.valid, coords_BLA=copy.coords)
    grid = compiled_sampler(tasks.get("grid"), 2, 3, True)(jax.random.key(0))
    with pytest.raises(ValueError, match=r"must have shape \(2, 19, 1\)"):
        positions.Coupled().sample(jax.random.key(0), grid.valid, coords_BLA=grid.coords)
    with pytest.raises(ValueError, match="max_offset must be an integer >= 0"):
        positions.Coupled(max_offset=-1)
    for task in ("copy", "grid"):
        cfg = RunConfig(task=tasks.get(task), positions=positions.Coupled())
        with pytest.raises(ValueError, match=f"'coupled' position sampler .* task '{task}'"):
            cfg.check()
    cfg = RunConfig(task=tasks.get("addition"), encoding=encodings.get("rope_nd", axes=2),
                    positions=positions.Grid())  # fmt: skip
    with pytest.raises(ValueError, match="reads 2 coordinate.s. .* task 'addition' gives 1"):
        cfg.check()


def test_coupling_is_refused_with_encodings_that_need_increasing_positions():
    """T5's unidirectional buckets read a larger key position as the future (bucket 0) and xPos
    would grow instead of decay: both need increasing positions, which coupling breaks."""
    assert not positions.Coupled.increasing
    for name in ("t5", "xpos"):
        cfg = RunConfig(task=tasks.get("addition"), encoding=encodings.get(name),
                        positions=positions.Coupled())  # fmt: skip
        with pytest.raises(ValueError, match="repeat or decrease over the tokens"):
            cfg.check()
        dataclasses.replace(cfg, positions=positions.Contiguous()).check()
    for name in ("rope", "alibi", "fire", "learned", "nope", "cope"):
        RunConfig(task=tasks.get("addition"), encoding=encodings.get(name),
                  positions=positions.Coupled()).check()  # fmt: skip


def test_every_sampler_declares_what_it_reads_and_whether_it_increases():
    for name, cls in positions.classes().items():
        assert cls.task_axes == {"grid": 2, "coupled": 1, "abacus": 1}.get(name), name
        assert cls.increasing == (name not in ("grid", "coupled", "abacus", "mrope")), name


def test_evaluation_keeps_the_coupling_without_the_offset():
    cfg = RunConfig(task=tasks.get("addition"), positions=positions.Coupled(max_offset=7))
    assert cfg.eval_sampler == positions.Coupled()
    train_positions = dataclasses.replace(cfg, eval=EvalConfig(positions="train"))
    assert train_positions.eval_sampler == positions.Coupled(max_offset=7)
    assert RunConfig(positions=positions.Offset()).eval_sampler == positions.Contiguous()
    assert RunConfig(task=tasks.get("grid"), encoding=encodings.get("rope_nd", axes=2),
                     positions=positions.Grid()).eval_sampler == positions.Grid()  # fmt: skip


def test_coupled_positions_reach_the_model():
    """With repeated positions the model stays finite; RoPE's logits follow the coupling (they
    differ from contiguous positions), NoPE's cannot."""
    task, coupled = tasks.get("addition"), positions.Coupled(max_offset=3)
    batch = compiled_sampler(task, 4, 4, True)(jax.random.key(0))
    pos = {
        sampler.name: jax.jit(sampler.sample)(jax.random.key(1), batch.valid, batch.coords)
        for sampler in (coupled, positions.Contiguous())
    }
    model = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)
    valid = np.asarray(batch.valid)
    logits = {}
    for name in ("rope", "nope"):
        cfg = RunConfig(task=task, encoding=encodings.get(name), positions=coupled, model=model,
                        train=TrainConfig(train_length=4))  # fmt: skip
        cfg.check()
        graphdef, params = train.init_model(cfg, jax.random.key(0))
        forward = jax.jit(
            functools.partial(lambda g, p, x, q, v: nnx.merge(g, p)(x, q, v), graphdef)
        )
        for sampler, pos_BL in pos.items():
            out = np.asarray(forward(params, batch.inputs, pos_BL, batch.valid))[valid]
            assert np.isfinite(out).all()
            logits[name, sampler] = out
    assert np.abs(logits["rope", "coupled"] - logits["rope", "contiguous"]).max() > 1e-3
    np.testing.assert_allclose(logits["nope", "coupled"], logits["nope", "contiguous"], atol=1e-6)


# -- the abacus sampler ----------------------------------------------------------------------------


def test_abacus_numbers_digits_within_their_numbers_and_offsets_them_in_training():
    task = tasks.get("multiplication")
    batch = jax.jit(lambda key: task.sample(key, 16, 6))(jax.random.key(0))
    sampler = positions.get("abacus", max_offset=50)
    pos = np.asarray(jax.jit(sampler.sample)(jax.random.key(1), batch.valid, batch.coords))
    places = np.asarray(batch.coords[..., 0])
    digits = places > 0
    assert (pos[~digits] == 0).all()  # operators, SEP, padding
    offsets = pos[digits] - places[digits]
    per_row = [set((pos[b] - places[b])[digits[b]]) for b in range(16)]
    assert all(len(r) == 1 for r in per_row) and len(set().union(*per_row)) > 3
    assert 0 <= offsets.min() and offsets.max() <= 50
    cfg = RunConfig(task=task, positions=sampler, encoding=encodings.get("learned"))
    assert cfg.eval_sampler == positions.get("abacus", max_offset=0)
    with pytest.raises(ValueError, match="coupled position sampler reads"):
        sampler.sample(jax.random.key(0), batch.valid, None)
    with pytest.raises(ValueError, match="abacus sampler max_offset must be an integer >= 0"):
        positions.get("abacus", max_offset=-1)


def test_abacus_with_a_learned_table_too_small_is_refused_before_training():
    cfg = RunConfig(
        task=tasks.get("addition"),
        positions=positions.get("abacus"),
        encoding=encodings.get("learned", max_positions=64),
        train=TrainConfig(train_length=4),
        eval=EvalConfig(lengths=(4,)),
    )
    with pytest.raises(ValueError, match="max_positions=64"):
        cfg.check()
