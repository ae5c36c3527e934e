"""Test settings: CPU only, strict broadcasting, no persistent compilation cache.

Multi-device tests start their own subprocess with simulated devices (see test_packing.py), so
every other test runs on one device, as a user's laptop would."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The CLI's persistent compilation cache would make tests depend on earlier runs: keep it off.
os.environ["PE_RESEARCH_JAX_CACHE"] = ""

import jax  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")
