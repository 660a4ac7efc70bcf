#!/usr/bin/env bash
# Sets everything up the same way and runs the whole test suite on both cores
# (docs/TESTING.md says what runs where):
# - mypy runs in the background beside the tests;
# - Jev's models are trained once into the cache that every test process and every live
#   server of the run shares (keyed by the data's hash: a later run only checks them);
# - the server-side tests run on two pytest-xdist workers, then the browser tests in their
#   own pytest invocation (pytest-playwright keeps an event loop for the whole session that
#   breaks later async tests), on two workers too; Chromium's install check runs beside the
#   server-side tests. (Side by side, the two runs finished about a minute sooner but put
#   four workers on two cores, and a browser test timed out: one after the other is steadier.)
# Each pytest run ends with its 15 slowest tests. CROWS_TEST_WORKERS changes the worker
# count of each run (1 runs without xdist's workers); extra arguments go to both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CROWS_TEST_RUN=1
mkdir -p .data
workers="${CROWS_TEST_WORKERS:-2}"
status=0

# Types: a type error fails the run like a failing test.
.venv/bin/python -m mypy > .data/test-mypy.log 2>&1 &
mypy_pid=$!

cache="$(pwd -P)/.data/jev-test-cache"
echo "test: Jev's models for this run ($cache)"
CROWS_JEV_CACHE_DIR="$cache" .venv/bin/python manage.py jev_warm || status=$?
export CROWS_TEST_JEV_WARMED="$cache"

parallel=()
[ "$workers" -gt 1 ] && parallel=(-n "$workers" --dist loadgroup)

chromium_pid=""
if [ -d tests/browser ] && ls tests/browser/test_*.py >/dev/null 2>&1; then
  bash scripts/ensure-chromium.sh > .data/test-chromium.log 2>&1 &
  chromium_pid=$!
fi

.venv/bin/python -m pytest tests --ignore=tests/browser "${parallel[@]}" --durations=15 -p no:cacheprovider "$@" \
  || status=$?

if wait "$mypy_pid"; then tail -1 .data/test-mypy.log; else cat .data/test-mypy.log; status=1; fi

if [ -n "$chromium_pid" ]; then
  wait "$chromium_pid" || true
  cat .data/test-chromium.log
  # Any non-zero exit fails the run, 5 (no tests collected) included: the browser suite
  # always has tests.
  .venv/bin/python -m pytest tests/browser "${parallel[@]}" --durations=15 -p no:cacheprovider "$@" || {
    rc=$?
    [ $status -eq 0 ] && status=$rc
  }
fi
exit $status
