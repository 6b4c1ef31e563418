#!/usr/bin/env bash
# compose/need.sh COMMAND PACKAGE [COMMAND PACKAGE ...]: each Debian PACKAGE whose COMMAND is missing
# is installed with apt-get (as root; else a one-line error saying what to install).
set -euo pipefail
missing=()
while (($# >= 2)); do
  command -v "$1" >/dev/null || missing+=("$2")
  shift 2
done
((${#missing[@]})) || exit 0
if [[ $(id -u) != 0 ]]; then
  echo "need.sh: missing Debian packages (as root: apt-get install -y --no-install-recommends ${missing[*]})" >&2
  exit 1
fi
echo "need.sh: installing ${missing[*]} with apt-get"
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
  || { apt-get update -qq >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; } \
  || { echo "need.sh: apt-get install failed for: ${missing[*]}" >&2; exit 1; }
