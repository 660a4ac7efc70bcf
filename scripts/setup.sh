#!/usr/bin/env bash
# Creates .venv with a Python >= 3.12 and installs the pinned dependencies from
# requirements.lock. Safe to run again: it reinstalls only when the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  local candidates=()
  [ -n "${CROWS_PYTHON:-}" ] && candidates+=("$CROWS_PYTHON")
  candidates+=(python3.13 python3.12)
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9])(\.|$)' | sort -rV); do
      candidates+=("$(pyenv root)/versions/$v/bin/python")
    done
  fi
  for v in 3.13.0 3.12.1; do candidates+=("$HOME/.pyenv/versions/$v/bin/python"); done
  candidates+=(python3 python)
  for c in "${candidates[@]}"; do
    if command -v "$c" >/dev/null 2>&1 || [ -x "$c" ]; then
      # pyenv shims exist for versions that are not installed; ask the interpreter itself.
      if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
        echo "$c"; return 0
      fi
    fi
  done
  return 1
}

if [ -x .venv/bin/python ] && ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
  echo "setup: .venv has a Python older than 3.12; recreating it"
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  PY=$(find_python) || {
    echo "setup: so-many-crows needs Python 3.12 or newer (Django 6). Install python3.12 or python3.13" >&2
    echo "       (or set CROWS_PYTHON=/path/to/python3.12) and run this again." >&2
    exit 1
  }
  echo "setup: creating .venv with $("$PY" --version 2>&1) ($PY)"
  "$PY" -m venv .venv
fi

want=$(sha256sum requirements.lock | cut -d' ' -f1)
have=$(cat .venv/.lock-sha256 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  echo "setup: installing pinned dependencies (requirements.lock)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  # --no-compile: byte-compiling every installed module up front costs tens of seconds of
  # CPU for the many modules nothing imports; Python compiles (and caches) what is used.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.lock
  echo "$want" > .venv/.lock-sha256
fi
