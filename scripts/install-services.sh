#!/usr/bin/env bash
# Installs the Debian packages that the service-backed tests start themselves (Postgres, headless Chromium).
# Idempotent: does nothing when every package is present. Needs root (or sudo) only when something is missing.
set -euo pipefail
PACKAGES=(postgresql chromium)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]} from Debian"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
