"""DAPE: the additive bias refined by a small network that reads the attention logits next to a
prior bias (Zheng et al., 2024, arXiv 2405.14722, "DAPE: Data-Adaptive Positional Encoding for
Length Extrapolation", first titled CAPE; and DAPE v2, Zheng et al., 2024, arXiv 2410.04798,
"DAPE V2: Process Attention Score as Feature Map for Length Extrapolation").

    logits = z + b + f(z, b),   z = q.k / sqrt(K),  b = the prior's bias (ALiBi, Kerple or FIRE)

f sees, at every query-key entry, the 2H numbers (z_h, b_h) of all heads and returns H numbers.
DAPE (`kernel_size=1`): f is an MLP 2H -> `mlp_width` -> H with a LeakyReLU, applied entry by
entry (chuanyang-Zheng/DAPE, DAPE.py: AliBi_DAPE, ParallelKerpleLog_DAPE, FIRE_DAPE). DAPE v2
(`kernel_size=k > 1`, their configs use 3): the two layers are convolutions of width k along the
keys, so an entry also reads its neighbouring keys, on the logits with the future zeroed
(megatron/model/positional_embeddings.py: Alibi_DAPEV2 and the others, which apply torch.tril
first); it reads neighbours by token index, so it needs a causal model. The prior's parameters
(Kerple's, FIRE's) are learned with the network's, per layer. The logits that f reads are the
model's q.k scaling; the hook computes them again from q and k (the bias hook sees both).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from pe_research.encodings.base import Dims, Encoding, Params, require_scaled_logits
from pe_research.encodings.bias import ALiBi, Kerple
from pe_research.encodings.learned_bias import FIRE

PRIORS: dict[str, Encoding] = {"alibi": ALiBi(), "kerple": Kerple(), "fire": FIRE()}
_PRIOR = "prior_"  # prefix of the prior's parameters among this layer's


@dataclasses.dataclass(frozen=True)
class DAPE(Encoding):
    """DAPE / CAPE (kernel_size 1) and DAPE v2 (kernel_size > 1) on a prior bias (module
    docstring); the bias hook."""

    name = "dape"
    learned = True
    prior: Literal["alibi", "kerple", "fire"] = "alibi"
    kernel_size: int = 1
    mlp_width: int = 32

    @property
    def prior_encoding(self) -> Encoding:
        return PRIORS[self.prior]

    def check(self, dims: Dims, max_position: int) -> None:
        require_scaled_logits("dape", dims)
        if self.prior not in PRIORS:
            raise ValueError(
                f"Unknown dape prior {self.prior!r}; choose one of {', '.join(PRIORS)} (the bias "
                "the network refines)."
            )
        for name in ("kernel_size", "mlp_width"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"dape {name} must be an integer >= 1, got {value!r}.")
        if self.kernel_size % 2 == 0:
            raise ValueError(
                f"dape kernel_size={self.kernel_size} must be odd (centred on the key, as the "
                "paper's padding k // 2): use 1 (DAPE) or 3 (DAPE v2)."
            )
        if self.kernel_size > 1 and not dims.causal:
            raise ValueError(
                f"dape kernel_size={self.kernel_size} (DAPE v2) convolves over neighbouring keys, "
                "which in a bidirectional model would read padding beyond the sequence: use a "
                "causal model or kernel_size=1."
            )
        self.prior_encoding.check(dims, max_position)

    def init_layer(self, key: jax.Array, dims: Dims) -> Params:
        self.check(dims, 0)
        k_prior, k1, k2 = jax.random.split(key, 3)
        H, W, S = dims.num_heads, self.mlp_width, self.kernel_size
        prior = self.prior_encoding.init_layer(k_prior, dims)
        return {
            **{_PRIOR + name: value for name, value in prior.items()},
            # Fan-in scaled normals; the kernel's taps as a leading axis S.
            "w_in_SCW": jax.random.normal(k1, (S, 2 * H, W)) * (S * 2 * H) ** -0.5,
            "b_in_W": jnp.zeros((W,)),
            "w_out_SWH": jax.random.normal(k2, (S, W, H)) * (S * W) ** -0.5,
            "b_out_H": jnp.zeros((H,)),
        }

    def bias(
        self,
        params: Params,
        q_BLHK: jax.Array,
        k_BMHK: jax.Array,
        qpos_BL: jax.Array,
        kpos_BM: jax.Array,
    ) -> jax.Array:
        prior_params = {
            name.removeprefix(_PRIOR): value
            for name, value in params.items()
            if name.startswith(_PRIOR)
        }
        prior_BHLM = self.prior_encoding.bias(prior_params, q_BLHK, k_BMHK, qpos_BL, kpos_BM)
        z_BHLM = jnp.einsum("BLHK,BMHK->BHLM", q_BLHK, k_BMHK, preferred_element_type=jnp.float32)
        z_BHLM = z_BHLM * q_BLHK.shape[-1] ** -0.5
        prior_BHLM = jnp.broadcast_to(prior_BHLM, z_BHLM.shape)
        x_BCLM = jnp.concatenate([z_BHLM, prior_BHLM], axis=1)
        p = {name: params[name].astype(jnp.float32) for name in ("w_in_SCW", "b_in_W")}
        p |= {name: params[name].astype(jnp.float32) for name in ("w_out_SWH", "b_out_H")}
        if self.kernel_size > 1:
            # The future zeroed (by token index) before the convolutions read neighbours.
            L, M = x_BCLM.shape[-2:]
            x_BCLM = jnp.where(jnp.tril(jnp.ones((L, M), bool)), x_BCLM, 0.0)
        h_BWLM = _conv_keys(x_BCLM, p["w_in_SCW"]) + p["b_in_W"][None, :, None, None]
        h_BWLM = jax.nn.leaky_relu(h_BWLM, negative_slope=0.01)  # torch's default slope
        out_BHLM = _conv_keys(h_BWLM, p["w_out_SWH"]) + p["b_out_H"][None, :, None, None]
        return prior_BHLM + out_BHLM


def _conv_keys(x_BCLM: jax.Array, w_SCW: jax.Array) -> jax.Array:
    """A convolution of width S along the key axis M, centred, zero padded (torch's Conv2d with
    kernel (1, S) and padding (0, S // 2)): out[m] = sum_s w[s] . x[m + s - S // 2]."""
    S, M = w_SCW.shape[0], x_BCLM.shape[-1]
    half = S // 2
    padded = jnp.pad(x_BCLM, ((0, 0), (0, 0), (0, 0), (half, half)))
    return sum(jnp.einsum("BCLM,CW->BWLM", padded[..., s : s + M], w_SCW[s]) for s in range(S))
