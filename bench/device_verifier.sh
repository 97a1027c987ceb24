#!/usr/bin/env bash
# The verifier's throughput benchmark (issue 5) on an accelerator machine, in two steps.
#
#   here, with the project's .venv:   bench/device_verifier.sh prepare
#     writes build/device-verifier/ (git-ignored, ~1 MB): the 320-pair SciFact workload and the
#     MiniLM tokenizer and config, which the device machine cannot fetch (no registry there,
#     and ../shared does not travel).
#
#   there, with build/device-verifier copied beside the checkout (about 7 minutes):
#     bash bench/device_verifier.sh run
#     uses the image's own python3 (torch with CUDA, transformers, numpy; zocrates_verifier's
#     models need nothing else), measures one pair per pass against dynamic batching on cuda
#     in float16 then float32, for 32 and 256 concurrent turns of 10 pairs, and writes
#     $OUT/verifier_device.md (the markdown section) and $OUT/verifier_device.log.
#     DTYPES, ROUNDS and TURN_COPIES override the defaults (float16,float32 / 5 / 1,8).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=build/device-verifier

case "${1:-run}" in
  prepare)
    .venv/bin/python -m bench.bench_verifier --prepare "$bundle"
    du -sh "$bundle"
    ;;
  run)
    if [ ! -f "$bundle/workload.json" ]; then
      echo "no $bundle: run 'bench/device_verifier.sh prepare' here first and carry it" >&2
      exit 2
    fi
    out="${OUT:-build}"
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv || true
    PYTHONPATH="services/verifier/src:." PYTHONUNBUFFERED=1 python3 -m bench.bench_verifier \
      --bundle "$bundle" --device "${DEVICE:-cuda}" --dtypes "${DTYPES:-float16,float32}" \
      --rounds "${ROUNDS:-5}" --turn-copies "${TURN_COPIES:-1,8}" \
      --out "$out/verifier_device.md" 2>&1 | tee "$out/verifier_device.log"
    ;;
  *)
    echo "usage: bench/device_verifier.sh prepare|run" >&2
    exit 2
    ;;
esac
