"""The encodings of issue 25 (fope, pope, dape, path, temperature, nape), the normalizations
(ssmax, entmax15) and the abacus sampler, each against an independent formula in float64 numpy
or against its reference's rule; their errors."""

import dataclasses
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, normalizations, positions, runs, tasks
from pe_research import model as model_lib
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.encodings import DAPE, NAPE, FoPE, PaTH, PoPE, Temperature
from pe_research.encodings.bias import ALiBi
from pe_research.encodings.path import householder_logits, unit_lower_inverse
from pe_research.encodings.rotary import HoPE

DIMS = encodings.Dims(d_model=32, num_heads=4, head_dim=8)
B, L, H, K = 2, 7, 4, 8
RNG = np.random.default_rng(0)


def qk(seed=0, length=L, dtype=np.float32):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(B, length, H, K)).astype(dtype)
    k = rng.normal(size=(B, length, H, K)).astype(dtype)
    return q, k


def contiguous(length=L, start=0):
    return np.broadcast_to(np.arange(start, start + length, dtype=np.int32), (B, length))


def softplus(x):
    return np.log1p(np.exp(x))


# -- FoPE ------------------------------------------------------------------------------------------


def test_fope_with_identity_coefficients_is_hope():
    enc = FoPE(train_length=40)
    params = enc.init_layer(jax.random.key(0), DIMS)
    eye = {name: jnp.broadcast_to(jnp.eye(v.shape[-1]), v.shape) for name, v in params.items()}
    q, k = qk()
    pos = contiguous(start=3)
    got = jax.jit(enc.rotate)(eye, q, k, pos, pos)
    expected = jax.jit(HoPE(train_length=40).rotate)({}, q, k, pos, pos)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_fope_series_and_clipped_channels_match_the_formula():
    """cos_j(p) = sum_i C[h, i, j] cos(p theta_i) over the kept frequencies (wavelength <=
    train_length), then x cos + rotate_half(x) sin; clipped channels pass through."""
    enc = FoPE(train_length=70, init_gain=1.0)
    params = enc.init_layer(jax.random.key(1), DIMS)
    theta = 10000.0 ** (-2 * np.arange(K // 2) / K)
    kept = int(np.sum(2 * np.pi / theta <= 70))
    assert kept == enc.kept(K) == 2 and params["cos_coef_HJI"].shape == (H, kept, kept)
    C = np.asarray(params["cos_coef_HJI"], np.float64)
    S = np.asarray(params["sin_coef_HJI"], np.float64)
    q, k = qk(1)
    pos = contiguous(start=5)
    got, _ = jax.jit(enc.rotate)(params, q, k, pos, pos)
    expected = np.zeros((B, L, H, K))
    for b in range(B):
        for t in range(L):
            p = pos[b, t]
            for h in range(H):
                cos = np.ones(K // 2)
                sin = np.zeros(K // 2)
                cos[:kept] = np.cos(p * theta[:kept]) @ C[h]
                sin[:kept] = np.sin(p * theta[:kept]) @ S[h]
                x = q[b, t, h].astype(np.float64)
                a, c = x[: K // 2], x[K // 2 :]
                expected[b, t, h] = np.concatenate([a * cos - c * sin, c * cos + a * sin])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    noise = C - np.eye(kept)
    assert 0 < np.abs(noise).max() < 3.0  # identity plus Xavier noise of gain 1


# -- PoPE ------------------------------------------------------------------------------------------


def test_pope_logits_match_the_polar_formula_in_float64():
    enc = PoPE()
    phase = RNG.normal(size=(H, K))
    q, k = qk(2, dtype=np.float64)
    qpos, kpos = contiguous(start=2), contiguous(start=2)[:, ::-1].copy()
    with jax.enable_x64(True):
        got = np.asarray(enc.logits({"phase_HK": jnp.asarray(phase)}, q, k, qpos, kpos))
        bias = np.asarray(enc.bias({"phase_HK": jnp.asarray(phase)}, q, k, qpos, kpos))
    theta = 10000.0 ** (-np.arange(K) / K)
    expected = np.zeros((B, H, L, L))
    for b in range(B):
        for h in range(H):
            for i in range(L):
                for j in range(L):
                    angle = (qpos[b, i] - kpos[b, j]) * theta + phase[h]
                    magnitude = softplus(q[b, i, h]) * softplus(k[b, j, h])
                    expected[b, h, i, j] = np.sum(magnitude * np.cos(angle))
    np.testing.assert_allclose(got, expected, atol=1e-10)
    # What the model adds: its scale * q.k plus the bias is PoPE's logit, scaled.
    dot = np.einsum("blhk,bmhk->bhlm", q, k)
    np.testing.assert_allclose((dot + 0) * K**-0.5 + bias, expected * K**-0.5, atol=1e-10)


def test_pope_depends_on_position_offsets_only():
    enc = PoPE()
    params = {"phase_HK": jnp.asarray(RNG.normal(size=(H, K)), jnp.float32)}
    q, k = qk(3)
    pos = contiguous()
    base = enc.logits(params, q, k, pos, pos)
    shifted = enc.logits(params, q, k, pos + 11, pos + 11)
    np.testing.assert_allclose(base, shifted, atol=1e-3)
    assert not np.allclose(base, enc.logits(params, q, k, pos, pos[:, ::-1]), atol=1e-2)


# -- DAPE ------------------------------------------------------------------------------------------


def dape_reference(enc, params, q, k, pos):
    """prior + MLP/convolution of (z, prior) in float64 loops (the reference's layers: Linear,
    LeakyReLU(0.01), Linear; or Conv2d (1, S) with padding S // 2 on tril'ed inputs)."""
    p = {n: np.asarray(v, np.float64) for n, v in params.items()}
    prior_params = {n[len("prior_") :]: v for n, v in params.items() if n.startswith("prior_")}
    prior = np.asarray(enc.prior_encoding.bias(prior_params, q, k, pos, pos), np.float64)
    prior = np.broadcast_to(prior, (B, H, L, L))
    z = np.einsum("blhk,bmhk->bhlm", q.astype(np.float64), k.astype(np.float64)) * K**-0.5
    x = np.concatenate([z, prior], axis=1)  # [B, 2H, L, M]
    S = enc.kernel_size
    if S > 1:
        x = x * np.tril(np.ones((L, L)))
    out = np.zeros((B, H, L, L))
    W = p["b_in_W"].shape[0]
    hid = np.zeros((B, W, L, L))
    for b in range(B):
        for i in range(L):
            for j in range(L):
                h = p["b_in_W"].copy()
                for s in range(S):
                    jj = j + s - S // 2
                    if 0 <= jj < L:
                        h += x[b, :, i, jj] @ p["w_in_SCW"][s]
                hid[b, :, i, j] = np.where(h > 0, h, 0.01 * h)
    for b in range(B):
        for i in range(L):
            for j in range(L):
                o = p["b_out_H"].copy()
                for s in range(S):
                    jj = j + s - S // 2
                    if 0 <= jj < L:
                        o += hid[b, :, i, jj] @ p["w_out_SWH"][s]
                out[b, :, i, j] = o
    return prior + out


@pytest.mark.parametrize(
    "enc",
    [DAPE(), DAPE(prior="kerple"), DAPE(prior="fire", kernel_size=3, mlp_width=8)],
    ids=lambda e: e.label(),
)
def test_dape_bias_matches_the_reference_layers(enc):
    params = enc.init_layer(jax.random.key(4), DIMS)
    params = {n: v + 0.1 for n, v in params.items()}  # nonzero biases too
    q, k = qk(4)
    pos = contiguous()
    got = np.asarray(jax.jit(enc.bias)(params, q, k, pos, pos))
    expected = dape_reference(enc, params, q, k, pos)
    rows = np.tril(np.ones((L, L), bool))  # what a causal model reads
    np.testing.assert_allclose(got[..., rows], expected[..., rows], atol=2e-4)


def test_dape_v2_is_causal_in_its_neighbours():
    """The convolution reads the key after each entry; the future is zeroed first, so changing a
    later key leaves the earlier queries' biases unchanged."""
    enc = DAPE(kernel_size=3)
    params = enc.init_layer(jax.random.key(5), DIMS)
    q, k = qk(5)
    pos = contiguous()
    bias = jax.jit(enc.bias)
    before = np.asarray(bias(params, q, k, pos, pos))
    k2 = k.copy()
    k2[:, 4] += 1.0
    after = np.asarray(bias(params, q, k2, pos, pos))
    np.testing.assert_allclose(before[:, :, :4, :4], after[:, :, :4, :4], atol=1e-6)
    assert not np.allclose(before[:, :, 4:], after[:, :, 4:])


# -- PaTH ------------------------------------------------------------------------------------------


def householder_loop(q, k, w, beta):
    """q_i^T H_i H_(i-1) ... H_(j+1) k_j as the product of explicit matrices, float64."""
    B_, H_, n, d = q.shape
    out = np.zeros((B_, H_, n, n))
    for b in range(B_):
        for h in range(H_):
            for i in range(n):
                prod = np.eye(d)
                for j in range(i, -1, -1):
                    out[b, h, i, j] = q[b, h, i] @ prod @ k[b, h, j]
                    prod = prod @ (np.eye(d) - beta[b, h, j] * np.outer(w[b, h, j], w[b, h, j]))
    return out


@pytest.mark.parametrize("length", [5, 37])  # one chunk; three chunks, the last one partial
def test_path_logits_are_the_product_of_householders_in_float64(length):
    rng = np.random.default_rng(length)
    q, k, w = (rng.normal(size=(1, 2, length, 6)) for _ in range(3))
    w /= np.linalg.norm(w, axis=-1, keepdims=True)
    beta = rng.uniform(0.0, 2.0, (1, 2, length))
    with jax.enable_x64(True):
        got = np.asarray(householder_logits(*map(jnp.asarray, (q, k, w, beta))))
    np.testing.assert_allclose(got, householder_loop(q, k, w, beta), atol=1e-11)
    assert (got[..., np.triu_indices(length, 1)[0], np.triu_indices(length, 1)[1]] == 0).all()


@pytest.mark.parametrize("run", [16, 40, 64])
def test_path_logits_keep_float32_precision_on_a_repeated_token(run):
    # One token repeated (identical w) from position 3 on, across chunk boundaries, at beta 1.9:
    # a power series for the chunk inverse cancels here (errors of 3e-2 to 7e-2 at 32-64).
    rng = np.random.default_rng(run)
    length = run + 3
    q, k, w = (rng.normal(size=(1, 1, length, 8)) for _ in range(3))
    w[:, :, 3:] = w[:, :, 3]
    w /= np.linalg.norm(w, axis=-1, keepdims=True)
    beta = np.full((1, 1, length), 1.9)
    inputs = [x.astype(np.float32) for x in (q, k, w, beta)]
    want = householder_loop(*(x.astype(np.float64) for x in inputs))
    got = np.asarray(householder_logits(*map(jnp.asarray, inputs)))
    assert got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-5 * np.abs(want).max()


def test_path_reads_unit_householders_from_the_keys_and_is_causal_only():
    enc = PaTH()
    params = enc.init_layer(jax.random.key(6), DIMS)
    _, k = qk(6)
    householders = jax.jit(enc.householders)
    w, beta = householders(params, k)
    np.testing.assert_allclose(np.linalg.norm(w, axis=-1), 1.0, atol=1e-5)
    assert (0 < np.asarray(beta)).all() and (np.asarray(beta) < 2).all()
    # The short convolution reads earlier keys only: a later key leaves earlier w unchanged.
    k2 = k.copy()
    k2[:, 4] += 1.0
    w2, _ = householders(params, k2)
    np.testing.assert_allclose(w[:, :, :4], w2[:, :, :4], atol=1e-6)
    with pytest.raises(ValueError, match="causal models only"):
        enc.check(dataclasses.replace(DIMS, causal=False), 0)
    with pytest.raises(ValueError, match="conv_size must be an integer >= 1"):
        PaTH(conv_size=0).check(DIMS, 0)


# -- temperatures ----------------------------------------------------------------------------------


def test_temperature_scales_queries_by_llama4s_formula():
    enc = Temperature(floor_scale=4)
    q, k = qk(7, length=20)
    pos = contiguous(20)
    q2, k2 = enc.rotate({}, q, k, pos, pos)
    np.testing.assert_array_equal(k2, k)
    # transformers' Llama4TextAttention: log1p(floor((cache_position + 1) / floor_scale)) * 0.1 + 1
    scale = np.log1p(np.floor((np.arange(20) + 1.0) / 4)) * 0.1 + 1.0
    np.testing.assert_allclose(q2, q * scale[None, :, None, None], rtol=1e-6)
    assert scale[2] == 1.0 and scale[3] > 1.0


def test_nape_alibi_heads_and_length_adaptive_temperature():
    enc = NAPE()
    params = enc.init_layer(jax.random.key(8), DIMS)
    beta, gamma = np.asarray(params["beta_H"]), np.asarray(params["gamma_H"])
    assert ((0.1 <= beta) & (beta <= 1.0)).all() and np.abs(gamma).max() < 0.5
    q, k = qk(8)
    pos = contiguous(start=1)
    bias = np.asarray(enc.bias(params, q, k, pos, pos))
    dist = np.abs(pos[:, None, :] - pos[:, :, None])
    for h in range(H):  # heads 0, 1: ALiBi with slopes 1, 1/2; heads 2, 3: NoPE
        slope = 1.0 / (h + 1) if h < 2 else 0.0
        np.testing.assert_allclose(bias[:, h], -slope * dist, atol=1e-6)
    q2, _ = enc.rotate(params, q, k, pos, pos)
    scale = np.ones((B, L, H))
    for h in (2, 3):
        scale[..., h] = 1.0 + beta[h] * np.log(pos + 2.0) ** gamma[h]
    np.testing.assert_allclose(q2, q * scale[..., None], rtol=1e-5)
    q3, _ = NAPE(scale="none").rotate({}, q, k, pos, pos)
    np.testing.assert_array_equal(q3, q)


# -- normalizations --------------------------------------------------------------------------------


def entmax15_bisection(x):
    """p = [x / 2 - tau]_+^2 summing to 1, tau by bisection (float64)."""
    x = x / 2
    lo, hi = x.max() - 1.0, x.max()
    for _ in range(200):
        tau = (lo + hi) / 2
        lo, hi = (tau, hi) if np.sum(np.maximum(x - tau, 0) ** 2) > 1 else (lo, tau)
    return np.maximum(x - tau, 0) ** 2


def allowed_mask():
    allowed = np.broadcast_to(np.tril(np.ones((5, 7), bool), k=2), (2, 5, 7)).copy()
    allowed[1, :, 5:] = False  # padding keys
    return allowed


def test_entmax15_matches_bisection_and_its_gradient_in_float64():
    z = 3 * RNG.normal(size=(2, 3, 5, 7))
    allowed = allowed_mask()
    w = RNG.normal(size=z.shape)
    with jax.enable_x64(True):
        p = np.asarray(normalizations.entmax15(jnp.asarray(z), jnp.asarray(allowed)))

        @jax.jit
        def f(z):
            return jnp.sum(jnp.asarray(w) * normalizations.entmax15(z, jnp.asarray(allowed)))

        grad = np.asarray(jax.grad(f)(jnp.asarray(z)))
        numeric = np.zeros_like(z)
        for idx in np.ndindex(*z.shape):
            step = np.zeros_like(z)
            step[idx] = 1e-6
            numeric[idx] = (f(jnp.asarray(z + step)) - f(jnp.asarray(z - step))) / 2e-6
    expected = np.zeros_like(z)
    for b, h, i in np.ndindex(2, 3, 5):
        expected[b, h, i, allowed[b, i]] = entmax15_bisection(z[b, h, i, allowed[b, i]])
    np.testing.assert_allclose(p, expected, atol=1e-12)
    assert (p == 0).mean() > 0.3  # sparse: many keys get exactly 0
    np.testing.assert_allclose(grad, numeric, atol=1e-7)


def test_ssmax_is_softmax_of_log_n_scaled_logits():
    z = RNG.normal(size=(2, 3, 5, 7))
    allowed = allowed_mask()
    s = np.array([0.5, 1.0, 2.0])
    p = np.asarray(
        normalizations.ssmax(jnp.asarray(z), jnp.asarray(allowed), scale_H=jnp.asarray(s))
    )
    for b, h, i in np.ndindex(2, 3, 5):
        a = allowed[b, i]
        n = a.sum()
        e = np.exp(s[h] * np.log(n) * z[b, h, i, a])
        np.testing.assert_allclose(p[b, h, i, a], e / e.sum(), rtol=1e-5)
        assert (p[b, h, i, ~a] == 0).all()


@pytest.mark.parametrize("normalization", ["ssmax", "entmax15"])
def test_normalizations_train_and_refuse_dot_product(normalization):
    cfg = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=16)
    cfg = dataclasses.replace(cfg, normalization=normalization)
    model = model_lib.Transformer(cfg, encodings.get("nape"), 12, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model)
    tokens = jnp.asarray(RNG.integers(0, 12, (2, 6)))
    pos = jnp.asarray(contiguous(6))

    @jax.jit
    @jax.grad
    def grad(params):
        return jnp.mean(nnx.merge(graphdef, params)(tokens, pos) ** 2)

    norm = nnx.to_pure_dict(grad(params))["blocks"][0]["attn"].get("norm", {})
    if normalization == "ssmax":
        assert float(jnp.abs(norm["scale_H"]).max()) > 0
    else:
        assert norm == {}
    with pytest.raises(ValueError, match="set --model.attention to einsum or auto"):
        dataclasses.replace(cfg, attention="dot_product").check()


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


# -- errors ----------------------------------------------------------------------------------------

ERRORS = [
    (FoPE(train_length=6), DIMS, "fope train_length=6 keeps no frequency"),
    (FoPE(init_gain=-1.0), DIMS, "fope init_gain must be a number >= 0"),
    (FoPE(base=1.0), DIMS, "fope base must be > 1"),
    (FoPE(), encodings.Dims(12, 4, 3), "head_dim for fope must be even"),
    (PoPE(base=0.5), DIMS, "pope base must be > 1"),
    (DAPE(prior="t5"), DIMS, "Unknown dape prior 't5'; choose one of alibi, kerple, fire"),
    (DAPE(kernel_size=2), DIMS, "kernel_size=2 must be odd"),
    (DAPE(mlp_width=0), DIMS, "dape mlp_width must be an integer >= 1"),
    (DAPE(kernel_size=3), dataclasses.replace(DIMS, causal=False), "use a causal model"),
    (Temperature(floor_scale=0), DIMS, "temperature floor_scale must be > 0"),
    (Temperature(attn_scale=0.0), DIMS, "temperature attn_scale must be > 0"),
    (NAPE(alibi_heads=5), DIMS, "alibi_heads=5 is more than the model's num_heads=4"),
    (NAPE(scale="fixed"), DIMS, "Unknown nape scale 'fixed'"),
]


@pytest.mark.parametrize(("enc", "dims", "match"), ERRORS, ids=lambda x: str(x)[:40])
def test_hyperparameter_errors_name_the_option_and_a_valid_value(enc, dims, match):
    with pytest.raises(ValueError, match=match):
        enc.check(dims, 0)


def test_causal_only_encodings_are_refused_for_encoders_before_training():
    for name in ("path",):
        cfg = RunConfig(encoding=encodings.get(name), model=ModelConfig(causal=False))
        with pytest.raises(ValueError, match="causal models only"):
            cfg.check()


def test_every_new_encoding_is_registered_and_round_trips():
    for name, cls in [
        ("fope", FoPE),
        ("pope", PoPE),
        ("dape", DAPE),
        ("path", PaTH),
        ("temperature", Temperature),
        ("nape", NAPE),
    ]:
        enc = encodings.get(name)
        assert type(enc) is cls and encodings.from_dict(encodings.to_dict(enc)) == enc
    assert ALiBi() == DAPE().prior_encoding


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 9, 13, 16])
def test_unit_lower_inverse_is_the_inverse_in_float64(size):
    a = np.tril(np.random.default_rng(size).normal(size=(3, size, size)), k=-1)
    with jax.enable_x64(True):
        got = np.asarray(unit_lower_inverse(jnp.asarray(a)))
    np.testing.assert_allclose(got, np.linalg.inv(np.eye(size) + a), rtol=1e-10, atol=1e-10)


PATH_STEPS = """
import sys
from pe_research import encodings, tasks, train
from pe_research.config import ModelConfig, RunConfig, TrainConfig
cfg = RunConfig(task=tasks.get("copy"), encoding=encodings.get("path"),
                model=ModelConfig(num_layers=1),
                train=TrainConfig(steps=3, batch_size=64, train_length=16, length_buckets=2))
train.train(cfg, sys.argv[1], progress=False)
"""


def test_path_trains_past_its_first_step_on_cpu(tmp_path):
    """The configuration whose second step deadlocked XLA's CPU runtime while PaTH's inverse was
    a triangular solve: three steps must finish, in a process of their
    own so that a deadlock fails the test instead of hanging the suite."""
    run = tmp_path / "run"
    try:
        subprocess.run(
            [sys.executable, "-c", PATH_STEPS, str(run)], check=True, timeout=240,
            capture_output=True, text=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("PaTH's training step did not finish 3 steps in 240 s (a deadlock?)")
    assert [r["step"] for r in runs.read_jsonl(run / runs.METRICS)][-1] == 3
