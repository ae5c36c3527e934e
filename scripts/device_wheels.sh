#!/usr/bin/env bash
# Fill a folder with the wheels the accelerator image lacks, for scripts/device_check.sh there.
#
#     bash scripts/device_wheels.sh [DIR]      # DIR default .whl (keep it out of git, see below)
#
# Run here, where PyPI is reachable: the accelerator machine has no network. Its image (Python
# 3.12) already holds jax, jaxlib, flax, optax, orbax-checkpoint, numpy, matplotlib, tqdm and their
# own dependencies (absl-py, etils, fsspec, zipp, typing-extensions, cloudpickle, attrs, six,
# wrapt, psutil, pyarrow, requests: /work/.library/device/KINDS.md lists the whole image).
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" # the comment above
    exit 0
fi

# pe-research's dependencies missing from the image, and theirs (read from each wheel's METADATA
# Requires-Dist), at the versions the CPU environment is tested with. One version of each: two
# stop the install there.
MISSING=(
    tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1
    grain==0.2.18 array-record==0.8.6 portpicker==1.6.0
    tensorflow-datasets==4.9.10 dm-tree==0.1.10 immutabledict==4.3.1 simple-parsing==0.1.9
    tensorflow-metadata==1.21.0 googleapis-common-protos==1.76.0 termcolor==3.3.0 toml==0.10.2
    importlib-resources==7.1.0
    tensorboardx==2.6.5  # event files (pe_research.runs.events); pure Python
    # The image has protobuf, at a version nobody recorded; tensorflow-metadata's generated code
    # needs a runtime >= 6.31.1 and is imported with tensorflow_datasets, so bring our own.
    protobuf==7.36.2
)
# Published as source only (pure Python): built into a py3-none-any wheel here.
SOURCE_ONLY=(promise==2.3)

DIR=${1:-.whl}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR"

platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
    manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$DIR" "${MISSING[@]}"
python3 -m pip wheel -q --no-deps -w "$DIR" "${SOURCE_ONLY[@]}"
# Our own package, so that the console script `pe-research` exists there too; built from a copy
# so that the build leaves nothing (build/, egg-info) in the working tree.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/LICENSE" "$ROOT/pe_research" \
    "$ROOT/experiments" "$src"
find "$src" -name __pycache__ -prune -exec rm -rf {} +
python3 -m pip wheel -q --no-deps -w "$DIR" "$src"

echo "$(ls "$DIR"/*.whl | wc -l) wheels, $(du -sh "$DIR" | cut -f1) in $DIR:"
ls "$DIR"
if ! git -C "$ROOT" check-ignore -q "$DIR/x.whl" 2>/dev/null; then
    echo "Keep it out of git: echo /$(basename "$DIR")/ >> $(git -C "$ROOT" rev-parse --git-path info/exclude)"
fi
echo "Then on the device: run with carry [\"$(basename "$DIR")\"] the command bash scripts/device_check.sh"
