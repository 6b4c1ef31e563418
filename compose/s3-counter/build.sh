#!/usr/bin/env bash
# Build s3-counter (Go, standard library only) into ./build; skipped when main.go and go.mod are
# unchanged. Needs the Go toolchain (Debian's golang-go is installed when missing and root).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$HERE/../need.sh" go golang-go   # Debian 12's is 1.19: go.mod asks 1.22 (the polyglot machines have it)
stamp=$(cat "$HERE/main.go" "$HERE/go.mod" "$0" | sha256sum | cut -d' ' -f1)
if [[ -x $HERE/build/s3-counter && -f $HERE/build/.stamp && $(cat "$HERE/build/.stamp") == "$stamp" ]]; then
  exit 0
fi
mkdir -p "$HERE/build"
(cd "$HERE" && CGO_ENABLED=0 go build -buildvcs=false -trimpath -o build/s3-counter .)
echo "$stamp" > "$HERE/build/.stamp"
echo "build.sh: built $HERE/build/s3-counter"
