"""Tasks on 2-D grids and 3-D volumes (frames of grids), whose tokens carry their (row, col) or
(frame, row, col) coordinates for n-D position samplers."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from pe_research.tasks.base import Batch, PromptAnswer, gather_BL


@dataclasses.dataclass(frozen=True)
class Grid(PromptAnswer):
    """Shift a square grid: an n x n grid written row-major, SEP, then the grid shifted by
    (shift_rows, shift_cols): answer cell (r, c) holds prompt cell (r - shift_rows,
    c - shift_cols). Answer cells whose source is off the grid hold PAD and are not scored.

    The task's length is the side n: a sequence has 2n^2 + 1 tokens. `Batch.coords` gives each
    token its (row, col): prompt and answer cells their own cell's, SEP (n, 0) (the row below
    the grid, where a row-major writer goes next), padding (0, 0). Prompt and answer share one
    frame, so the rule is one fixed 2-D offset between a query and the key it must read: an
    axial 2-D encoding states it at every grid size, while over the flattened sequence the
    offset is n^2 + 1 + shift_rows * n + shift_cols, which changes with n. (A transpose reads
    cell (c, r) from (r, c), an offset that depends on where the query is; no relative
    encoding, 1-D or 2-D, states that, so it would not separate them.)

    Answer cells are always asked for by BLANK placeholders at their own coordinates, in causal
    and bidirectional models alike: with teacher forcing, the token that predicts cell (r, c)
    sits at the previous cell, and the offset to the source would jump at every row end.
    """

    name = "grid"
    position_axes = 2
    shift_rows: int = 1
    shift_cols: int = 1

    def check(self) -> None:
        super().check()
        for field in ("shift_rows", "shift_cols"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"grid {field} must be an integer, got {value!r}.")

    def prompt_length(self, n: Any) -> Any:
        return n * n

    def answer_length(self, n: Any) -> Any:
        return n * n

    def seq_len(self, length: int, causal: bool) -> int:
        return 2 * length * length + 1

    def source(self, j_BT: jax.Array, n_B1: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Prompt index read by answer cell j, and whether that cell is on the grid."""
        row, col = j_BT // n_B1 - self.shift_rows, j_BT % n_B1 - self.shift_cols
        on_grid = (row >= 0) & (row < n_B1) & (col >= 0) & (col < n_B1)
        return row * n_B1 + col, on_grid

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        src_BT, on_grid_BT = self.source(j_BT, n_B1)
        read_BT = in_answer_BT & on_grid_BT
        return jnp.where(read_BT, gather_BL(x_BT, src_BT, read_BT), self.pad)

    def coords(self, n_B: jax.Array, width: int) -> jax.Array:
        """(row, col) of every token, [B, width, 2] int32."""
        n_B1 = n_B.astype(jnp.int32)[:, None]
        i_1L = jnp.arange(width, dtype=jnp.int32)[None, :]
        cells = n_B1 * n_B1
        # Answer cell a = i - n^2 - 1 lies in the same frame as prompt cell a.
        cell_BL = jnp.where(i_1L < cells, i_1L, i_1L - cells - 1)
        on_cell = (i_1L != cells) & (i_1L <= 2 * cells)
        row = jnp.where(on_cell, cell_BL // n_B1, jnp.where(i_1L == cells, n_B1, 0))
        col = jnp.where(on_cell, cell_BL % n_B1, 0)
        return jnp.stack([row, col], axis=-1).astype(jnp.int32)

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        seq_BT, p_B1, m_B1 = self._sequence(key, n_B, width + 1)
        batch = self._batch(seq_BT, p_B1, m_B1, width, causal=False)
        j_BL = jnp.arange(width, dtype=jnp.int32)[None, :] - p_B1 - 1
        _, on_grid_BL = self.source(j_BL, n_B.astype(jnp.int32)[:, None])
        return batch._replace(
            loss_mask=batch.loss_mask & on_grid_BL, coords=self.coords(n_B, width)
        )


@dataclasses.dataclass(frozen=True)
class Video(PromptAnswer):
    """Shift a video: n frames of a `side` x `side` grid written frame by frame, row-major, SEP,
    then the video shifted by (shift_frames, shift_rows, shift_cols): answer cell (t, r, c) holds
    prompt cell (t - shift_frames, r - shift_rows, c - shift_cols); cells whose source is outside
    the video hold PAD and are not scored.

    The 3-D analogue of `grid`, for M-RoPE on the data it was made for (Qwen2-VL's positions are
    (time, height, width)). The task's length is the number of frames n, at a fixed frame size,
    so training on few frames and evaluating on more stretches time alone: the axis on which
    M-RoPE's layouts differ (which rotary frequencies time gets). A sequence has
    2 n side^2 + 1 tokens. `Batch.coords` gives each token its (frame, row, col): prompt and
    answer cells their own cell's (one frame of reference, so the rule is one fixed 3-D offset),
    SEP (n, 0, 0) (the frame after the video), padding (0, 0, 0). Answer cells are asked for by
    BLANK placeholders at their own coordinates in causal and bidirectional models alike (as
    `grid`'s). Use the `mrope` sampler (it passes these coordinates through) with `mrope`, or
    `rope_nd` / `liere` / `comrope` with axes=3 and the same sampler's coordinates.
    """

    name = "video"
    position_axes = 3
    side: int = 3
    shift_frames: int = 1
    shift_rows: int = 1
    shift_cols: int = 0

    def check(self) -> None:
        super().check()
        if isinstance(self.side, bool) or not isinstance(self.side, int) or self.side < 1:
            raise ValueError(f"video side must be an integer >= 1, got {self.side!r}.")
        for field in ("shift_frames", "shift_rows", "shift_cols"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"video {field} must be an integer, got {value!r}.")
        if abs(self.shift_rows) >= self.side or abs(self.shift_cols) >= self.side:
            raise ValueError(
                f"video shifts ({self.shift_rows}, {self.shift_cols}) move every cell off a "
                f"side={self.side} frame: keep |shift_rows| and |shift_cols| below side."
            )

    def prompt_length(self, n: Any) -> Any:
        return n * self.side * self.side

    def answer_length(self, n: Any) -> Any:
        return n * self.side * self.side

    def seq_len(self, length: int, causal: bool) -> int:
        return 2 * length * self.side * self.side + 1

    def cell(self, a_BT: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(frame, row, col) of cell index a (frame-major, row-major)."""
        s = self.side
        return a_BT // (s * s), a_BT // s % s, a_BT % s

    def source(self, j_BT: jax.Array, n_B1: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Prompt index read by answer cell j, and whether that cell is in the video."""
        t, r, c = self.cell(j_BT)
        t, r, c = t - self.shift_frames, r - self.shift_rows, c - self.shift_cols
        s = self.side
        inside = (t >= 0) & (t < n_B1) & (r >= 0) & (r < s) & (c >= 0) & (c < s)
        return (t * s + r) * s + c, inside

    def answer(
        self, x_BT: jax.Array, j_BT: jax.Array, n_B1: jax.Array, in_answer_BT: jax.Array
    ) -> jax.Array:
        src_BT, inside_BT = self.source(j_BT, n_B1)
        read_BT = in_answer_BT & inside_BT
        return jnp.where(read_BT, gather_BL(x_BT, src_BT, read_BT), self.pad)

    def coords(self, n_B: jax.Array, width: int) -> jax.Array:
        """(frame, row, col) of every token, [B, width, 3] int32."""
        n_B1 = n_B.astype(jnp.int32)[:, None]
        i_1L = jnp.arange(width, dtype=jnp.int32)[None, :]
        cells = n_B1 * self.side * self.side
        cell_BL = jnp.where(i_1L < cells, i_1L, i_1L - cells - 1)
        on_cell = (i_1L != cells) & (i_1L <= 2 * cells)
        t, r, c = self.cell(cell_BL)
        t = jnp.where(on_cell, t, jnp.where(i_1L == cells, n_B1, 0))
        return jnp.stack([t, jnp.where(on_cell, r, 0), jnp.where(on_cell, c, 0)], -1).astype(
            jnp.int32
        )

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        seq_BT, p_B1, m_B1 = self._sequence(key, n_B, width + 1)
        batch = self._batch(seq_BT, p_B1, m_B1, width, causal=False)
        j_BL = jnp.arange(width, dtype=jnp.int32)[None, :] - p_B1 - 1
        _, inside_BL = self.source(j_BL, n_B.astype(jnp.int32)[:, None])
        return batch._replace(loss_mask=batch.loss_mask & inside_BL, coords=self.coords(n_B, width))
