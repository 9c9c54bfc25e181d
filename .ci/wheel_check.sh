#!/usr/bin/env bash
# CI, second half: the package as a user gets it. Builds the wheel, installs it into a fresh
# virtual environment outside the checkout, and runs the quick start and one call of each tool
# from a temporary folder, checking that nothing else is written there. Usage: wheel_check.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 -m venv "$WORK/venv"
PIP="$WORK/venv/bin/python -m pip"
$PIP install --quiet --upgrade pip
$PIP wheel --quiet --no-deps -w "$WORK/dist" "$ROOT"
WHEEL="$(ls "$WORK"/dist/stagezoo-*.whl)"
SIZE=$(stat -c %s "$WHEEL")
echo "wheel: $(basename "$WHEEL"), $SIZE bytes"
[ "$SIZE" -lt 5000000 ] || { echo "the wheel is over 5 MB"; exit 1; }
$PIP install --quiet -c "$ROOT/constraints.txt" "$WHEEL"
export PATH="$WORK/venv/bin:$PATH"

mkdir "$WORK/here" && cd "$WORK/here"
run() { echo "+ $*"; "$@"; }
run stagezoo --help > /dev/null
run stagezoo profile --help > /dev/null
[ -z "$(ls -A)" ] || { echo "--help wrote into the current folder: $(ls -A)"; exit 1; }
run stagezoo profile model=faster_rcnn device=cpu run.repeats=2 hydra.run.dir=quick
run stagezoo profile model=swiftnet 'input.size=[256,512]' device=meta hydra.run.dir=a
run python -m zoo.profile model=swiftnet 'input.size=[256,512]' device=meta \
    model.num_features=64 hydra.run.dir=b
run stagezoo profile model=gmflow input.images=sample 'input.size=[128,192]' device=meta \
    hydra.run.dir=sample
run stagezoo compare a b --out compare.csv
run stagezoo collect a b --out both.csv
run stagezoo split model=torchvision model.arch=resnet18 --meta --depth 2 --out split
run stagezoo calibrate --seconds 0.05 --size 64 --megabytes 1 --output ceilings.yaml
# An extra that is missing is one line naming it, exit 2; with it installed the tool runs.
set +e
MESSAGE="$(stagezoo plot a 2>&1)"; CODE=$?
set -e
echo "$MESSAGE"
[ "$CODE" -eq 2 ] && [[ "$MESSAGE" == *"pip install 'stagezoo[plots]'"* ]] || {
    echo "stagezoo plot without matplotlib: exit $CODE"; exit 1; }
$PIP install --quiet -c "$ROOT/constraints.txt" "$WHEEL[plots]"
run stagezoo plot a
EXPECTED="a b both.csv ceilings.yaml compare.csv quick sample split"
[ "$(ls | tr '\n' ' ' | sed 's/ $//')" = "$EXPECTED" ] || {
    echo "unexpected files in the current folder: $(ls | tr '\n' ' ')"; exit 1; }
echo "wheel check passed: every tool ran from $WORK/here"
