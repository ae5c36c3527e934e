"""pe_research: positional encodings for transformers, in JAX and Flax NNX.

Dimension key for array names (`x_BLD`, `logits_BHLM`, ...) and einsum strings:
    B batch              L query length       M key length
    D model width        H heads              K head dimension
    J rotary frequencies F MLP width          V vocabulary
    A position axes      P table positions    N buckets
    S packed models (one per seed; `params_S` has a leading axis of S models)

Layers, each importing only those below it (pyproject.toml [tool.importlinter] checks this):
    cli
    experiments (the top-level experiments/ folder, installed as pe_research.experiments)
    bench | sweeps/ | essay/      speed; sweeps, tables, pages, plots; the essay and analysis
    train | results, training/    the pure step, packed programs, the loop, checkpoints,
                                  evaluation; results tables of finished runs
    runs/ | data.catalog          run directories and their files; building datasets
    data.loader, data.builders | data.text    built evaluation sets, frozen corpora
    model, config | normalizations, tasks | positions, encodings | metrics | data.corpus,
    registry | data.store
"""

__version__ = "0.1.0"
