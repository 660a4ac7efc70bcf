#!/usr/bin/env bash
# Sets everything up and runs the server on http://127.0.0.1:8000 with the offline mock brain.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python manage.py migrate --noinput
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
echo
echo "  so-many-crows is flying at http://${HOST}:${PORT}/   (brain: ${CROWS_BRAIN:-mock}; Ctrl+C stops)"
echo
exec .venv/bin/daphne -b "$HOST" -p "$PORT" crows_site.asgi:application
