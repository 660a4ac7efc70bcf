#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests where it can (root with apt-get);
# otherwise says why, and the browser tests skip with that reason.
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "test: installing Debian's chromium for the browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "test: could not install chromium; the browser tests will skip"
else
  echo "test: chromium is not installed and this user cannot apt-get it; the browser tests will skip"
fi
