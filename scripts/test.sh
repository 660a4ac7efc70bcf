#!/usr/bin/env bash
# Sets everything up the same way and runs the whole test suite: the server-side tests, then
# the browser tests in their own pytest run (pytest-playwright keeps an event loop for the
# whole session that breaks later async tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CROWS_TEST_RUN=1

status=0
# Types first (django-stubs; the configuration is in pyproject.toml): quick, and a type
# error fails the run like a failing test.
.venv/bin/python -m mypy || status=$?
.venv/bin/python -m pytest tests --ignore=tests/browser -p no:cacheprovider "$@" || status=$?

if [ -d tests/browser ] && ls tests/browser/test_*.py >/dev/null 2>&1; then
  bash scripts/ensure-chromium.sh || true
  .venv/bin/python -m pytest tests/browser -p no:cacheprovider "$@" || {
    rc=$?
    # 5 = no tests collected; the browser suite always has tests, so treat it as a failure too.
    [ $status -eq 0 ] && status=$rc
  }
fi
exit $status
