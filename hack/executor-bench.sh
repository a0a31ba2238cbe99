#!/usr/bin/env bash
# Executor bench (issue 12; a script, not part of CI): what a ztunnel replacement costs per node on a
# real API server. One kwok cluster, filled by the scale bench's setup, then two runs one after the
# other through the public API (e2e/executorbench):
#
#   1. node by node (ztunnel.AddUpgrade, NodeByNode): per node cordon, drain, replace, wait, uncordon;
#   2. blue-green (ztunnel.BlueGreenZtunnel): green installed, green kwok nodes created as Karpenter
#      would, every blue node cordoned and drained onto them, blue removed.
#
# Each run prints API requests per node (by verb and resource, attributed to the step they were made
# for; evictions apart), the executor process's CPU time as a share of the Apply's wall time, and the
# waves' wall time against their physical limit (e2e/executorbench/limit): per wave the slowest node's
# drain (its slowest pod's termination as the cluster played it: the grace period plus kwok's deletion
# right after it, or longer where a PodDisruptionBudget lets its pods terminate only one at a time),
# plus the new ztunnel's readiness (node by node: from the old pod's deletion to its successor Ready,
# as the watch saw the cluster play it), plus the health gate's settle. The
# last line of each strategy's report is "ratio: <wall ÷ limit>"; before it, limit_s, estimate_s (the
# runbook's Phases estimate of the same waves: the same model, plan.EstimateTime, fed the plan's
# snapshot instead of what the cluster did), wall_s,
# requests_per_node_beyond_evictions, executor_cpu_share and max_nodes_draining (the most nodes
# draining at one instant, from a watch on the pods: first eviction to last evicted pod gone).
#
# Real timing on kwok: the fleet's pods are annotated e2e.ambientkit.io/timing=realistic, so an evicted
# pod stays Terminating for its grace period (e2e/internal/kwokstages); the replacements come from the
# real ReplicaSet and StatefulSet controllers and the scheduler, so the budgets really bind; ztunnel
# pods turn Ready BENCH_ZTUNNEL_READY after they start. Everything else (istiod, the charts' own pods)
# stays as fast as kwok makes it.
#
#   flock /tmp/ak/e2e.lock bash hack/executor-bench.sh          # 1,000 nodes, 200 namespaces, 5,000 pods
#   EXECUTOR_BENCH_LOCK=/tmp/ak/e2e.lock bash hack/executor-bench.sh   # builds first, locks only for the cluster
#   BENCH_NODES=40 BENCH_BATCH=10 BENCH_POD_GRACE=10s bash hack/executor-bench.sh   # a small run
#
# Environment: BENCH_NODES (1000), BENCH_NAMESPACES (BENCH_NODES/5, at least 4), BENCH_PODS
# (BENCH_NODES×5, rounded down to 4 Deployments per namespace), BENCH_BATCH (10 nodes per batch),
# BENCH_POD_GRACE (20s: terminationGracePeriodSeconds of the Deployments' pods), BENCH_STS_REPLICAS (3:
# pods of StatefulSet bench-0000/ledger, one per node, budget maxUnavailable 1; 0 for none),
# BENCH_STS_GRACE (60s: their grace period), BENCH_ZTUNNEL_READY (3s: a new ztunnel pod's time to
# Ready), BENCH_GREEN (10 green nodes per pool), BENCH_TARGET (1.30.4), BENCH_STRATEGIES
# ("node-by-node blue-green"), BENCH_POLL (500ms), BENCH_SETTLE (1s per health gate), BENCH_RUN_DIR
# (default a new folder under $TMPDIR; kept: logs, plans, events, reports), BENCH_KEEP_CLUSTER=1,
# E2E_BIN_DIR (skip hack/e2e-bins.sh), EXECUTOR_BENCH_LOCK (a lock file taken once the tools are
# built, held while the cluster runs). Only loopback addresses are ever dialled.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t_start=$SECONDS
log() { echo "executor-bench [$((SECONDS - t_start))s]: $*" >&2; }

NODES=${BENCH_NODES:-1000}
ns_default=$((NODES / 5))
[ "$ns_default" -ge 4 ] || ns_default=4
NAMESPACES=${BENCH_NAMESPACES:-$ns_default}
PODS=${BENCH_PODS:-$((NODES * 5))}
BATCH=${BENCH_BATCH:-10}
POD_GRACE=${BENCH_POD_GRACE:-20s}
STS_REPLICAS=${BENCH_STS_REPLICAS:-3}
STS_GRACE=${BENCH_STS_GRACE:-60s}
ZTUNNEL_READY=${BENCH_ZTUNNEL_READY:-3s}
GREEN=${BENCH_GREEN:-10}
TARGET=${BENCH_TARGET:-1.30.4}
STRATEGIES=${BENCH_STRATEGIES:-node-by-node blue-green}
POLL=${BENCH_POLL:-500ms}
SETTLE=${BENCH_SETTLE:-1s}
run=${BENCH_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ambientkit-executor-bench.XXXXXX")}
mkdir -p "$run/bin"
run=$(cd "$run" && pwd)
name=ambientkit-executor-bench
export KWOK_WORKDIR="$run/kwok"
log "run folder $run; $NODES nodes, $NAMESPACES namespaces, $PODS pods (grace $POD_GRACE), StatefulSet of $STS_REPLICAS (grace $STS_GRACE), ztunnel ready after $ZTUNNEL_READY; strategies: $STRATEGIES"

# --- tools -----------------------------------------------------------------------------------------
bin=${E2E_BIN_DIR:-$(bash hack/e2e-bins.sh | tail -n 1)}
go build -tags e2e -o "$run/bin/scalebench" ./e2e/scalebench
go build -tags e2e -o "$run/bin/executorbench" ./e2e/executorbench
go build -o "$run/bin/kwok-stages" ./e2e/internal/kwokstages/cmd/kwok-stages
log "tools ready"
if [ -n "${EXECUTOR_BENCH_LOCK:-}" ]; then
  exec 9>"$EXECUTOR_BENCH_LOCK"
  log "waiting for lock $EXECUTOR_BENCH_LOCK"
  flock 9
  log "lock taken"
fi

# --- cluster ---------------------------------------------------------------------------------------
fakes_pid=""
cleanup() {
  local status=$?
  if [ -n "$fakes_pid" ]; then kill "$fakes_pid" 2>/dev/null || true; wait "$fakes_pid" 2>/dev/null || true; fi
  if [ -d "$KWOK_WORKDIR/clusters/$name" ]; then
    if [ "${BENCH_KEEP_CLUSTER:-}" = 1 ]; then
      log "BENCH_KEEP_CLUSTER=1: cluster left running; kubeconfig $run/kubeconfig; delete with KWOK_WORKDIR=$KWOK_WORKDIR $bin/kwokctl delete cluster --name $name"
    else
      "$bin/kwokctl" delete cluster --name "$name" >&2 || true
      rm -rf "$KWOK_WORKDIR"
    fi
  fi
  log "total $((SECONDS - t_start))s; exit $status; run folder $run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
  printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n---\n'
  # The e2e stages (pods annotated timing=realistic honour their grace period) with ztunnel's delay.
  "$run/bin/kwok-stages" -ztunnel-ready "$ZTUNNEL_READY"
  # kwok plays pod stages 4 at a time by default: too few for thousands of pods moving.
  cat <<EOF
---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.0.0.0/24
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
EOF
} >"$run/kwokctl.yaml"
t=$SECONDS
"$bin/kwokctl" create cluster --name "$name" --runtime binary --config "$run/kwokctl.yaml" \
  --kube-apiserver-binary "$bin/kube-apiserver" --kube-controller-manager-binary "$bin/kube-controller-manager" \
  --kube-scheduler-binary "$bin/kube-scheduler" --kwok-controller-binary "$bin/kwok" --etcd-binary "$bin/etcd" \
  --disable-qps-limits \
  --extra-args kube-apiserver=service-cluster-ip-range=127.96.0.0/16 \
  --extra-args kube-controller-manager=service-cluster-ip-range=127.96.0.0/16 \
  --extra-args kube-controller-manager=concurrent-deployment-syncs=20 \
  --extra-args kube-controller-manager=concurrent-replicaset-syncs=20 \
  --kubeconfig "$run/kubeconfig" --wait 3m >&2
log "cluster up in $((SECONDS - t))s"
server=$(sed -n 's/^[[:space:]]*server: //p' "$run/kubeconfig" | head -n1)
case "$server" in
  https://127.*) ;;
  *) log "API server $server is not on the loopback; refusing to go on"; exit 1 ;;
esac

# --- setup: the scale bench's mesh -----------------------------------------------------------------
t=$SECONDS
# The scale bench's setup makes 4 Deployments per namespace; their replicas bring the pods near PODS.
replicas=$(( PODS / (NAMESPACES * 4) ))
[ "$replicas" -ge 1 ] || replicas=1
"$run/bin/scalebench" setup -kubeconfig "$run/kubeconfig" -out "$run/setup" -nodes "$NODES" -namespaces "$NAMESPACES" \
  -deployments-per-namespace 4 -replicas "$replicas" -waypoints 0 \
  -pod-grace "$POD_GRACE" -realistic-timing -statefulset-replicas "$STS_REPLICAS" -statefulset-grace "$STS_GRACE" >"$run/setup.log" 2>&1 || { tail -n 20 "$run/setup.log" >&2; exit 1; }
setup_s=$((SECONDS - t))
log "setup done in ${setup_s}s"

# --- the fake istiod and istio-cni, in their own process (their work is not the executor's) --------
"$run/bin/executorbench" fakes -kubeconfig "$run/kubeconfig" >"$run/fakes.out" 2>"$run/fakes.log" &
fakes_pid=$!
for _ in $(seq 1 240); do
  grep -q '^ready' "$run/fakes.out" 2>/dev/null && break
  kill -0 "$fakes_pid" 2>/dev/null || { tail -n 20 "$run/fakes.log" >&2; exit 1; }
  sleep 0.5
done
grep -q '^ready' "$run/fakes.out" || { log "the fake istiod did not get ready"; exit 1; }

# --- the runs --------------------------------------------------------------------------------------
for s in $STRATEGIES; do
  sleep 10 # the fake istio-cni enrols the pods the previous run recreated
  t=$SECONDS
  log "applying $s"
  "$run/bin/executorbench" run -kubeconfig "$run/kubeconfig" -strategy "$s" -out "$run/$s" -target "$TARGET" \
    -batch "$BATCH" -green-nodes "$GREEN" -poll "$POLL" -settle "$SETTLE" -ztunnel-ready "$ZTUNNEL_READY" 2>"$run/$s.log" | tee "$run/report-$s.txt"
  log "$s done in $((SECONDS - t))s"
done
{
  echo
  echo "Executor bench: $NODES nodes, $NAMESPACES namespaces, $PODS pods, batches of $BATCH; grace: pods $POD_GRACE, StatefulSet ($STS_REPLICAS) $STS_GRACE; ztunnel ready after $ZTUNNEL_READY ($(date -u +%Y-%m-%d), $(nproc) cores); setup ${setup_s}s, whole script $((SECONDS - t_start))s"
  for s in $STRATEGIES; do cat "$run/report-$s.txt"; done
} | tee "$run/report.txt"
