#!/usr/bin/env bash
# Builds one Istio binary from the same istio.io/istio module version the e2e harness installs the
# charts from (e2e/internal/charts/modules.go, IstioModuleVersion), in a helper module outside this
# repository:
#   bash hack/istio/build.sh istioctl          # istio.io/istio/istioctl/cmd/istioctl (the scale bench)
#   bash hack/istio/build.sh pilot-discovery   # istio.io/istio/pilot/cmd/pilot-discovery (istiod)
# into ${AMBIENTKIT_CACHE:-$HOME/.cache/ambientkit}/<name>/<version>/{go.mod,bin/<name>}.
# istio's own replace directives (if any) are copied into the helper module. Cached by version: a
# second run is a no-op. Prints the binary's path on the last line of stdout; progress on stderr.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
name=${1:-}
case "$name" in
  istioctl) pkg=istio.io/istio/istioctl/cmd/istioctl ;;
  pilot-discovery) pkg=istio.io/istio/pilot/cmd/pilot-discovery ;;
  *) echo "usage: build.sh istioctl|pilot-discovery" >&2; exit 2 ;;
esac
version=${ISTIO_MODULE_VERSION:-$(sed -n 's/^[[:space:]]*IstioModuleVersion = "\(.*\)"$/\1/p' "$root/e2e/internal/charts/modules.go")}
[ -n "$version" ] || { echo "build-$name: cannot read IstioModuleVersion from e2e/internal/charts/modules.go" >&2; exit 1; }
cache=${AMBIENTKIT_CACHE:-$HOME/.cache/ambientkit}
dir="$cache/$name/$version"
bin="$dir/bin/$name"
log() { echo "build-$name: $*" >&2; }
mkdir -p "$dir/bin"
if command -v flock >/dev/null; then
  exec 9>"$dir/.lock"
  flock 9
fi
if [ -x "$bin" ]; then
  log "cached: $bin"
  echo "$bin"
  exit 0
fi
t0=$SECONDS
cd "$dir"
export GOFLAGS=-mod=mod GO111MODULE=on
[ -f go.mod ] || go mod init "ambientkit.local/istio/$name" >&2
go mod edit -require="istio.io/istio@$version"
gomod=$(cd "${TMPDIR:-/tmp}" && go mod download -json "istio.io/istio@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -n "$gomod" ] || { log "go mod download istio.io/istio@$version failed"; exit 1; }
# Copy istio's replace directives (single-line and block form): a helper module does not inherit them.
awk '
  /^replace[[:space:]]*\(/ {blk=1; next}
  blk && /^\)/ {blk=0; next}
  blk {print; next}
  /^replace[[:space:]]/ {sub(/^replace[[:space:]]+/, ""); print}
' "$gomod" | sed 's#//.*##' | while read -r line; do
  [ -n "$line" ] || continue
  old=$(echo "$line" | awk -F'=>' '{gsub(/^[ \t]+|[ \t]+$/, "", $1); gsub(/ /, "@", $1); print $1}')
  new=$(echo "$line" | awk -F'=>' '{gsub(/^[ \t]+|[ \t]+$/, "", $2); gsub(/ /, "@", $2); print $2}')
  log "copying replace $old => $new"
  go mod edit -replace="$old=$new"
done
log "resolving $pkg@$version ..."
go get "$pkg@$version" >&2
log "building $name (minutes on a cold build cache) ..."
ld="-s -w -X istio.io/istio/pkg/version.buildVersion=$version -X istio.io/istio/pkg/version.buildStatus=Clean -X istio.io/istio/pkg/version.buildTag=$version"
go build -trimpath -ldflags "$ld" -o "$bin.tmp" "$pkg"
mv "$bin.tmp" "$bin"
log "built in $((SECONDS - t0))s: $bin"
echo "$bin"
