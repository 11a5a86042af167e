#!/usr/bin/env bash
# Install what is missing (test tools included) and run the whole test suite.
# Two pytest-xdist workers by default, one test file at a time each (--dist loadfile: a file's
# module fixtures, such as a robot subprocess, start once). Most of the suite's time is waiting
# (real-time audio, servers starting, models loading), so two workers nearly halve it even on
# two cores. The tests on a sound card in real time (marker `realtime`) then run alone: beside a
# second worker's models they lost the cores the echo canceller needs, and the robot took its
# own echo for the customer. TEST_WORKERS=0 runs everything in this one process; TEST_WORKERS=N,
# N workers. Arguments go to pytest (a file, -k ...): then one run, with the workers, of those.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
workers="${TEST_WORKERS:-2}"
pytest=(.venv/bin/python -m pytest -q)
if [ "$workers" = 0 ]; then
  exec "${pytest[@]}" "$@"
fi
if [ "$#" -gt 0 ]; then
  exec "${pytest[@]}" -n "$workers" --dist loadfile "$@"
fi
status=0
"${pytest[@]}" -n "$workers" --dist loadfile -m "not realtime" || status=$?
"${pytest[@]}" -m realtime || status=$?
exit "$status"
