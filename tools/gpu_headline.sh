#!/usr/bin/env bash
# The headline comparison's seeds on a GPU machine (the `device` tool's, or any CUDA host with
# JAX): each stage trains with the seeds batched in one program (ROPEBOOK_SEED_BATCH's auto turns
# it on on a GPU), float32 matrix products (JAX_DEFAULT_MATMUL_PRECISION=highest, not TF32, so
# the models are the cpu profile's specs), and writes a recipes results file under $OUT, which
# data/results/ keeps with its provenance (ropebook.recipes.GPU_FILES; the file's command is
# this script's). Run from the repository root, data/derived present:
#   OUT=dir SEEDS=64 bash tools/gpu_headline.sh check matched flagship bench half-lr
# STAGE_LIMIT (seconds) stops a stage that runs longer; the stages before it keep their files,
# and its finished models stay in ROPEBOOK_CACHE: the same stage again, on the same machine,
# loads them and writes its file (how the kept files were made, 2026-11-27).
set -uo pipefail
: "${OUT:?set OUT to the folder the results files go to}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TQDM_MININTERVAL=20
export JAX_DEFAULT_MATMUL_PRECISION=highest ROPEBOOK_CACHE="${ROPEBOOK_CACHE:-/tmp/ropebook-cache}"
PYTHON="${PYTHON:-python3}" PROFILE="${PROFILE:-cpu}"
SEEDS="${SEEDS:-64}" FLAGSHIP_SEEDS="${FLAGSHIP_SEEDS:-32}"
TODAY='cosine to 10 %'
stage() {  # name, then the command; its time and status go to the log
  local name=$1 began=$SECONDS; shift
  echo "== $name: $*"
  timeout "${STAGE_LIMIT:-0}" "$@" 2>&1 | tee -a "$OUT/$name.log" | grep -v '%|' ; local rc=${PIPESTATUS[0]}
  echo "== $name: rc=$rc in $((SECONDS - began)) s"
}
recorded() {  # a results file's command: this script's, which is what reproduces it
  local file=$1 command=$2
  [ -f "$file" ] && "$PYTHON" -c 'import json, sys; from ropebook import io
path, command = sys.argv[1:]
io.write_json_atomic(path, json.load(open(path)) | {"command": command})' "$file" "$command"
}
for name in "$@"; do
  case $name in
    check) stage check bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv;
      $PYTHON -c 'import jax, optax; print(jax.__version__, optax.__version__, jax.devices())'" ;;
    bench) stage bench "$PYTHON" benchmarks/zoo_throughput.py --profile "$PROFILE" --regime matched \
      --models 16 --steps 20 --rounds 2 ;;
    matched) stage matched "$PYTHON" -m ropebook recipes --profile "$PROFILE" --regime matched \
      --seeds "$SEEDS" --schedules "$TODAY" --out "$OUT/recipes-gpu-matched.json"
      recorded "$OUT/recipes-gpu-matched.json" "OUT=data/results SEEDS=$SEEDS bash tools/gpu_headline.sh matched" ;;
    flagship) stage flagship "$PYTHON" -m ropebook recipes --profile "$PROFILE" --regime flagship \
      --seeds "$FLAGSHIP_SEEDS" --schedules "$TODAY" --out "$OUT/recipes-gpu-flagship.json"
      recorded "$OUT/recipes-gpu-flagship.json" \
        "OUT=data/results FLAGSHIP_SEEDS=$FLAGSHIP_SEEDS bash tools/gpu_headline.sh flagship" ;;
    half-lr) stage half-lr "$PYTHON" -m ropebook recipes --profile "$PROFILE" --regime matched \
      --seeds "$SEEDS" --schedules "$TODAY" 'half the peak LR' \
      --out "$OUT/recipes-gpu-matched-half-lr.json"
      recorded "$OUT/recipes-gpu-matched-half-lr.json" "OUT=data/results SEEDS=$SEEDS bash tools/gpu_headline.sh half-lr" ;;
    *) echo "unknown stage $name (check, bench, matched, flagship, half-lr)" >&2; exit 2 ;;
  esac
done
