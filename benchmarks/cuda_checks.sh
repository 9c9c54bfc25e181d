#!/usr/bin/env bash
# Every check that needs a CUDA GPU, in one go, for a session that has one:
#   the CUDA tests (every test marked @pytest.mark.cuda, selected with -m cuda), the GMFlow
#   attention benchmark (target >= 1.2x at 448x1024), the profiler's overhead with CUDA events
#   (at 1 and 8 images), whether the CUDA figures add up (benchmarks/cuda_stage_checks.py, at
#   batch 1 and 8, with the traces of its synchronisation check), the precision benchmark, and
#   the CUDA reference sweep into results/reference/cuda; with GMFLOW_OFFICIAL=PATH (a
#   checkout of haofeixu/gmflow, see benchmarks/gmflow_vs_official.py), also GMFlow against
#   the official code at 448x1024 (target >= 1.5x).
# Each step's output goes to LOG_DIR (default: results/reference/cuda_checks; the sweep writes
# results/reference/cuda, which must not exist yet); a failing step
# does not stop the others, and the exit status is the number of failed steps.
#
#   bash benchmarks/cuda_checks.sh [LOG_DIR] [STEP ...]
#       STEP: tests attention overhead checks precision sweep official (official: default when
#       GMFLOW_OFFICIAL is set, refused otherwise), or syncs (never a default: the part of tests
#       and checks that counts synchronisations, for a short session: the fake-device tests,
#       the traced ones on SwiftNet and on a model that draws random numbers, and every zoo
#       model's count with its traces)
#
# It needs the project's dependencies (hydra-core and omegaconf included) importable, e.g. with
# PYTHONPATH=. from the repository root.
set -u
log_dir=${1:-results/reference/cuda_checks}
shift || true
official=${GMFLOW_OFFICIAL:-}
default_steps="tests attention overhead checks precision sweep${official:+ official}"
steps=${*:-$default_steps}
python=${PYTHON:-python3}
models=faster_rcnn,gmflow,gmflow_refine,gmflow_unet,swiftnet,swin_unet
mkdir -p "$log_dir"
failed=0

run_step() {
    local name=$1
    shift
    echo "== $name: $*"
    "$@" >"$log_dir/$name.log" 2>&1
    local status=$?
    if [ "$status" -eq 0 ]; then
        tail -n 3 "$log_dir/$name.log"
    else
        failed=$((failed + 1))
        echo "!! $name failed (exit $status), see $log_dir/$name.log"
        tail -n 20 "$log_dir/$name.log"
    fi
}

"$python" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print(torch.__version__, torch.cuda.get_device_name())" || exit 99
for step in $steps; do
    case $step in
        tests) run_step tests "$python" -m pytest -q -rs -m cuda tests ;;
        attention) run_step attention "$python" benchmarks/gmflow_attention.py --device cuda \
            --size 448 1024 --repeats 20 ;;
        overhead) run_step overhead "$python" benchmarks/overhead.py --device cuda --rounds 30
            run_step overhead_batch8 "$python" benchmarks/overhead.py --device cuda --rounds 15 \
                --batch 8 ;;
        checks) run_step checks "$python" benchmarks/cuda_stage_checks.py \
                --json "$log_dir/checks_batch1.json" --traces "$log_dir/traces"
            run_step checks_batch8 "$python" benchmarks/cuda_stage_checks.py --repeats 10 \
                --override input.batch=8 --json "$log_dir/checks_batch8.json" ;;
        syncs) run_step syncs "$python" -m pytest -q -rs tests/test_cuda_synchronisation.py \
                tests/test_cuda_checks.py -k synchronis
            run_step syncs_models "$python" benchmarks/cuda_stage_checks.py --checks syncs \
                --json "$log_dir/syncs.json" --traces "$log_dir/sync_traces" ;;
        precision) run_step precision "$python" benchmarks/precision.py --device cuda \
                --rounds 10 --warmup 2 ;;
        sweep) run_step sweep "$python" -m zoo.profile -m "model=$models" device=cuda plots=true \
            summary=false hydra.sweep.dir=results/reference/cuda 'hydra.sweep.subdir=${model.name}' ;;
        official)
            if [ -z "$official" ]; then
                echo "step 'official' needs GMFLOW_OFFICIAL=PATH (a haofeixu/gmflow checkout)"
                exit 2
            fi
            run_step official "$python" benchmarks/gmflow_vs_official.py --official "$official" \
                --device cuda --sizes 448x1024 --rounds 20 --warmup 3 ;;
        *) echo "unknown step '$step'; accepted: tests attention overhead checks precision" \
                "sweep official syncs"
           exit 2 ;;
    esac
done
exit "$failed"
