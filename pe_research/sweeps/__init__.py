"""Sweeps and reporting, on top of training and run storage.

experiments.py  experiments by name or path, their scales and shared presets
sweep.py        run an experiment: run directories, claims, shards, the results table
workers.py      the helper processes of --workers, and how a sweep stops on SIGTERM
launch.py       a sweep submitted through submitit: shard jobs, then a table job (SLURM, local)
grouping.py     runs -> packed programs, shards, compiling ahead
summary.py      per-length tables, the generalization table, steps to fit, fit counts
plotting.py     rows -> matplotlib Figure (lines with seed bands, heatmaps, headline figures)
pages.py        a sweep's page and figures, pure functions of its results table
report.py       every generated page from the committed tables (pe-research report)
leaderboard.py  every encoding on every task: scores, sorted tables, heatmaps
protocol.py     a reproduction's protocol table: the paper's choices beside ours, sourced
describe.py     protocol-table cells written from the configs
cost.py         a sweep's FLOPs and accelerator hours, printed before it trains
"""
