#!/usr/bin/env bash
# Install what is missing (test tools included) and run the whole test suite.
# Two pytest-xdist workers by default, one test file at a time each (--dist loadfile: a file's
# module fixtures, such as a robot subprocess, start once). Most of the suite's time is waiting
# (real-time audio, servers starting, models loading), so two workers nearly halve it even on
# two cores. TEST_WORKERS=0 runs everything in this one process; TEST_WORKERS=N, N workers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
workers="${TEST_WORKERS:-2}"
if [ "$workers" = 0 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile "$@"
