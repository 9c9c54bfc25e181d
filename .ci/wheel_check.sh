#!/usr/bin/env bash
# CI, second half: the package as a user gets it. Builds the wheel, installs it into a fresh
# virtual environment outside the checkout (its pinned dependencies linked from the README's
# environment, see below), and runs the quick start and one call of each tool from a temporary
# folder, checking that nothing else is written there. Usage: wheel_check.sh
# (DEPS_PYTHON=PYTHON: the environment to take the dependencies from; default .venv's)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
START=$SECONDS

python3 -m venv "$WORK/venv"
PIP="$WORK/venv/bin/python -m pip"
$PIP install --quiet --upgrade pip
$PIP wheel --quiet --no-deps -w "$WORK/dist" "$ROOT"
WHEEL="$(ls "$WORK"/dist/stagezoo-*.whl)"
SIZE=$(stat -c %s "$WHEEL")
echo "wheel: $(basename "$WHEEL"), $SIZE bytes"
[ "$SIZE" -lt 5000000 ] || { echo "the wheel is over 5 MB"; exit 1; }
# The dependencies: the README's virtual environment (.ci/run made it a few minutes ago, from
# the same constraints.txt) already holds them, pinned. Downloading and unpacking the 5.5 GB
# CUDA build of torch a second time would double CI's install time and check nothing new, so
# the distributions that the wheel requires (transitively, no extras) are hard-linked from
# there; then the wheel alone (--no-deps) and `pip check` that every requirement is met. The
# [plots] install below still goes through pip's resolver with the registry. Without that
# environment (or with another python), the dependencies are installed from the registry.
DEPS_PYTHON="${DEPS_PYTHON:-$ROOT/.venv/bin/python}"
TAG='import sys; print(sys.implementation.cache_tag, sys.platform)'
if [ -x "$DEPS_PYTHON" ] && [ "$("$DEPS_PYTHON" -c "$TAG")" = "$("$WORK/venv/bin/python" -c "$TAG")" ]
then
    SITE="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
    "$DEPS_PYTHON" "$ROOT/.ci/link_dependencies.py" "$WHEEL" "$SITE"
    $PIP install --quiet --no-deps "$WHEEL"
    $PIP check
else
    $PIP install --quiet -c "$ROOT/constraints.txt" "$WHEEL"
fi
echo "wheel installed: $((SECONDS - START)) s"
export PATH="$WORK/venv/bin:$PATH"

mkdir "$WORK/here" && cd "$WORK/here"
run() { local start=$SECONDS; echo "+ $*"; "$@"; echo "  ($((SECONDS - start)) s)"; }
run stagezoo --help > /dev/null
run stagezoo profile --help > /dev/null
run stagezoo --version
run stagezoo list 'resnet1*' > /dev/null
run stagezoo serve --help > /dev/null
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
echo "wheel check passed: every tool ran from $WORK/here ($((SECONDS - START)) s in all)"
