"""Test settings: CPU only, strict broadcasting, no persistent compilation cache.

Multi-device tests start their own subprocess with simulated devices (see test_packing.py), so
every other test runs on one device, as a user's laptop would."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The CLI's persistent compilation cache would make tests depend on earlier runs: keep it off.
os.environ["PE_RESEARCH_JAX_CACHE"] = ""

import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")
# Many tests compile the same tiny programs again (each train() jits a fresh closure). A
# compilation cache private to this test session dedupes them without tying a test run to any
# earlier one. Subprocess tests inherit it through the environment.
_cache = tempfile.mkdtemp(prefix="pe_research_test_jax_cache_")
os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
jax.config.update("jax_compilation_cache_dir", _cache)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


# The slow tier (tests/slow_tests.txt, written by scripts/tier_tests.py from a timed run): marked
# `slow`, which the README's test command deselects (pyproject's addopts) and `pytest -m slow` runs.
_SLOW = {
    line.strip()
    for line in (Path(__file__).parent / "slow_tests.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in _SLOW:
            item.add_marker(pytest.mark.slow)
