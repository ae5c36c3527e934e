#!/usr/bin/env bash
# Run experiment sweeps side by side on the accelerator machine (no network) and bring back
# their results tables: OUT/<experiment>[-<scale>]/results.parquet, curves.parquet, results.csv.
#
#     bash scripts/device_sweeps.sh SECONDS SPEC...
#     SPEC = EXPERIMENT[:SCALE[:TASK,TASK...[:WORKERS]]]      (empty fields: defaults)
#     e.g. bash scripts/device_sweeps.sh 420 mcgill::copy,reverse:5 randomized:cpu::5
#
# Fill the wheel folder here first (bash scripts/device_wheels.sh) and name .whl in the run's
# carry. Every sweep stops after SECONDS and writes the table of the runs it finished (the others
# train again anywhere: their checkpoints stay behind). Copy a table folder to
# docs/results/<experiment>[-<scale>] here and `pe-research sweep EXPERIMENT --scale S --results
# docs/results/...` resumes from it. Environment: OUT (default runs/device).
set -euo pipefail
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; } # the comment above
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    usage
    exit 0
fi
if (($# < 2)); then
    echo "device_sweeps: give SECONDS and at least one SPEC, e.g. 420 mcgill::copy:2" >&2
    usage >&2
    exit 2
fi
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/device}
seconds=$1
shift
mkdir -p "$OUT"

# INSTALL=0 skips the wheels (a smoke test where the project is installed already).
[[ ${INSTALL:-1} == 1 ]] && bash scripts/device_check.sh --install-only
export PYTHONPATH="$PWD:${SITE:-/tmp/site}${PYTHONPATH:+:$PYTHONPATH}"
# Many processes share the one GPU: none may take JAX's default 75% of its memory.
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
export PE_RESEARCH_JAX_CACHE=${PE_RESEARCH_JAX_CACHE:-/tmp/pe_research_jax}
python3 -c 'import jax; print("jax", jax.__version__, jax.devices())'

outs=() pids=()
for spec in "$@"; do
    IFS=: read -r experiment scale task_list workers <<<"$spec"
    name=$experiment${scale:+-$scale}
    args=(sweep "$experiment" --out "runs/$name" --results "$OUT/$name" --no-progress
        --workers "${workers:-1}")
    [[ -n $scale ]] && args+=(--scale "$scale")
    [[ -n $task_list ]] && args+=(--tasks ${task_list//,/ })
    outs+=("runs/$name")
    echo "device_sweeps: ${args[*]}"
    # timeout signals the whole process group, the sweep's worker processes included.
    timeout "$seconds" python3 -m pe_research.cli "${args[@]}" >"$OUT/$name.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid" || status=$? # 124: stopped at SECONDS
done
for d in "${outs[@]}"; do
    echo "device_sweeps: $d: $(find "$d" -name DONE | wc -l) runs finished"
done
# The sweep's own logs come back beside the tables; the run folders stay.
ls "$OUT"/*/results.parquet 2>/dev/null || echo "device_sweeps: no run finished: no tables"
exit "$status"
