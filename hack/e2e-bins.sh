#!/usr/bin/env bash
# Builds the binaries of a real Kubernetes control plane for the e2e suites, from the Go module proxy:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (k8s.io/kubernetes), etcd
# (go.etcd.io/etcd/server/v3), kwok/kwokctl (sigs.k8s.io/kwok) and the helm CLI (helm.sh/helm/v3/cmd/helm
# at the version this repository's go.mod requires, for the suite that runs the printed runbook by
# hand). Nothing is downloaded as a binary.
#
# Binaries land in a cache folder keyed by the versions, so a second run is a no-op:
#   ${AMBIENTKIT_CACHE:-$HOME/.cache/ambientkit}/e2e-bins/k8s-<v>_etcd-<v>_kwok-<v>/
# helm is versioned inside it (helm-<v>, linked as helm), so a new Helm version in go.mod rebuilds
# helm alone. The helper modules live in that cache too, never in this repository's go.mod.
#
# Prints the folder on the last line of stdout. Progress goes to stderr.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The Helm SDK version the module builds with, so the CLI and the SDK adapter are the same Helm.
HELM_VERSION=${HELM_VERSION:-$(awk '$1 == "helm.sh/helm/v3" {print $2; exit}' "$root/go.mod")}

cache=${AMBIENTKIT_CACHE:-$HOME/.cache/ambientkit}
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
bin="$cache/e2e-bins/$key"
work="$cache/e2e-bins/work-$key"
mkdir -p "$bin" "$work"

# One build at a time per cache folder: a second copy waits for the first, then finds everything cached.
if command -v flock >/dev/null; then
  exec 9>"$cache/e2e-bins/.lock-$key"
  if ! flock -n 9; then
    echo "e2e-bins: another build of $key is running; waiting for it" >&2
    flock 9
  fi
fi

log() { echo "e2e-bins: $*" >&2; }
fail() { echo "e2e-bins: FAILED at step \"$1\": $2" >&2; exit 1; }

# step NAME OUTPUT... -- COMMAND: runs COMMAND unless every OUTPUT exists; times it.
step() {
  local name=$1; shift
  local outs=()
  while [ "$1" != "--" ]; do outs+=("$1"); shift; done
  shift
  local missing=0
  for o in "${outs[@]}"; do [ -x "$bin/$o" ] || missing=1; done
  if [ $missing = 0 ]; then log "$name: cached"; return 0; fi
  log "$name: building ..."
  local t0=$SECONDS
  if ! "$@" >"$work/$name.log" 2>&1; then
    tail -n 30 "$work/$name.log" >&2
    fail "$name" "see $work/$name.log"
  fi
  for o in "${outs[@]}"; do [ -x "$bin/$o" ] || fail "$name" "$o was not produced"; done
  log "$name: built in $((SECONDS - t0))s"
}

build_kubernetes() {
  local dir="$work/kubernetes"
  mkdir -p "$dir"
  cd "$dir"
  if [ ! -f go.mod ]; then
    go mod init ambientkit.local/e2e-bins/kubernetes
  fi
  go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}"
  # k8s.io/kubernetes replaces its staging modules with local paths; point each at its published version.
  local kmod
  kmod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -n "$kmod" ] || fail kubernetes "could not download k8s.io/kubernetes@${K8S_VERSION}"
  local stage="v0.${K8S_VERSION#v1.}"
  grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$kmod" | awk '{print $1}' | sort -u | while read -r m; do
    go mod edit -replace="$m=$m@$stage"
  done
  cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  go mod tidy
  local major=1 minor
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=${K8S_VERSION} -X $p.gitMajor=${major} -X $p.gitMinor=${minor} -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    go build -trimpath -ldflags "-s -w $ld" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c"
  done
}

build_etcd() {
  local dir="$work/etcd"
  mkdir -p "$dir"
  cd "$dir"
  [ -f go.mod ] || go mod init ambientkit.local/e2e-bins/etcd
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go mod edit -require="go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  go mod tidy
  go build -trimpath -ldflags "-s -w" -o "$bin/etcd" .
}

build_kwok() {
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" "sigs.k8s.io/kwok/cmd/kwokctl@${KWOK_VERSION}"
}

build_helm() {
  GOBIN="$work/helm-bin" go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
    "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
  mv "$work/helm-bin/helm" "$bin/helm-${HELM_VERSION}"
  ln -sfn "helm-${HELM_VERSION}" "$bin/helm"
}

command -v go >/dev/null || fail setup "the go command is not on PATH"
[ -n "$HELM_VERSION" ] || fail setup "no helm.sh/helm/v3 requirement in $root/go.mod"
t0=$SECONDS
step etcd etcd -- build_etcd
step kwok kwok kwokctl -- build_kwok
step kubernetes kube-apiserver kube-controller-manager kube-scheduler kubectl -- build_kubernetes
step helm "helm-${HELM_VERSION}" -- build_helm
ln -sfn "helm-${HELM_VERSION}" "$bin/helm"
log "all binaries ready in $bin ($((SECONDS - t0))s)"
echo "$bin"
