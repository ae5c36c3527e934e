"""Rotations by expm of small skew-symmetric blocks, for the learned rotary encodings.

A head of K components is cut into G blocks of C; block g of a token at positions p turns by
R(p) = expm(sum_a p_a G_a), the G_a skew-symmetric C x C generators (learned_rotation.py).

Blocks of 2 and 4 have closed forms, exact for any generators and any real positions:

- C = 2: a 2 x 2 skew matrix is t J, and expm(t J) = cos t I + sin t J: RoPE with the angle t.
- C = 4: so(4) splits into two commuting copies of so(3): A = U + V with U self-dual (the
  quaternion-like basis P_k below) and V anti-self-dual (M_k), where every P_k and M_k squares to
  -I, P_i P_j = -P_j P_i, and every P_k commutes with every M_k. Then U^2 = -|u|^2 I, so
  expm(A) = expm(U) expm(V) = (cos|u| I + sinc|u| U)(cos|v| I + sinc|v| V), sinc r = sin r / r:
  Rodrigues' formula once per invariant plane pair. The coefficients u, v (three each) are
  linear in A, so u(p) = sum_a p_a u_a comes from the generators once per step, and a token
  costs two norms, four cos/sinc and two 3-term products of signed permutations of its block.

Larger blocks take the general path: `expm_skew` (Taylor of degree 8 with scaling and squaring)
per token, or, for commuting generators at integer positions, products of tabulated expms of
the positions' base-16 digits (`commuting_rotations`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

CLOSED_FORM_BLOCKS = (2, 4)


def skew(w_XCE: jax.Array) -> jax.Array:
    """The skew-symmetric part (w - w^T) / 2 of the last two axes: w itself if w is skew."""
    return (w_XCE - jnp.swapaxes(w_XCE, -1, -2)) / 2


def _unit(i: int, j: int) -> np.ndarray:
    e = np.zeros((4, 4))
    e[i, j], e[j, i] = 1.0, -1.0
    return e


# so(4) = (self-dual) + (anti-self-dual): A = sum_k u_k P_k + v_k M_k with
# u = ((a01 + a23) / 2, (a02 - a13) / 2, (a03 + a12) / 2) and v the same with the signs of the
# second terms flipped (a_ij = A[i, j]).
_P_KCE = np.stack([_unit(0, 1) + _unit(2, 3), _unit(0, 2) - _unit(1, 3), _unit(0, 3) + _unit(1, 2)])
_M_KCE = np.stack([_unit(0, 1) - _unit(2, 3), _unit(0, 2) + _unit(1, 3), _unit(0, 3) - _unit(1, 2)])


def so4_split(a_XCE: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(u_Xk, v_Xk): the self-dual and anti-self-dual coefficients of 4 x 4 skew matrices, so
    that A = sum_k u_k P_k + v_k M_k (each P_k, M_k has two entries +-1 above the diagonal)."""
    # <P_k, A> = 4 u_k (Frobenius), and likewise for M_k: the bases are orthogonal, norm 2.
    u_Xk = jnp.einsum("kce,...ce->...k", jnp.asarray(_P_KCE, a_XCE.dtype), a_XCE) / 4
    v_Xk = jnp.einsum("kce,...ce->...k", jnp.asarray(_M_KCE, a_XCE.dtype), a_XCE) / 4
    return u_Xk, v_Xk


def cos_sinc(r2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """cos r and sin r / r of r = sqrt(r2), smooth at r2 = 0 with finite gradients there (a
    position 0 or a zero generator gives r = 0)."""
    small = r2 < 1e-4  # Taylor to r^4: the next terms are below 1e-15 here
    r = jnp.sqrt(jnp.where(small, 1.0, r2))
    cos = jnp.where(small, 1 - r2 / 2 + r2 * r2 / 24, jnp.cos(r))
    sinc = jnp.where(small, 1 - r2 / 6 + r2 * r2 / 120, jnp.sin(r) / r)
    return cos, sinc


def _turn(x_XE: jax.Array, w_Xk: jax.Array, basis_KCE: np.ndarray) -> jax.Array:
    """expm(W) x for W = sum_k w_k B_k, the B_k anticommuting complex structures (B_k^2 = -I)."""
    cos_X, sinc_X = cos_sinc(jnp.sum(w_Xk * w_Xk, axis=-1))
    wx_XC = jnp.einsum("...k,kce,...e->...c", w_Xk, jnp.asarray(basis_KCE, x_XE.dtype), x_XE)
    return cos_X[..., None] * x_XE + sinc_X[..., None] * wx_XC


def rotate_closed_form(gen_HAGCE: jax.Array, x_BLHK: jax.Array, pos_BLA: jax.Array) -> jax.Array:
    """x with each block of C in (2, 4) components turned by expm(sum_a pos_a gen_a), in closed
    form; computed in float32 (or float64 when x is), x's dtype out."""
    B, L, H, K = x_BLHK.shape
    G, C = gen_HAGCE.shape[2:4]
    dtype = jnp.promote_types(x_BLHK.dtype, jnp.float32)
    gen_HAGCE, pos_BLA = gen_HAGCE.astype(dtype), pos_BLA.astype(dtype)
    x_BLHGE = x_BLHK.astype(dtype).reshape(B, L, H, G, C)
    if C == 2:
        # G = t J with J = [[0, -1], [1, 0]]: t is the lower entry; J x = (-x_1, x_0).
        t_BLHG = jnp.einsum("BLA,HAG->BLHG", pos_BLA, gen_HAGCE[..., 1, 0])
        jx_BLHGE = jnp.stack([-x_BLHGE[..., 1], x_BLHGE[..., 0]], axis=-1)
        y_BLHGC = jnp.cos(t_BLHG)[..., None] * x_BLHGE + jnp.sin(t_BLHG)[..., None] * jx_BLHGE
    elif C == 4:
        u_HAGk, v_HAGk = so4_split(gen_HAGCE)
        u_BLHGk = jnp.einsum("BLA,HAGk->BLHGk", pos_BLA, u_HAGk)
        v_BLHGk = jnp.einsum("BLA,HAGk->BLHGk", pos_BLA, v_HAGk)
        # expm(U) and expm(V) commute; V first.
        y_BLHGC = _turn(_turn(x_BLHGE, v_BLHGk, _M_KCE), u_BLHGk, _P_KCE)
    else:
        raise ValueError(f"closed forms exist for blocks of {CLOSED_FORM_BLOCKS}, not {C}.")
    return y_BLHGC.reshape(B, L, H, K).astype(x_BLHK.dtype)


# -- the general path: blocks of any size ---------------------------------------------------------

DIGIT_BASE = 16
DIGITS = 6  # |p| < 16^6 = 2^24, below which float32 counts integers exactly
MAX_SQUARINGS = 30


def matmul_small(a_XCE: jax.Array, b_XEF: jax.Array) -> jax.Array:
    """a @ b over the last two axes as C broadcast products: on CPU, XLA's batched dot of many
    tiny matrices was several times slower."""
    C = a_XCE.shape[-1]
    return sum(a_XCE[..., :, e : e + 1] * b_XEF[..., e : e + 1, :] for e in range(C))


def expm_skew(a_XCE: jax.Array) -> jax.Array:
    """expm of each square matrix of a float32 batch: Taylor of degree 8 at norm <= 1/2, then
    squarings (each matrix its own count, up to MAX_SQUARINGS; beyond, NaN)."""
    # One flat batch axis: gradients of this loop over arrays of rank 7 crashed XLA:CPU (jax 0.10).
    shape = a_XCE.shape
    a_XCE = a_XCE.reshape(-1, *shape[-2:])
    norm_X = jnp.sqrt(jnp.sum(a_XCE * a_XCE, axis=(-2, -1)))  # Frobenius >= spectral norm
    tiny = jnp.finfo(jnp.float32).tiny
    s_X = jnp.maximum(jnp.ceil(jnp.log2(jnp.maximum(norm_X, tiny) / 0.5)), 0.0)
    s_X = jax.lax.stop_gradient(s_X)
    x_XCE = a_XCE / (2.0**s_X)[..., None, None]
    eye_XCE = jnp.eye(a_XCE.shape[-1], dtype=a_XCE.dtype)[None]
    r_XCE = jnp.broadcast_to(eye_XCE, a_XCE.shape)
    for k in range(8, 0, -1):  # Horner: remainder <= (1/2)^9 / 9! < 6e-9
        r_XCE = eye_XCE + matmul_small(x_XCE, r_XCE) / k

    def square(i: int, r_XCE: jax.Array) -> jax.Array:
        return jnp.where((i < s_X)[..., None, None], matmul_small(r_XCE, r_XCE), r_XCE)

    r_XCE = jax.lax.fori_loop(0, MAX_SQUARINGS, square, r_XCE)
    return jnp.where((s_X > MAX_SQUARINGS)[..., None, None], jnp.nan, r_XCE).reshape(shape)


def block_rotations(gen_HAGCE: jax.Array, pos_BLA: jax.Array) -> jax.Array:
    """rot_BLHGCE = expm(sum_a pos_a gen_a) per token, head and block, in float32: any
    generators, any real positions."""
    angle_BLHGCE = jnp.einsum(
        "BLA,HAGCE->BLHGCE", pos_BLA.astype(jnp.float32), gen_HAGCE.astype(jnp.float32)
    )
    return expm_skew(angle_BLHGCE)


def commuting_rotations(gen_HAGCE: jax.Array, pos_BLA: jax.Array) -> jax.Array:
    """rot_BLHGCE of `block_rotations` for commuting generators and integer positions, from
    tables of expm(j 16^d gen_a): R(p) = prod_a prod_d T_ad[digit_d(|p_a|)], transposed for
    p_a < 0. Exact: expm of commuting summands is the product of their expms."""
    j_J = jnp.arange(DIGIT_BASE, dtype=jnp.float32)
    scale_DJ = float(DIGIT_BASE) ** jnp.arange(DIGITS, dtype=jnp.float32)[:, None] * j_J[None]
    table_DJHAGCE = expm_skew(
        scale_DJ[:, :, None, None, None, None, None] * gen_HAGCE.astype(jnp.float32)[None, None]
    )
    rot_BLHGCE = None
    for a in range(pos_BLA.shape[-1]):
        p_BL = pos_BLA[:, :, a]
        axis_BLHGCE = None
        for d in range(DIGITS):
            digit_BL = (jnp.abs(p_BL) // DIGIT_BASE**d) % DIGIT_BASE
            # A one-hot product rather than a gather: its gradient is a matmul, not a
            # scatter-add.
            onehot_BLJ = jax.nn.one_hot(digit_BL, DIGIT_BASE, dtype=jnp.float32)
            factor_BLHGCE = jnp.einsum("BLJ,JHGCE->BLHGCE", onehot_BLJ, table_DJHAGCE[d, :, :, a])
            axis_BLHGCE = (
                factor_BLHGCE if axis_BLHGCE is None else matmul_small(axis_BLHGCE, factor_BLHGCE)
            )
        flip_BL111 = (p_BL < 0)[:, :, None, None, None, None]
        axis_BLHGCE = jnp.where(flip_BL111, jnp.swapaxes(axis_BLHGCE, -1, -2), axis_BLHGCE)
        too_far_BL111 = (jnp.abs(p_BL) >= DIGIT_BASE**DIGITS)[:, :, None, None, None, None]
        axis_BLHGCE = jnp.where(too_far_BL111, jnp.nan, axis_BLHGCE)
        rot_BLHGCE = axis_BLHGCE if rot_BLHGCE is None else matmul_small(rot_BLHGCE, axis_BLHGCE)
    return rot_BLHGCE


def rotate_blocks(x_BLHK: jax.Array, rot_BLHGCE: jax.Array) -> jax.Array:
    """Each block of C components of x turned by its rotation; float32 inside, x's dtype out."""
    B, L, H, K = x_BLHK.shape
    G, C = rot_BLHGCE.shape[3:5]
    x_BLHGE = x_BLHK.astype(jnp.float32).reshape(B, L, H, G, C)
    y_BLHGC = jnp.einsum("BLHGCE,BLHGE->BLHGC", rot_BLHGCE, x_BLHGE)
    return y_BLHGC.reshape(B, L, H, K).astype(x_BLHK.dtype)
