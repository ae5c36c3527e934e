#!/usr/bin/env bash
# The one prepared command for the accelerator machine (nvidia-h200, no network): install the
# carried wheels, run the accelerator suite into OUT/accelerator.json (`pe-research bench
# accelerator`), then measure with scripts/device_check.py into OUT/device_check.json.
#
#     bash scripts/device_check.sh [--install-only] [device_check.py options...]
#
# Fill the wheel folder here first: bash scripts/device_wheels.sh (then name .whl in the run's
# carry). Environment: WHEELS (default .whl), SITE (where they are installed, default /tmp/site),
# OUT (default runs/device; the device machine sets it to the folder that comes back), IMPORTS
# (the modules the install check imports). --install-only stops after that check.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" # the comment above
    exit 0
fi
cd "$(dirname "$0")/.."

WHEELS=${WHEELS:-.whl}
SITE=${SITE:-/tmp/site}
OUT=${OUT:-runs/device}
IMPORTS=${IMPORTS:-pe_research tyro grain tensorflow_datasets}
install_only=0
if [[ ${1:-} == --install-only ]]; then
    install_only=1
    shift
fi

shopt -s nullglob
wheels=("$WHEELS"/*.whl)
if ((${#wheels[@]} == 0)); then
    echo "device_check: no wheels in '$WHEELS': fill it with 'bash scripts/device_wheels.sh" \
        "$WHEELS' where PyPI is reachable, and name it in the run's carry." >&2
    exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${wheels[@]}"
# The working tree ahead of the installed pe_research wheel: measure the code as it is now.
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$SITE/bin:$PATH"
# shellcheck disable=SC2086  # IMPORTS is a list of names
python3 -c 'import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]' $IMPORTS
echo "device_check: installed ${#wheels[@]} wheels into $SITE; imported $IMPORTS"
if ((install_only)); then
    exit 0
fi

python3 -c 'import jax; print("jax", jax.__version__, jax.devices())'
mkdir -p "$OUT"
# First the accelerator suite (pe_research/bench/accelerator.py): one JSON, OUT/accelerator.json,
# of model-steps/s and fractions of the chip's bf16 and fp32 peak; copy it to benchmarks/.
PYTHONUNBUFFERED=1 python3 -m pe_research.cli bench accelerator --out "$OUT" 2>&1 |
    tee "$OUT/accelerator.log"
PYTHONUNBUFFERED=1 python3 scripts/device_check.py --out "$OUT" "$@" 2>&1 |
    tee "$OUT/device_check.log"
