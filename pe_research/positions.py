"""Position samplers: how positions are chosen, independent of how they are encoded.

A sampler is a frozen dataclass with `sample(key, valid_BL, coords_BLA=None)` and
`max_position(width)`, the largest position it can emit for a batch of that width, which the
run checks against encodings with a finite table. Its `position_axes` says what it emits: None
for positions pos_BL (int32), an int A for coordinates pos_BLA. `coords_BLA` is the task's
`Batch.coords` (None for 1-D tasks); 1-D samplers ignore it, so on a grid task they number the
flattened sequence. `task_axes` says how many task coordinates per token a sampler reads
(None: none). Padding positions get position 0; the model masks them out as keys, and in a
causal model no real token attends to them.

Every 1-D sampler keeps positions strictly increasing over the real tokens, except `coupled`, which
gives the digits of equal significance one position on purpose, and `abacus`, which numbers the
digits within each number (their `increasing` is False). Causal masking is by token index, never by
position, so the model is unaffected; an encoding that reads a larger key position as a key in the
future (T5's unidirectional buckets, xPos's decay) declares `needs_increasing_positions`, and the
run refuses that pairing.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from pe_research.registry import Registry


@dataclasses.dataclass(frozen=True)
class Contiguous:
    """0, 1, 2, ...: the usual positions, the same for training and evaluation."""

    name: ClassVar[str] = "contiguous"
    position_axes: ClassVar[int | None] = None
    task_axes: ClassVar[int | None] = None
    increasing: ClassVar[bool] = True

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        pos_1L = jnp.arange(valid_BL.shape[1], dtype=jnp.int32)[None, :]
        return jnp.where(valid_BL, pos_1L, 0)

    def max_position(self, width: int) -> int:
        return width - 1


@dataclasses.dataclass(frozen=True)
class Offset:
    """o, o+1, o+2, ...: contiguous positions shifted by o ~ U{0..max_offset}, one o per row.

    Training with random offsets shows an absolute encoding positions it will meet at longer
    evaluation lengths; a relative encoding is unaffected by construction.
    """

    name: ClassVar[str] = "offset"
    position_axes: ClassVar[int | None] = None
    task_axes: ClassVar[int | None] = None
    increasing: ClassVar[bool] = True
    max_offset: int = 256

    def __post_init__(self):
        _check_int("offset sampler max_offset", self.max_offset, minimum=0)

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        B, L = valid_BL.shape
        offset_B1 = jax.random.randint(key, (B, 1), 0, self.max_offset + 1, dtype=jnp.int32)
        pos_BL = offset_B1 + jnp.arange(L, dtype=jnp.int32)[None, :]
        return jnp.where(valid_BL, pos_BL, 0)

    def max_position(self, width: int) -> int:
        return self.max_offset + width - 1


@dataclasses.dataclass(frozen=True)
class Randomized:
    """A sorted sample without replacement of n positions from [0, max_pos) for n real tokens.

    Ruoss et al. (2023), "Randomized Positional Encodings Boost Length Generalization of
    Transformers": training sees positions up to max_pos - 1, chosen larger than the longest
    evaluation sequence, so evaluation reuses trained positions. The k-th real token of a row
    gets the k-th smallest of its sample.
    """

    name: ClassVar[str] = "randomized"
    position_axes: ClassVar[int | None] = None
    task_axes: ClassVar[int | None] = None
    increasing: ClassVar[bool] = True
    max_pos: int = 1024

    def __post_init__(self):
        _check_int("randomized sampler max_pos", self.max_pos, minimum=1)

    def check(self, width: int) -> None:
        if width > self.max_pos:
            raise ValueError(
                f"randomized position range smaller than the sequence: max_pos={self.max_pos} "
                f"distinct positions cannot cover a width of {width} tokens; raise max_pos to at "
                f"least {width} (Ruoss et al. pick it above the longest evaluation length)."
            )

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        B, L = valid_BL.shape
        # The L highest of max_pos i.i.d. scores form a uniform L-subset, and its first n
        # (top_k returns them by score) a uniform n-subset for every n <= L: shapes stay fixed.
        # A padded width may exceed max_pos; the run's check guarantees n <= max_pos itself.
        score_BP = jax.random.uniform(key, (B, self.max_pos))
        _, chosen_BK = jax.lax.top_k(score_BP, min(L, self.max_pos))
        chosen_BL = jnp.pad(
            chosen_BK, ((0, 0), (0, L - chosen_BK.shape[1])), constant_values=self.max_pos
        )
        n_B1 = jnp.sum(valid_BL, axis=1, keepdims=True, dtype=jnp.int32)
        first_n_BL = jnp.arange(L, dtype=jnp.int32)[None, :] < n_B1
        sorted_BL = jnp.sort(jnp.where(first_n_BL, chosen_BL, self.max_pos), axis=1)
        rank_BL = jnp.cumsum(valid_BL, axis=1, dtype=jnp.int32) - 1
        rank_BL = jnp.where(valid_BL, rank_BL, 0)
        pos_BL = jnp.take_along_axis(sorted_BL, rank_BL, axis=1)
        return jnp.where(valid_BL, pos_BL, 0).astype(jnp.int32)

    def max_position(self, width: int) -> int:
        self.check(width)
        return self.max_pos - 1


@dataclasses.dataclass(frozen=True)
class Scaled:
    """0, s, 2s, ...: contiguous positions times an integer stride s.

    The stride is an integer so positions stay integers (every encoding's table and check
    assume that); a fractional stride, as in position interpolation, belongs to the encoding.
    """

    name: ClassVar[str] = "scaled"
    position_axes: ClassVar[int | None] = None
    task_axes: ClassVar[int | None] = None
    increasing: ClassVar[bool] = True
    stride: int = 2

    def __post_init__(self):
        _check_int("scaled sampler stride", self.stride, minimum=1)

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        pos_1L = self.stride * jnp.arange(valid_BL.shape[1], dtype=jnp.int32)[None, :]
        return jnp.where(valid_BL, pos_1L, 0)

    def max_position(self, width: int) -> int:
        return self.stride * (width - 1)


@dataclasses.dataclass(frozen=True)
class Grid:
    """The task's own 2-D coordinates (row, col) per token, as pos_BLA for an axial 2-D encoding.

    Only grid tasks carry coordinates (`Batch.coords`); on any other task this sampler is an
    error. The same coordinates serve training and evaluation: there is nothing to randomize.
    """

    name: ClassVar[str] = "grid"
    position_axes: ClassVar[int | None] = 2
    task_axes: ClassVar[int | None] = 2
    increasing: ClassVar[bool] = False

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        A = self.position_axes
        if coords_BLA is None:
            raise ValueError(
                "the grid position sampler reads the task's (row, col) coordinates, but this "
                "task has no 2-D coordinates (Batch.coords is None): use a grid task (`grid`), "
                "or a 1-D sampler such as `contiguous`."
            )
        if coords_BLA.shape != (*valid_BL.shape, A):
            raise ValueError(
                f"grid sampler: coords_BLA must have shape {(*valid_BL.shape, A)} (B, L, {A}), "
                f"got {tuple(coords_BLA.shape)}; pass the batch's own Batch.coords."
            )
        return jnp.where(valid_BL[..., None], coords_BLA, 0).astype(jnp.int32)

    def max_position(self, width: int) -> int:
        # Coordinates number rows and columns of a grid laid out in these tokens: each < width.
        return width - 1


@dataclasses.dataclass(frozen=True)
class Coupled:
    """Position coupling (Cho et al., 2024, arXiv 2405.20671, "Position Coupling: Improving
    Length Generalization of Arithmetic Transformers Using Task Structure"): tokens the task
    couples share one position, e.g. the digits of equal significance in both operands and the
    sum of `addition` (its convention: tasks.Addition).

    The task gives each token its coupled position in Batch.coords ([B, L, 1]); the sampler adds
    a random offset o per row to every real token, as the paper does in training so that longer
    evaluations reuse trained positions. Two ways to draw it:
    - `max_offset`: o ~ U{0..max_offset}, whatever the row's length;
    - `position_limit`: o uniform over the offsets that keep the row's largest coupled position
      at most position_limit, Cho et al.'s random start (HanseulJo/position-coupling,
      src/data/addition.py, AdditionDatasetWithCoupledPositions: start ~ U[1, max_position -
      len(answer)]), so every training row reaches the positions up to the limit.
    Both 0: no offset. Evaluation keeps the coupling and drops the offset (eval.positions =
    "train" keeps it too). Positions repeat and are not increasing (see the module docstring).
    On a task without coupled positions the sampler is an error.
    """

    name: ClassVar[str] = "coupled"
    position_axes: ClassVar[int | None] = None
    task_axes: ClassVar[int | None] = 1
    increasing: ClassVar[bool] = False
    max_offset: int = 0
    position_limit: int = 0

    def __post_init__(self):
        _check_int("coupled sampler max_offset", self.max_offset, minimum=0)
        _check_int("coupled sampler position_limit", self.position_limit, minimum=0)
        if self.max_offset and self.position_limit:
            raise ValueError(
                "the coupled sampler draws its offset one way: give max_offset (the same range "
                "for every row) or position_limit (a range that keeps each row under the limit), "
                f"not both (got {self.max_offset} and {self.position_limit})."
            )

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        if coords_BLA is None:
            raise ValueError(
                "the coupled position sampler reads each token's coupled position from the task, "
                "but this task gives none (Batch.coords is None): use a task with coupled "
                "positions (`addition`), or a sampler such as `contiguous`."
            )
        if coords_BLA.shape != (*valid_BL.shape, 1):
            raise ValueError(
                f"coupled sampler: coords_BLA must have shape {(*valid_BL.shape, 1)} (B, L, 1), "
                f"got {tuple(coords_BLA.shape)}: the task must give one coupled position per "
                "token (a grid's (row, col) are not one)."
            )
        B = valid_BL.shape[0]
        coupled_BL = jnp.where(valid_BL, coords_BLA[..., 0], 0).astype(jnp.int32)
        if self.position_limit:
            # Offsets 0..limit - (row's largest position), each equally likely; a row already
            # past the limit gets none (the run's check keeps that from happening).
            room_B1 = jnp.maximum(self.position_limit - coupled_BL.max(1, keepdims=True), 0)
            u_B1 = jax.random.uniform(key, (B, 1))
            offset_B1 = jnp.minimum((u_B1 * (room_B1 + 1)).astype(jnp.int32), room_B1)
        else:
            offset_B1 = jax.random.randint(key, (B, 1), 0, self.max_offset + 1, jnp.int32)
        return jnp.where(valid_BL, coupled_BL + offset_B1, 0).astype(jnp.int32)

    def max_position(self, width: int) -> int:
        # A task's coupled positions number groups of its tokens: each < width.
        return max(self.max_offset + width - 1, self.position_limit)


@dataclasses.dataclass(frozen=True)
class Abacus:
    """Abacus positions (McLeish et al., 2024, arXiv 2405.17399, "Transformers Can Do
    Arithmetic with the Right Embeddings"): each digit at its place within its number, 1, 2,
    3, ... from the least significant (numbers are written reversed), every other token at 0,
    and in training one random offset k ~ U{0..max_offset} per row added to the digits only
    (the paper's max_k = 99: 100 offsets), so that longer numbers at evaluation reuse trained
    positions. Pair it with the `learned` encoding (its table must hold max_offset + the
    longest number + 1 rows): that is the paper's Abacus embedding, added to the token
    embeddings. The paper's code draws one k per batch; here one per row.

    A sampler, not an encoding: what is new is which position each token gets, and any
    encoding can read it. Its positions are the task's digit places (Batch.coords, [B, L, 1];
    `addition` and `multiplication` give them). Without the offset they equal the `coupled`
    sampler's; `coupled` adds its offset to every token, operators and SEP included, and is used
    with the relative encodings of Cho et al. Evaluation keeps the places and drops the offset
    (as the paper's evaluation, k = 0).
    """

    name: ClassVar[str] = "abacus"
    position_axes: ClassVar[int | None] = None
    task_axes: ClassVar[int | None] = 1
    increasing: ClassVar[bool] = False
    max_offset: int = 99

    def __post_init__(self):
        _check_int("abacus sampler max_offset", self.max_offset, minimum=0)

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        places_BL = Coupled().sample(key, valid_BL, coords_BLA)  # checks the coordinates
        offset_B1 = jax.random.randint(
            key, (valid_BL.shape[0], 1), 0, self.max_offset + 1, dtype=jnp.int32
        )
        return jnp.where(places_BL > 0, places_BL + offset_B1, 0).astype(jnp.int32)

    def max_position(self, width: int) -> int:
        # A digit's place within its number is at most the width.
        return self.max_offset + width


@dataclasses.dataclass(frozen=True)
class MRoPE:
    """Qwen2-VL's 3-D positions (time, height, width) for M-RoPE (`mrope`, arXiv 2409.12191).

    On a 1-D task every token is text: (i, i, i), its index on all three axes, which makes M-RoPE
    equal to 1-D RoPE. Arithmetic tasks' one-axis coordinates (digit places, read by the coupled
    samplers) are ignored like any 1-D sampler ignores them: the tokens are numbered. On a grid
    task every token is an image patch of one frame: (0, row, col); on a video task (3
    coordinates per token) the task's own (frame, row, col).
    """

    name: ClassVar[str] = "mrope"
    position_axes: ClassVar[int | None] = 3
    task_axes: ClassVar[int | None] = None  # a grid's (row, col) when the task has them
    increasing: ClassVar[bool] = False

    def sample(
        self, key: jax.Array, valid_BL: jax.Array, coords_BLA: jax.Array | None = None
    ) -> jax.Array:
        if coords_BLA is None or coords_BLA.shape == (*valid_BL.shape, 1):
            pos_BL = Contiguous().sample(key, valid_BL)
            return jnp.repeat(pos_BL[..., None], 3, axis=-1)
        if coords_BLA.shape == (*valid_BL.shape, 3):
            return jnp.where(valid_BL[..., None], coords_BLA, 0).astype(jnp.int32)
        if coords_BLA.shape != (*valid_BL.shape, 2):
            raise ValueError(
                f"mrope sampler: a task's coordinates must be (row, col) or (frame, row, col), "
                f"shape {(*valid_BL.shape, 2)} or {(*valid_BL.shape, 3)} (or one axis, which it "
                f"ignores), got "
                f"{tuple(coords_BLA.shape)}; use a 1-D task, the grid task or the video task."
            )
        frame_BL1 = jnp.zeros((*valid_BL.shape, 1), jnp.int32)
        pos_BLA = jnp.concatenate([frame_BL1, coords_BLA.astype(jnp.int32)], axis=-1)
        return jnp.where(valid_BL[..., None], pos_BLA, 0)

    def max_position(self, width: int) -> int:
        return width - 1


def evaluation_sampler(sampler: Sampler) -> Sampler:
    """The positions evaluation uses unless told to reuse training's (eval.positions "train"):
    contiguous, except where positions come from the task (n-D coordinates, coupling), which
    are kept, without a coupled or abacus sampler's random offset."""
    if sampler.position_axes is not None:
        return sampler
    if isinstance(sampler, Coupled | Abacus):
        return dataclasses.replace(sampler, max_offset=0)
    return Contiguous()


def _check_int(what: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r}.")


Sampler = Contiguous | Offset | Randomized | Scaled | Grid | Coupled | Abacus | MRoPE

_REGISTRY: Registry[Sampler] = Registry(
    "position sampler",
    "option",
    (Contiguous, Offset, Randomized, Scaled, Grid, Coupled, Abacus, MRoPE),
    hints={
        "max_offset": (
            "A random offset per sequence is an option of `offset` (contiguous positions "
            "shifted by o ~ U{0..max_offset}) and of `coupled` (the task's coupled positions "
            "shifted so) and of `abacus` (digit places shifted so): choose one of those, "
            "e.g. `offset --max-offset 64`."
        ),
    },
)
names = _REGISTRY.names
classes = _REGISTRY.classes
get = _REGISTRY.get
from_dict = _REGISTRY.from_dict


def to_dict(sampler: Sampler) -> dict[str, Any]:
    return {"name": sampler.name, **dataclasses.asdict(sampler)}
