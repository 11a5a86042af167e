#!/usr/bin/env bash
# The main job on embedded defaults: the sample travel consultation, headless.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/robot simulate config/scenarios/travel_consultation.yaml --out out/simulation "$@"
