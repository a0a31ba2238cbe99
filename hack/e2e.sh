#!/usr/bin/env bash
# Runs the e2e suites (go test -tags e2e ./e2e/...) and prints how long each part took.
#
#   bash hack/e2e.sh                      # kwok cluster from source-built binaries (default)
#   E2E_KUBECONFIG=~/.kube/config bash hack/e2e.sh   # an existing cluster
#   E2E_PROVIDER=kind bash hack/e2e.sh    # kind (needs Docker)
#   bash hack/e2e.sh ./e2e/... -run TestObserveLive  # packages and go test flags pass through
#
# Environment: E2E_TIMEOUT (go test -timeout, default 40m), E2E_GO_TEST_FLAGS (default -v), E2E_RUN_DIR
# (default a new folder under $TMPDIR; kept when the run fails), plus everything e2e/README.md lists.
# Exit status is go test's. A kwok cluster left behind by a killed run is deleted on exit.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { echo "e2e.sh: $*" >&2; }
t0=$SECONDS

provider=${E2E_PROVIDER:-}
if [ -z "$provider" ]; then
  if [ -n "${E2E_KUBECONFIG:-}" ]; then provider=existing; else provider=kwok; fi
fi

bins_s=0
if [ "$provider" = kwok ] && [ -z "${E2E_BIN_DIR:-}" ]; then
  t=$SECONDS
  E2E_BIN_DIR=$(bash hack/e2e-bins.sh | tail -n 1)
  export E2E_BIN_DIR
  bins_s=$((SECONDS - t))
  log "control-plane binaries ready in ${bins_s}s: $E2E_BIN_DIR"
fi

if [ -z "${E2E_RUN_DIR:-}" ]; then
  E2E_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ambientkit-e2e.XXXXXX")
fi
export E2E_RUN_DIR

# Whatever happens to go test (timeout panic, kill), no kwok cluster of this run survives it: the
# shared one (work directory $E2E_RUN_DIR/kwok) nor one a suite made of its own ($E2E_RUN_DIR/<dir>/kwok).
cleanup() {
  local d name work
  for d in "$E2E_RUN_DIR"/kwok/clusters/*/ "$E2E_RUN_DIR"/*/kwok/clusters/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    work=$(dirname "$(dirname "$d")")
    log "deleting leftover kwok cluster $name"
    KWOK_WORKDIR="$work" "$E2E_BIN_DIR/kwokctl" delete cluster --name "$name" >&2 || true
  done
}
# E2E_KEEP_CLUSTER=1 asks the suites to leave the cluster running: so does this script.
[ "$provider" = kwok ] && [ "${E2E_KEEP_CLUSTER:-}" != 1 ] && trap cleanup EXIT

pkgs=()
flags=()
for a in "$@"; do
  case "$a" in
    ./*) pkgs+=("$a") ;;
    *) flags+=("$a") ;;
  esac
done
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./e2e/...)
read -r -a extra <<<"${E2E_GO_TEST_FLAGS--v}"

t=$SECONDS
log "compiling ${pkgs[*]} (tag e2e)"
go test -tags e2e -count=1 -run '^$' -exec /bin/true "${pkgs[@]}" >/dev/null
compile_s=$((SECONDS - t))
log "compiled in ${compile_s}s"

t=$SECONDS
status=0
# -p 1: packages that make their own kwok clusters (e2e, e2e/runbook) run one after the other. Their
# clusters share the loopback Service range 127.96.0.0/16, where each fake istiod listens on its
# webhook Service's ClusterIP:443; two at once can answer each other's API server (a bad
# certificate), and two clusters on two cores slow both past their timeouts.
go test -tags e2e -count=1 -p 1 -timeout "${E2E_TIMEOUT:-40m}" "${extra[@]}" "${flags[@]}" "${pkgs[@]}" || status=$?
test_s=$((SECONDS - t))

log "timings: binaries ${bins_s}s, compile ${compile_s}s, tests ${test_s}s, total $((SECONDS - t0))s (provider $provider)"
if [ $status -ne 0 ]; then
  log "FAILED (exit $status); run folder with logs: $E2E_RUN_DIR"
fi
exit $status
