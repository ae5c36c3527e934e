"""Sweeps and reporting, on top of training and run storage.

experiments.py  experiment files: loading them, their scales and shared presets
sweep.py        run an experiment: run directories, claims, shards, seed packing
summary.py      per-length tables, the generalization table, results.csv and summary.md
plotting.py     rows -> matplotlib Figure (lines with seed bands, heatmaps, headline figures)
protocol.py     a reproduction's protocol table: the paper's choices beside ours, sourced
describe.py     protocol-table cells written from the configs
cost.py         a sweep's FLOPs and accelerator hours, printed before it trains
report.py       the reproduction report (pe-research report)
"""
