#!/usr/bin/env bash
# Sets everything up and runs the server on http://127.0.0.1:8000 with the offline mock brain.
# HOST beyond loopback (0.0.0.0, a LAN address) needs CROWS_OWNER_TOKEN: docs/SECURITY.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
case "$HOST" in
  127.*|localhost|::1|"[::1]") ;;
  *)
    if [ -z "${CROWS_OWNER_TOKEN:-}" ]; then
      echo "run.sh: HOST=$HOST serves the flock beyond loopback, so anyone who reaches it would act as the owner." >&2
      echo "run.sh: set CROWS_OWNER_TOKEN (a random secret of at least 24 characters: python manage.py owner_token makes one) and ALLOWED_HOSTS first; see docs/SECURITY.md." >&2
      exit 2
    fi
    ;;
esac
bash scripts/setup.sh
.venv/bin/python manage.py migrate --noinput
# Jev's models are trained once per install (about 20 s) and cached: here, not in the
# server's warm-up thread, where the owner's first message would wait for them.
.venv/bin/python manage.py jev_warm
echo
echo "  so-many-crows is flying at http://${HOST}:${PORT}/   (brain: ${CROWS_BRAIN:-mock}; Ctrl+C stops)"
echo
exec .venv/bin/daphne -b "$HOST" -p "$PORT" crows_site.asgi:application
