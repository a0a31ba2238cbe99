#!/usr/bin/env bash
# Scale bench (issue 3; a script, not part of CI): ambientkit's observe.Live + ComputeCompatibility +
# PlanUpgrade against `istioctl x precheck` on one big simulated cluster.
#
#   bash hack/scale-bench.sh                                   # 1,000 nodes, 500 namespaces, 20,000 pods
#   SCALE_NODES=200 SCALE_NAMESPACES=100 SCALE_PODS=4000 bash hack/scale-bench.sh
#
# 1. Starts a kwok cluster configured like the e2e suites' (source-built binaries from hack/e2e-bins.sh,
#    everything bound to 127.0.0.1, Service range 127.96.0.0/16, the suites' kwok stages), plus
#    --disable-qps-limits, more controller-manager and kwok workers (so 20,000 pods start in tens of
#    minutes on 2 cores) and an audit policy that logs only the two measured tools' ServiceAccounts.
# 2. `scalebench setup` (e2e/scalebench) creates the nodes, the Gateway API CRDs, the real Istio charts
#    (base, istiod revision 1-30-3, tags, istio-cni, ztunnel, ingress gateway, standing for 1.30.3, as the
#    harness installs them, with the fake istiod serving injection on loopback), the namespaces,
#    Deployments, Services, PDBs and policies, waits until every pod runs and enrols ambient pods.
# 3. Measures each side as its own process under /usr/bin/time -v on the quiet cluster, alternating,
#    SCALE_REPEAT rounds (the table shows medians and ranges): e2e/scalebench/observer (ours) and
#    istioctl x precheck built from the same istio.io/istio module version the charts come from
#    (hack/scalebench/build-istioctl.sh, cached outside the repo). Requests are counted from the API
#    server's audit log (per ServiceAccount and round), ours also client-side.
# 4. Prints the table (also written to $run/report.md). The cluster is deleted on exit, also on failure
#    and Ctrl-C.
#
# Environment: SCALE_NODES (1000), SCALE_NAMESPACES (500), SCALE_PODS (20000), SCALE_DEPLOYMENTS_PER_NS (4),
# SCALE_WAVE_NAMESPACES (50: Deployments are created this many namespaces at a time, each wave's pods
# running before the next), SCALE_TARGET (1.31.4), SCALE_TIMEOUT (60m per wait), SCALE_KWOK_PARALLELISM
# (kwok's podPlayStageParallelism, 16), SCALE_SETTLE (seconds of quiet before measuring, 20),
# SCALE_REPEAT (measuring rounds, 3), SCALE_RUN_DIR (default a new folder under $TMPDIR; kept: logs,
# JSON, report), SCALE_KEEP_CLUSTER=1, E2E_BIN_DIR (skip hack/e2e-bins.sh), ISTIOCTL (use this istioctl
# binary instead of building one).
# Only loopback addresses are ever dialled, by this script and by the API server.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t_start=$SECONDS
log() { echo "scale-bench [$((SECONDS - t_start))s]: $*" >&2; }

NODES=${SCALE_NODES:-1000}
NAMESPACES=${SCALE_NAMESPACES:-500}
PODS=${SCALE_PODS:-20000}
DEPS=${SCALE_DEPLOYMENTS_PER_NS:-4}
WAVE=${SCALE_WAVE_NAMESPACES:-50}
TARGET=${SCALE_TARGET:-1.31.4}
TIMEOUT=${SCALE_TIMEOUT:-60m}
KWOK_PAR=${SCALE_KWOK_PARALLELISM:-16}
SETTLE=${SCALE_SETTLE:-20}
REPEAT=${SCALE_REPEAT:-3}
run=${SCALE_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ambientkit-scale.XXXXXX")}
mkdir -p "$run/bin"
run=$(cd "$run" && pwd)
name=ambientkit-scale
export KWOK_WORKDIR="$run/kwok"
log "run folder $run; $NODES nodes, $NAMESPACES namespaces, $PODS pods, target $TARGET"

# --- tools -----------------------------------------------------------------------------------------
t=$SECONDS
bin=${E2E_BIN_DIR:-$(bash hack/e2e-bins.sh | tail -n 1)}
istioctl=${ISTIOCTL:-$(bash hack/scalebench/build-istioctl.sh | tail -n 1)}
go build -tags e2e -o "$run/bin/scalebench" ./e2e/scalebench
go build -tags e2e -trimpath -o "$run/bin/observer" ./e2e/scalebench/observer
tools_s=$((SECONDS - t))
log "tools ready in ${tools_s}s (control plane $bin, istioctl $istioctl)"

# --- cluster ---------------------------------------------------------------------------------------
monitor_pid=""
cleanup() {
  local status=$?
  if [ -n "$monitor_pid" ]; then kill "$monitor_pid" 2>/dev/null || true; wait "$monitor_pid" 2>/dev/null || true; fi
  if [ -d "$KWOK_WORKDIR/clusters/$name" ]; then
    if [ -d "$KWOK_WORKDIR/clusters/$name/logs" ]; then
      mkdir -p "$run/logs"
      for f in "$KWOK_WORKDIR/clusters/$name/logs"/*; do
        [ -f "$f" ] && tail -c 2000000 "$f" >"$run/logs/$(basename "$f")" 2>/dev/null || true
      done
    fi
    if [ "${SCALE_KEEP_CLUSTER:-}" = 1 ]; then
      log "SCALE_KEEP_CLUSTER=1: cluster left running; kubeconfig $run/kubeconfig; delete with KWOK_WORKDIR=$KWOK_WORKDIR $bin/kwokctl delete cluster --name $name"
    else
      local t=$SECONDS
      "$bin/kwokctl" delete cluster --name "$name" >&2 || true
      log "cluster deleted in $((SECONDS - t))s"
      rm -rf "$KWOK_WORKDIR"
    fi
  fi
  log "total $((SECONDS - t_start))s; exit $status; run folder $run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$run/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users:
  - system:serviceaccount:kube-system:scalebench-ambientkit
  - system:serviceaccount:kube-system:scalebench-istioctl
- level: None
EOF
{
  printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n---\n'
  cat e2e/internal/cluster/stages.yaml
  # kwok plays pod stages 4 at a time by default: too few to start 20,000 pods in reasonable time.
  # A KwokConfiguration given here is not defaulted: every option kwok defaults is spelled out.
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
  podPlayStageParallelism: $KWOK_PAR
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
  --kube-authorization=true --kube-admission=true --disable-qps-limits \
  --kube-audit-policy "$run/audit-policy.yaml" \
  --extra-args kube-apiserver=service-cluster-ip-range=127.96.0.0/16 \
  --extra-args kube-controller-manager=service-cluster-ip-range=127.96.0.0/16 \
  --extra-args kube-controller-manager=concurrent-deployment-syncs=20 \
  --extra-args kube-controller-manager=concurrent-replicaset-syncs=20 \
  --kubeconfig "$run/kubeconfig" --wait 3m >&2
cluster_s=$((SECONDS - t))
log "cluster up in ${cluster_s}s"
server=$(sed -n 's/^[[:space:]]*server: //p' "$run/kubeconfig" | head -n1)
case "$server" in
  https://127.*) ;;
  *) log "API server $server is not on the loopback; refusing to go on"; exit 1 ;;
esac
audit="$KWOK_WORKDIR/clusters/$name/logs/audit.log"

# Memory of the control plane (sum of the components' RSS) and of the machine, every 5 s.
mem_sample() {
  local total=0 f pid rss
  for f in "$KWOK_WORKDIR/clusters/$name/pids"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || continue
    rss=$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    total=$((total + ${rss:-0}))
    printf '%s=%d ' "$(basename "$f" .pid)" "$((${rss:-0} / 1024))"
  done
  printf 'total=%dMiB avail=%dMiB\n' "$((total / 1024))" "$(awk '/^MemAvailable:/{print int($2/1024)}' /proc/meminfo)"
}
( while :; do echo "$(date +%T) $(mem_sample)"; sleep 5; done ) >"$run/cluster-mem.log" 2>/dev/null &
monitor_pid=$!

# --- setup -----------------------------------------------------------------------------------------
t=$SECONDS
"$run/bin/scalebench" setup -kubeconfig "$run/kubeconfig" -out "$run" -nodes "$NODES" -namespaces "$NAMESPACES" \
  -pods "$PODS" -deployments-per-namespace "$DEPS" -wave-namespaces "$WAVE" -timeout "$TIMEOUT"
setup_s=$((SECONDS - t))
log "setup done in ${setup_s}s; control plane now: $(mem_sample)"
log "letting the cluster settle for ${SETTLE}s before measuring"
sleep "$SETTLE"

# --- measurements (one process each, one after the other, alternating, SCALE_REPEAT rounds) ---------
# runs.tsv: tool, round, start and end (Unix seconds): the report splits the audit log by these windows.
ours_status=0
for i in $(seq 1 "$REPEAT"); do
  log "round $i/$REPEAT: ambientkit (observe.Live + ComputeCompatibility + PlanUpgrade → $TARGET)"
  s0=$(date +%s.%N)
  st=0
  /usr/bin/time -v -o "$run/ours-$i.time" "$run/bin/observer" -kubeconfig "$run/kubeconfig-ambientkit" -target "$TARGET" \
    -out "$run/ours-$i.json" 2>"$run/ours-$i.err" || st=$?
  printf 'ambientkit\t%d\t%s\t%s\n' "$i" "$s0" "$(date +%s.%N)" >>"$run/runs.tsv"
  [ "$st" = 0 ] || ours_status=$st
  log "round $i/$REPEAT: ambientkit exit $st; control plane: $(mem_sample)"
  sleep 5
  log "round $i/$REPEAT: istioctl x precheck"
  s0=$(date +%s.%N)
  st=0
  /usr/bin/time -v -o "$run/istioctl-$i.time" "$istioctl" x precheck --kubeconfig "$run/kubeconfig-istioctl" \
    -o json --output-threshold Info >"$run/istioctl-$i.out" 2>"$run/istioctl-$i.err" || st=$?
  printf 'istioctl\t%d\t%s\t%s\n' "$i" "$s0" "$(date +%s.%N)" >>"$run/runs.tsv"
  log "round $i/$REPEAT: istioctl exit $st (non-zero when it reports warnings); control plane: $(mem_sample)"
  sleep 5
done

# --- report ----------------------------------------------------------------------------------------
peak=$(awk '{for(i=1;i<=NF;i++) if($i ~ /^total=/){v=substr($i,7); sub(/MiB/,"",v); if(v+0>m) m=v+0}} END{print m+0}' "$run/cluster-mem.log")
minavail=$(awk '{for(i=1;i<=NF;i++) if($i ~ /^avail=/){v=substr($i,7); sub(/MiB/,"",v); if(m==""||v+0<m) m=v+0}} END{print m+0}' "$run/cluster-mem.log")
"$run/bin/scalebench" report -dir "$run" -audit "$audit" -rounds "$REPEAT" \
  -title "Scale bench: $NODES nodes, $NAMESPACES namespaces, $PODS pods ($(date -u +%Y-%m-%d), $(nproc) cores)"
{
  echo
  echo "Control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok) peak RSS ${peak} MiB; lowest MemAvailable ${minavail} MiB."
  echo "Script timings: tools ${tools_s}s, cluster ${cluster_s}s, setup ${setup_s}s, whole script so far $((SECONDS - t_start))s (cluster deletion follows)."
} | tee -a "$run/report.md"
[ "$ours_status" = 0 ] || { log "the observer failed (exit $ours_status): see $run/ours-*.err"; exit 1; }
exit 0
