#!/bin/bash
# A sweep on a Cloud TPU VM pod slice: each host of the slice is one JAX process and trains one
# shard. The hosts join one JAX job through --coordinator (worker 0's address; JAX finds the
# number of hosts and each host's index on a TPU slice by itself), and `--shard auto` then reads
# jax.process_index() and jax.process_count(). The run folder and the table live on a file
# system every host mounts (a Filestore NFS share at /shared here).
#
#   examples/tpu_pod.sh TPU_NAME ZONE EXPERIMENT
#
# Once, on every host: git clone the repository to ~/pe_research, then
#   cd pe_research && pip install -e ".[tpu]"
# Running the script again resumes: runs in the table, or finished on /shared, are skipped.
set -euo pipefail

name=${1:?usage: examples/tpu_pod.sh TPU_NAME ZONE EXPERIMENT}
zone=${2:?usage: examples/tpu_pod.sh TPU_NAME ZONE EXPERIMENT}
experiment=${3:?usage: examples/tpu_pod.sh TPU_NAME ZONE EXPERIMENT}
folders="--out /shared/pe_research/runs/$experiment --results /shared/pe_research/results/$experiment"
worker0=$(gcloud compute tpus tpu-vm describe "$name" --zone "$zone" \
  --format='value(networkEndpoints[0].ipAddress)')

gcloud compute tpus tpu-vm ssh "$name" --zone "$zone" --worker=all --command \
  "cd pe_research && pe-research sweep $experiment --shard auto --coordinator $worker0:8476 $folders --no-summarize --no-progress"
gcloud compute tpus tpu-vm ssh "$name" --zone "$zone" --worker=0 --command \
  "cd pe_research && pe-research sweep $experiment --tables-only $folders"
