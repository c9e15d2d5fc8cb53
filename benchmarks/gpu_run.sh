#!/usr/bin/env bash
# The GPU checks on a CUDA machine that has python3 with torch (e.g. a lent H200): the stored outputs under nbval
# with the GPU visible (what `make test-gpu` runs) and the attention benchmark on CUDA. Logs go to $OUT.
#
#   OUT=build/gpu bash benchmarks/gpu_run.sh
#
# Packages that machine lacks (nbval, ipykernel, ipywidgets, ...) may lie as wheels in .whl/ (installed with
# --target, nothing else touched); llm_lab itself comes from this tree (PYTHONPATH), its data from data/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-build/gpu}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "gpu_run: could not install the wheels in .whl/"; exit 1; }
    export PYTHONPATH="/tmp/site"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  python3 -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda)"
} | tee "$OUT/machine.txt"
python3 -m llm_lab.dev.gpu_check notebooks/en notebooks/zh notebooks/instructor/en notebooks/instructor/zh 2>&1 | tee "$OUT/gpu_check.log"
status=${PIPESTATUS[0]}
# the module entry point prints each length's table as soon as it is measured, so a time limit keeps what ran
timeout "${BENCH_TIMEOUT:-240}" python3 -m llm_lab.bench.benchmark --device cuda --preset full-cuda 2>&1 \
    | tee "$OUT/bench.log"
exit "$status"
