#!/usr/bin/env bash
# Soak (a script, not CI): SOAK_CYCLES (20) upgrade → rollback cycles of the e2e installation on one
# kwok cluster, in one process with one executor (e2e/soak). After each cycle it checks that no
# webhook configuration, Service, Lease, journal, node label, taint or cordon was left behind or
# changed, and prints the process's RSS and Go heap, which must stay flat.
#
#   flock /tmp/ak/e2e.lock bash hack/soak.sh
#   SOAK_CYCLES=3 E2E_NODES=4 bash hack/soak.sh      # a quick look
#
# Environment: SOAK_CYCLES (20), E2E_NODES (nodes per pool, 6 here), SOAK_RUN_DIR (default a new
# folder under $TMPDIR; plans, executor log and soak.log are kept there), E2E_BIN_DIR (skip
# hack/e2e-bins.sh), and what e2e/README.md lists for the harness. Exit status 1 when something
# leaked or a cycle failed. The cluster is deleted on exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t0=$SECONDS
log() { echo "soak.sh [$((SECONDS - t0))s]: $*" >&2; }

run=${SOAK_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ambientkit-soak.XXXXXX")}
mkdir -p "$run"
run=$(cd "$run" && pwd)
export E2E_BIN_DIR=${E2E_BIN_DIR:-$(bash hack/e2e-bins.sh | tail -n 1)}
export E2E_NODES=${E2E_NODES:-6}
export E2E_RUN_DIR="$run/e2e"
mkdir -p "$E2E_RUN_DIR"
go build -tags e2e -o "$run/soak" ./e2e/soak
log "run folder $run; ${SOAK_CYCLES:-20} cycles on $((E2E_NODES * 2)) nodes"

cleanup() {
  local d
  for d in "$E2E_RUN_DIR"/kwok/clusters/*/; do
    [ -d "$d" ] || continue
    log "deleting leftover kwok cluster $(basename "$d")"
    KWOK_WORKDIR="$E2E_RUN_DIR/kwok" "$E2E_BIN_DIR/kwokctl" delete cluster --name "$(basename "$d")" >&2 || true
  done
  log "total $((SECONDS - t0))s; run folder $run"
}
trap cleanup EXIT

status=0
"$run/soak" -cycles "${SOAK_CYCLES:-20}" -out "$run/out" 2> >(tee "$run/soak.err" >&2) | tee "$run/soak.log" || status=$?
grep '^soak' "$run/soak.log" >"$run/summary.txt" || true
exit "$status"
