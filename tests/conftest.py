"""Test settings: CPU only, strict broadcasting, 8 simulated devices for multi-device tests."""

import os

# Must be set before jax is imported anywhere in the test process.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The CLI's persistent compilation cache would make tests depend on earlier runs: keep it off.
os.environ["PE_RESEARCH_JAX_CACHE"] = ""

import jax  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")
