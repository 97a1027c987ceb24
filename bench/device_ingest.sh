#!/usr/bin/env bash
# Ingest's embedding (all-MiniLM-L6-v2 over the chunks and answer units the real Ingestor
# makes of the fixture PDFs) on an accelerator machine, in two steps.
#
#   here, with the project's .venv:   bench/device_ingest.sh prepare
#     runs the real conversion and chunking over ../shared/fixtures/pdfs, and writes
#     build/device-ingest/ (git-ignored, ~45 MB, checked under 60): workload.json (the texts and
#     unit spans the Ingestor embeds, the pages, this machine's conversion pages/s and CPU
#     embedding chunks/s) and the model's tokenizer, config and float16 weights, which the
#     device machine cannot fetch (no registry there, and ../shared does not travel).
#
#   there, with build/device-ingest copied beside the checkout (a few minutes):
#     bash bench/device_ingest.sh run
#     uses the image's own python3 (torch with CUDA, transformers, numpy; nothing of the
#     project's environment), picks the device with the runtime's probe
#     (libs/runtime/src/zocrates_runtime/device.py, standard library only), measures chunks/s in
#     float16 and float32 at batch sizes 32, 128 and 512, compares the vectors, and writes
#     $OUT/ingest_device.md (the markdown section) and $OUT/ingest_device.log.
#     DEVICE (auto), DTYPES (float16,float32), BATCH_SIZES (32,128,512), ROUNDS (5) and LIMIT
#     (0: every chunk) override the defaults; DEVICE=cpu PYTHON=.venv/bin/python runs it here.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=build/device-ingest

case "${1:-run}" in
  prepare)
    "${PYTHON:-.venv/bin/python}" -m bench.device_ingest --prepare "$bundle"
    du -sh "$bundle"
    ;;
  run)
    if [ ! -f "$bundle/workload.json" ]; then
      echo "no $bundle: run 'bench/device_ingest.sh prepare' here first and carry it" >&2
      exit 2
    fi
    out="${OUT:-build}"
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>/dev/null || true
    PYTHONPATH="libs/runtime/src:services/retrieval/src:." PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false "${PYTHON:-python3}" \
      -m bench.device_ingest --bundle "$bundle" --device "${DEVICE:-auto}" \
      --dtypes "${DTYPES:-float16,float32}" --batch-sizes "${BATCH_SIZES:-32,128,512}" \
      --rounds "${ROUNDS:-5}" --limit "${LIMIT:-0}" \
      --out "$out/ingest_device.md" 2>&1 | tee "$out/ingest_device.log"
    ;;
  *)
    echo "usage: bench/device_ingest.sh prepare|run" >&2
    exit 2
    ;;
esac
