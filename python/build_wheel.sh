#!/usr/bin/env bash
# Builds the paretonav wheel into dist/ (or $1): a static Go binary
# (CGO_ENABLED=0, -trimpath, stripped) inside a platform-tagged wheel with the
# Python package and a `paretonav` console script. Offline: Go and Python's
# standard library only. GOOS/GOARCH cross-build for another platform.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/dist}
mkdir -p "$here/build"
exe="$here/build/paretonav"
[ "${GOOS:-}" = windows ] && exe="$exe.exe"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$exe" .)
python3 "$here/wheel_builder.py" --binary "$exe" --out "$out"
