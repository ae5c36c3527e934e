"""LieRE and ComRoPE: rotations by expm(sum_a p_a G_a) with learned generators."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from pe_research import encodings, positions, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.encodings import Dims
from pe_research.encodings.block_rotation import block_rotations, rotate_blocks, rotate_closed_form
from pe_research.encodings.learned_rotation import ComRoPE, LieRE
from pe_research.encodings.rotary import RoPE, RoPEND

DIMS = Dims(d_model=32, num_heads=2, head_dim=16)
B, L = 2, 7

# (encoding, whether its generators commute), random generators as both papers draw them.
NORMAL = dict(init="normal", init_std=0.1)
CASES = [
    (LieRE(**NORMAL), True),
    (LieRE(axes=2, **NORMAL), False),
    (LieRE(axes=3, block_size=8, **NORMAL), False),
    (ComRoPE(**NORMAL), True),
    (ComRoPE(axes=2, **NORMAL), True),
    (ComRoPE(axes=2, variant="ap", **NORMAL), True),
    (ComRoPE(axes=2, variant="ap", block_size=2, **NORMAL), True),
]
IDS = [enc.label() for enc, _ in CASES]


def params_of(enc, seed=0):
    return enc.init_layer(jax.random.key(seed), DIMS)


def positions_for(enc, pos_BLA):
    return pos_BLA[..., 0] if enc.axes is None else pos_BLA[..., : enc.axes]


def random_positions(seed, low=-40, high=41, A=3):
    return jnp.asarray(np.random.default_rng(seed).integers(low, high, (B, L, A)), jnp.int32)


def qk(seed=1):
    kq, kk = jax.random.split(jax.random.key(seed))
    shape = (B, L, DIMS.num_heads, DIMS.head_dim)
    return jax.random.normal(kq, shape), jax.random.normal(kk, shape)


def reference_rotate(gen_HAGCE, x_BLHK, pos_BLA):
    """The formula, in float64 numpy with scipy's expm, token by token and block by block."""
    gen, x, pos = (np.asarray(a, np.float64) for a in (gen_HAGCE, x_BLHK, pos_BLA))
    H, A, G, C, _ = gen.shape
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            for h in range(H):
                for g in range(G):
                    exponent = sum(pos[b, t, a] * gen[h, a, g] for a in range(A))
                    block = slice(g * C, (g + 1) * C)
                    out[b, t, h, block] = scipy.linalg.expm(exponent) @ x[b, t, h, block]
    return out


def scores(enc, params, q, k, pos):
    q_rot, k_rot = enc.rotate(params, q, k, pos, pos)
    return np.asarray(jnp.einsum("BLHK,BMHK->BHLM", q_rot, k_rot))


@pytest.mark.parametrize(("enc", "commutes"), CASES, ids=IDS)
def test_rotate_matches_the_formula_in_float64(enc, commutes):
    params = params_of(enc)
    q, k = qk()
    pos = positions_for(enc, random_positions(0, low=-10, high=11))
    q_rot, _ = enc.rotate(params, q, k, pos, pos)
    gen = enc.generators(params)
    pos_BLA = pos[..., None] if enc.axes is None else pos
    # float32 rounds the exponent p G (|p G| up to about 30 here) at a few 1e-6.
    np.testing.assert_allclose(q_rot, reference_rotate(gen, q, pos_BLA), atol=3e-6)


@pytest.mark.parametrize(
    "enc",
    [
        LieRE(block_size=8, init="normal", init_std=0.01),
        ComRoPE(axes=2, block_size=8, init="normal", init_std=0.01),
    ],
)
def test_digit_tables_carry_across_digits(enc):
    """Integer positions of several base-16 digits, negative ones included, through the
    factored tables (blocks of 8: smaller blocks take the closed form). Float32 rounds the
    exponent p G, so the error grows with |p G| (here up to about 2000, 1e-4); a wrong digit or
    sign would be off by order 1."""
    params = params_of(enc)
    q, k = qk()
    pos_BLA = np.random.default_rng(1).integers(-5000, 5000, (B, L, 2))
    pos_BLA[0, :3] = [[255, 256], [-4096, 15], [65535, -1]]  # carries and a 4-digit value
    pos = positions_for(enc, jnp.asarray(pos_BLA, jnp.int32))
    q_rot, _ = enc.rotate(params, q, k, pos, pos)
    pos_BLA = pos[..., None] if enc.axes is None else pos
    expected = reference_rotate(enc.generators(params), q, pos_BLA)
    np.testing.assert_allclose(q_rot, expected, atol=1e-3)


def random_generators(rng, H, A, G, C):
    w = rng.normal(size=(H, A, G, C, C))
    return (w - np.swapaxes(w, -1, -2)) / 2


@pytest.mark.parametrize("C", [2, 4])
def test_closed_form_equals_scipy_expm_in_float64(C):
    """Blocks of 2 and 4 in closed form (Rodrigues per invariant plane pair), computed in
    float64, against scipy's expm token by token: free, non-commuting generators (LieRE in 3-D),
    real positions, position 0 and a zero generator included."""
    rng = np.random.default_rng(C)
    gen = random_generators(rng, 2, 3, 2, C)
    gen[1, :, 1] = 0.0  # a block that never turns
    x = rng.normal(size=(B, L, 2, 2 * C))
    pos = rng.uniform(-30, 30, (B, L, 3))
    pos[0, 0] = 0.0
    with jax.enable_x64(True):
        got = np.asarray(rotate_closed_form(jnp.asarray(gen), jnp.asarray(x), jnp.asarray(pos)))
        assert got.dtype == np.float64
    expected = reference_rotate(gen, x, pos)
    # Angles reach about 100 radians here: float64 rounds them at about 1e-14 each.
    np.testing.assert_allclose(got, expected, atol=1e-11, rtol=0)
    np.testing.assert_array_equal(got[1, :, 1, C:], x[1, :, 1, C:])


@pytest.mark.parametrize("C", [2, 4])
def test_closed_form_gradients_are_finite_and_exact_at_zero_angle(C):
    """The gradient with respect to the generators through cos r and sin r / r, at positions
    where r = 0 (position 0) and away from it, against central differences in float64."""
    rng = np.random.default_rng(10 + C)
    with jax.enable_x64(True):
        gen = jnp.asarray(random_generators(rng, 1, 2, 1, C))
        x = jnp.asarray(rng.normal(size=(1, 3, 1, C)))
        pos = jnp.asarray([[[0.0, 0.0], [1.5, -0.5], [3.0, 2.0]]])
        w = jnp.asarray(rng.normal(size=(1, 3, 1, C)))

        def f(g):
            return jnp.sum(w * rotate_closed_form(g, x, pos))

        grad = np.asarray(jax.grad(f)(gen))
        numeric = np.zeros_like(grad)
        for idx in np.ndindex(*grad.shape):
            step = np.zeros(grad.shape)
            step[idx] = 1e-6
            numeric[idx] = (f(gen + step) - f(gen - step)) / 2e-6
    assert np.isfinite(grad).all()
    np.testing.assert_allclose(grad, numeric, atol=1e-7)


def test_closed_form_equals_the_general_path_in_float32():
    """Blocks of 4: the closed form and the scaled-and-squared Taylor expm of the same
    generators agree in float32 (what training uses)."""
    rng = np.random.default_rng(7)
    gen = jnp.asarray(random_generators(rng, 2, 2, 4, 4), jnp.float32) * 0.3
    q, _ = qk()
    pos = random_positions(8, low=-40, high=41, A=2)
    closed = rotate_closed_form(gen, q, pos)
    general = rotate_blocks(q, block_rotations(gen, pos))
    np.testing.assert_allclose(closed, general, atol=2e-5)


@pytest.mark.parametrize(("enc", "commutes"), CASES, ids=IDS)
def test_rotations_are_orthogonal(enc, commutes):
    params = params_of(enc)
    q, k = qk()
    pos = positions_for(enc, random_positions(2, low=-100, high=100))
    q_rot, k_rot = enc.rotate(params, q, k, pos, pos)
    norm = jnp.linalg.norm
    np.testing.assert_allclose(norm(q_rot, axis=-1), norm(q, axis=-1), rtol=3e-5)
    # The whole map: rotating the identity's rows gives an orthogonal matrix.
    K = DIMS.head_dim
    eye = jnp.broadcast_to(jnp.eye(K)[None, :, None, :], (1, K, DIMS.num_heads, K))
    one_pos = jnp.broadcast_to(pos[:1, :1], (1, K, *pos.shape[2:]))
    rows, _ = enc.rotate(params, eye, eye, one_pos, one_pos)
    r_KK = np.asarray(rows[0, :, 0, :])
    np.testing.assert_allclose(r_KK @ r_KK.T, np.eye(K), atol=3e-5)
    assert np.abs(r_KK - np.eye(K)).max() > 0.1  # it does rotate


@pytest.mark.parametrize(("enc", "commutes"), CASES, ids=IDS)
def test_zero_generators_are_nope(enc, commutes):
    zero = jax.tree.map(jnp.zeros_like, params_of(enc))
    q, k = qk()
    pos = positions_for(enc, random_positions(3, low=0, high=1000))
    q_rot, k_rot = enc.rotate(zero, q, k, pos, pos)
    np.testing.assert_array_equal(q_rot, q)
    np.testing.assert_array_equal(k_rot, k)


@pytest.mark.parametrize(
    "enc",
    [
        LieRE(),
        LieRE(block_size=8),
        ComRoPE(),
        ComRoPE(variant="ap"),
        LieRE(axes=2),
        LieRE(axes=2, block_size=2),
        ComRoPE(axes=2),
        ComRoPE(axes=2, variant="ap", block_size=8),
    ],
    ids=str,
)
def test_rope_init_is_rope_exactly(enc):
    """init='rope' gives RoPE's generators: rope (1-D) or rope_nd (n-D), interleaved pairs.
    Positions below 100: RoPE's fastest pair turns 100 radians, rounded at about 1e-5."""
    params = params_of(enc)
    q, k = qk()
    pos = positions_for(enc, random_positions(4, low=0, high=100))
    ref = RoPE(layout="interleaved") if enc.axes is None else RoPEND(enc.axes, layout="interleaved")
    got, expected = enc.rotate(params, q, k, pos, pos), ref.rotate({}, q, k, pos, pos)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)


@pytest.mark.parametrize(("enc", "commutes"), CASES, ids=IDS)
def test_scores_depend_only_on_offsets_exactly_when_generators_commute(enc, commutes):
    """R(p)^T R(p') = R(p' - p) holds for commuting generators: every 1-D encoding (one
    generator commutes with itself) and ComRoPE in n-D; LieRE in n-D sees absolute positions."""
    params = params_of(enc)
    q, k = qk()
    pos = positions_for(enc, random_positions(5, low=0, high=20))
    shift = jnp.asarray([7, -3, 11], jnp.int32)[: enc.axes or 1]
    shifted = pos + (shift[0] if enc.axes is None else shift[None, None])
    gap = np.abs(scores(enc, params, q, k, shifted) - scores(enc, params, q, k, pos)).max()
    if commutes:
        assert gap < 1e-4, gap
    else:
        assert gap > 1e-2, gap


@pytest.mark.parametrize(("enc", "commutes"), CASES, ids=IDS)
def test_generators_are_skew_and_commute_for_comrope(enc, commutes):
    gen = np.asarray(enc.generators(params_of(enc)), np.float64)
    np.testing.assert_allclose(gen, -np.swapaxes(gen, -1, -2), atol=0)
    A = gen.shape[1]
    brackets = [
        np.abs(gen[:, a] @ gen[:, b] - gen[:, b] @ gen[:, a]).max()
        for a in range(A)
        for b in range(a + 1, A)
    ]
    if isinstance(enc, ComRoPE):
        assert max(brackets, default=0.0) < 1e-6
    if isinstance(enc, LieRE) and A > 1:
        assert min(brackets) > 1e-2


def test_comrope_variants_shape_their_generators():
    ld = ComRoPE(axes=2, **NORMAL)
    params = params_of(ld)
    assert set(params) == {"generator_HGCE", "scale_AG"}
    gen = np.asarray(ld.generators(params))
    P = np.asarray(params["generator_HGCE"])
    s = np.asarray(params["scale_AG"])
    np.testing.assert_allclose(gen[1, 0, 3], s[0, 3] * P[1, 3], rtol=1e-6)
    ap = ComRoPE(axes=2, variant="ap", **NORMAL)
    params = params_of(ap)
    assert set(params) == {"generator_HGCE"}
    gen = np.asarray(ap.generators(params))  # 4 blocks: axis 0 owns blocks 0-1, axis 1 2-3
    assert np.abs(gen[:, 0, :2]).min(axis=(-1, -2)).max() == 0 and np.abs(gen[:, 0, 2:]).max() == 0
    assert np.abs(gen[:, 1, :2]).max() == 0 and np.abs(gen[:, 1, 2:]).max() > 0


def test_bf16_in_bf16_out_and_float_positions():
    enc = LieRE(**NORMAL)
    params = params_of(enc)
    q, k = qk()
    pos = jnp.broadcast_to(jnp.arange(L), (B, L))
    q16, _ = enc.rotate(params, q.astype(jnp.bfloat16), k.astype(jnp.bfloat16), pos, pos)
    assert q16.dtype == jnp.bfloat16
    # Real positions take the per-token expm; at integer values both paths agree.
    q_int, _ = enc.rotate(params, q, k, pos, pos)
    q_real, _ = enc.rotate(params, q, k, pos.astype(jnp.float32), pos.astype(jnp.float32))
    np.testing.assert_allclose(q_int, q_real, atol=2e-6)


def test_registered_learned_and_n_dimensional():
    for name, cls in (("liere", LieRE), ("comrope", ComRoPE)):
        assert type(encodings.get(name)) is cls and cls.learned
        assert encodings.get(name).position_axes is None
        assert encodings.get(name, axes=3).position_axes == 3
        enc = encodings.get(name, axes=2, block_size=8)
        assert encodings.from_dict(encodings.to_dict(enc)) == enc
        assert enc.label() == f"{name}(axes=2, block_size=8)"


ERRORS = [
    (LieRE(block_size=3), DIMS, 0, "block_size=3 must divide head_dim=16"),
    (LieRE(block_size=1), DIMS, 0, "block_size must be >= 2"),
    (LieRE(axes=0), DIMS, 0, "axes must be None"),
    (LieRE(init="uniform"), DIMS, 0, "Unknown liere init 'uniform'"),
    (LieRE(base=0.0), DIMS, 0, "liere base must be > 0"),
    (LieRE(init="normal", init_std=-1.0), DIMS, 0, "liere init_std must be > 0"),
    (LieRE(block_size=3), Dims(12, 1, 12), 0, "init='rope' needs an even block_size"),
    (LieRE(axes=3, block_size=2), DIMS, 0, "divisible by 2 \\* axes = 6"),
    (LieRE(), DIMS, 2**24, "positions below 2\\^24"),
    (ComRoPE(variant="xy"), DIMS, 0, "Unknown comrope variant 'xy'"),
    (ComRoPE(axes=3, block_size=2, init="normal", variant="ap"), DIMS, 0, "axes \\* block_size"),
    (ComRoPE(axes=2, block_size=16), DIMS, 0, "init='rope' gives each axis whole blocks"),
]


@pytest.mark.parametrize(("enc", "dims", "max_position", "match"), ERRORS, ids=str)
def test_check_names_the_constraint(enc, dims, max_position, match):
    with pytest.raises(ValueError, match=match):
        enc.check(dims, max_position)
    if max_position == 0:  # the layer's own sizes: building its parameters refuses them too
        with pytest.raises(ValueError, match=match):
            enc.init_layer(jax.random.key(0), dims)


def test_comrope_ld_with_random_init_needs_no_block_alignment():
    ComRoPE(axes=3, block_size=2, init="normal").check(DIMS, 0)


@pytest.mark.parametrize(
    ("enc", "pos", "match"),
    [
        (LieRE(), jnp.zeros((B, L, 2), jnp.int32), "axes=None takes 1-D positions"),
        (LieRE(axes=2), jnp.zeros((B, L), jnp.int32), "needs positions pos_BLA"),
        (ComRoPE(axes=2), jnp.zeros((B, L, 3), jnp.int32), "of shape \\(B, L, 2\\)"),
    ],
    ids=str,
)
def test_positions_of_the_wrong_shape_are_refused(enc, pos, match):
    q, k = qk()
    with pytest.raises(ValueError, match=match):
        enc.rotate(params_of(enc), q, k, pos, pos)


def test_rotate_refuses_a_head_the_blocks_do_not_divide():
    q = jnp.zeros((B, L, 1, 12))
    params = LieRE(block_size=8).init_layer(jax.random.key(0), DIMS)
    with pytest.raises(ValueError, match="block_size=8 must divide head_dim=12"):
        LieRE(block_size=8).rotate(params, q, q, jnp.zeros((B, L), jnp.int32), jnp.zeros((B, L)))


def tiny_run(enc):
    grid = enc.axes == 2
    return RunConfig(
        task=tasks.get("grid") if grid else tasks.get("copy", alphabet=8),
        positions=positions.get("grid" if grid else "contiguous"),
        encoding=enc,
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=16),
        train=TrainConfig(steps=2, batch_size=4, train_length=3, warmup_steps=1, log_every=2),
        eval=EvalConfig(lengths=(3,), batch_size=4),
    )


def pe_leaves(params):
    leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    return {
        jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in leaves if "'pe'" in str(path)
    }


@pytest.mark.parametrize("enc", [LieRE(), ComRoPE(axes=2)], ids=lambda e: e.label())
def test_training_moves_the_generators(enc):
    """Two steps of the real train step: every generator leaf moves by more than the learning
    rate's share of a step (about 3e-3 for Adam's first update), far above what weight decay
    alone would move it (3e-3 * 0.01 * |w|): the generators receive gradients."""
    cfg = tiny_run(enc)
    cfg.check()
    keys = train.keys_from_seed(cfg.seed)
    graphdef, state = train.init_state(cfg, keys)
    before = pe_leaves(state.params)
    assert before and all("generator" in k or "scale" in k for k in before)
    step = train.make_train_step(cfg, graphdef)
    for _ in range(cfg.train.steps):
        state, metrics = step(state, keys.data, keys.positions)
        assert np.isfinite(float(metrics["loss"]))
    after = pe_leaves(state.params)
    moved = {k: float(np.abs(after[k] - before[k]).max()) for k in before}
    assert all(m > 1e-3 for m in moved.values()), moved
