#!/usr/bin/env bash
# Scale bench (issues 3 and 12; a script, not part of CI): ambientkit's observe.Live +
# ComputeCompatibility + PlanUpgrade beside `istioctl x precheck`, `istioctl analyze -A` and the LIST
# floor, on one simulated cluster grown through several sizes in one run.
#
#   bash hack/scale-bench.sh                              # 250, 500, 1,000 and 2,000 nodes
#   SCALE_SIZES="200 400" SCALE_REPEAT=1 bash hack/scale-bench.sh   # a quick look
#
# 1. Starts one kwok cluster configured like the e2e suites' (source-built binaries from
#    hack/e2e-bins.sh, everything bound to 127.0.0.1, Service range 127.96.0.0/16, the suites' kwok
#    stages), plus --disable-qps-limits, more controller-manager and kwok workers and an audit policy
#    that logs only the measured tools' ServiceAccounts.
# 2. For each size (nodes, ascending), `scalebench setup` (e2e/scalebench) grows the cluster to it:
#    the nodes (two pools), then the first time the Gateway API CRDs and the real Istio charts (base,
#    istiod revision 1-30-3, tags, istio-cni, ztunnel, ingress gateway, standing for 1.30.3, with the
#    fake istiod serving injection on loopback), and the namespaces (nodes ÷ SCALE_NODES_PER_NAMESPACE)
#    with SCALE_DEPLOYMENTS_PER_NS Deployments of SCALE_REPLICAS pods each, Services, PDBs and
#    policies that the cluster lacks. Pods are created bound to their nodes for the ReplicaSets to
#    adopt (see "Direct pods" in e2e/scalebench/setup.go); SCALE_DIRECT_PODS=0 goes through the
#    scheduler instead, 2-3× slower.
# 3. On the quiet cluster, SCALE_REPEAT rounds of four processes, one after the other, each under
#    /usr/bin/time -v: e2e/scalebench/observer (ours), istioctl x precheck and istioctl analyze -A
#    (istioctl built from the same istio.io/istio module version as the charts,
#    hack/istio/build.sh istioctl, cached outside the repo), and e2e/scalebench/floor, which
#    makes the LISTs of the kinds ours read in that round (same selectors and page size; a watch-list
#    of ours becomes a paged LIST) reading the bodies without decoding them, and once more with exactly
#    ours' requests (floor -mode same). Requests are counted from the API server's audit log, per
#    ServiceAccount and process window (runs.tsv).
# 4. Prints the curve and each size's table (also written to $run/report.md). The cluster is deleted
#    on exit, also on failure and Ctrl-C.
#
# Environment: SCALE_SIZES ("250 500 1000 2000"), SCALE_NODES_PER_NAMESPACE (2),
# SCALE_DEPLOYMENTS_PER_NS (4), SCALE_REPLICAS (10: 20 application pods per node),
# SCALE_WAVE_NAMESPACES (100: Deployments are created this many namespaces at a time, each wave's
# pods running before the next), SCALE_DIRECT_PODS (1), SCALE_TARGET (1.31.4), SCALE_TIMEOUT (60m per
# wait), SCALE_KWOK_PARALLELISM (kwok's podPlayStageParallelism, 16), SCALE_SETTLE (seconds of quiet
# before measuring each size, 20), SCALE_REPEAT (rounds per size, 3), SCALE_QUIET_CORES and
# SCALE_QUIET_WAIT (before each measured process, wait up to 20 s for the rest of the machine to use
# less than 0.3 cores, niced processes not counted), SCALE_OBSERVER_FLAGS (extra flags for the
# observer: -watch-list unless set, e.g. "" or "-page-size 1000"), SCALE_LEVERS (the observer
# variants measured against each other at every size, see LEVERS below; "" skips them),
# SCALE_RUN_DIR (default a new folder under $TMPDIR; kept: logs, JSON, report), SCALE_KEEP_CLUSTER=1, E2E_BIN_DIR (skip hack/e2e-bins.sh),
# ISTIOCTL (use this istioctl binary instead of building one).
# Only loopback addresses are ever dialled, by this script and by the API server.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t_start=$SECONDS
log() { echo "scale-bench [$((SECONDS - t_start))s]: $*" >&2; }

SIZES=${SCALE_SIZES:-250 500 1000 2000}
NODES_PER_NS=${SCALE_NODES_PER_NAMESPACE:-2}
DEPS=${SCALE_DEPLOYMENTS_PER_NS:-4}
REPLICAS=${SCALE_REPLICAS:-10}
WAVE=${SCALE_WAVE_NAMESPACES:-100}
DIRECT=${SCALE_DIRECT_PODS:-1}
TARGET=${SCALE_TARGET:-1.31.4}
TIMEOUT=${SCALE_TIMEOUT:-60m}
KWOK_PAR=${SCALE_KWOK_PARALLELISM:-16}
SETTLE=${SCALE_SETTLE:-20}
REPEAT=${SCALE_REPEAT:-3}
OBSERVER_FLAGS=${SCALE_OBSERVER_FLAGS--watch-list}
# The levers, each an observer variant measured against the others at every size
# (hack/scalebench/levers.sh): none = JSON, one kind at a time, pages of 500; then one lever added at
# a time. Variants are separated by ";".
LEVERS=${SCALE_LEVERS-none=-content-type json -parallel 1;protobuf=-parallel 1;parallel=-parallel 4;pages-5000=-parallel 4 -page-size 5000;watch-list=-parallel 4 -watch-list;watch-list-serial=-parallel 1 -watch-list}
run=${SCALE_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ambientkit-scale.XXXXXX")}
mkdir -p "$run/bin"
run=$(cd "$run" && pwd)
name=ambientkit-scale
export KWOK_WORKDIR="$run/kwok"
log "run folder $run; sizes $SIZES nodes, a namespace per $NODES_PER_NS nodes, $DEPS Deployments of $REPLICAS pods per namespace, target $TARGET"

# --- tools -----------------------------------------------------------------------------------------
t=$SECONDS
bin=${E2E_BIN_DIR:-$(bash hack/e2e-bins.sh | tail -n 1)}
istioctl=${ISTIOCTL:-$(bash hack/istio/build.sh istioctl | tail -n 1)}
go build -tags e2e -o "$run/bin/scalebench" ./e2e/scalebench
go build -tags e2e -trimpath -o "$run/bin/observer" ./e2e/scalebench/observer
go build -tags e2e -trimpath -o "$run/bin/floor" ./e2e/scalebench/floor
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

# The endpoint controllers are off: pod IPs are loopback (127.64.0.0/10) here, which EndpointSlices
# refuse, so every Service's slice fails, is retried with backoff and leaves a Warning Event, for
# thousands of Services; nothing measured reads EndpointSlices or Endpoints.
cat >"$run/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users:
  - system:serviceaccount:kube-system:scalebench-ambientkit
  - system:serviceaccount:kube-system:scalebench-istioctl
  - system:serviceaccount:kube-system:scalebench-floor
- level: None
EOF
{
  printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n---\n'
  cat e2e/internal/kwokstages/stages.yaml
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
  --extra-args "kube-controller-manager=controllers=*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller" \
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

# --- sizes: grow, settle, measure -------------------------------------------------------------------
# runs.tsv: tool, size, round, start and end (Unix seconds): the report splits the audit log by these.
# Contention: the machine is shared, so each window also records the CPU the rest of the machine
# used (all busy CPU, less the control plane's and the measured process's), for the report.
cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
# cpu_busy_unniced: the same, niced ticks left out, for wait_quiet: a nice-19 process (someone's
# tests) barely takes the CPU from the measured one, and waiting for it to end would wait for ever on
# a shared machine. The report's "other processes" count it all the same.
cpu_busy_unniced() { awk '/^cpu /{print $2+$4+$7+$8+$9}' /proc/stat; }
cp_cpu() {
  local t=0 f pid v
  for f in "$KWOK_WORKDIR/clusters/$name/pids"/*.pid; do
    pid=$(cat "$f" 2>/dev/null) || continue
    v=$(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null) || v=0
    t=$((t + ${v:-0}))
  done
  echo "$t"
}
# wait_quiet waits (up to SCALE_QUIET_WAIT seconds, 20) until the rest of the machine used less than
# SCALE_QUIET_CORES (0.3) cores over a second, so that a measurement does not share the CPU with
# someone's build.
wait_quiet() {
  local deadline=$((SECONDS + ${SCALE_QUIET_WAIT:-20})) b0 c0 used
  while [ "$SECONDS" -lt "$deadline" ]; do
    b0=$(cpu_busy_unniced) c0=$(cp_cpu)
    sleep 1
    used=$(( $(cpu_busy_unniced) - b0 - $(cp_cpu) + c0 ))
    awk -v u="$used" -v hz="$(getconf CLK_TCK)" -v q="${SCALE_QUIET_CORES:-0.3}" 'BEGIN{exit !(u/hz < q)}' && return 0
  done
  log "the machine did not get quiet within ${SCALE_QUIET_WAIT:-20}s; measuring anyway"
}
measure() { # measure TOOL SIZE ROUND DIR COMMAND...: one process under /usr/bin/time -v
  local tool=$1 size=$2 i=$3 dir=$4 s0 st=0 b0 c0 others
  shift 4
  wait_quiet
  b0=$(cpu_busy) c0=$(cp_cpu)
  s0=$(date +%s.%N)
  /usr/bin/time -v -o "$dir/$tool-$i.time" "$@" >"$dir/$tool-$i.out" 2>"$dir/$tool-$i.err" || st=$?
  others=$(awk -v b="$(( $(cpu_busy) - b0 - $(cp_cpu) + c0 ))" -v hz="$(getconf CLK_TCK)" \
    '/User time/{u=$NF} /System time/{s=$NF} END{v=b/hz-u-s; if(v<0)v=0; printf "%.2f", v}' "$dir/$tool-$i.time")
  printf '%s\t%d\t%d\t%s\t%s\t%s\n' "$tool" "$size" "$i" "$s0" "$(date +%s.%N)" "$others" >>"$run/runs.tsv"
  log "$size nodes, round $i/$REPEAT: $tool exit $st ($(awk -F': ' '/Elapsed/{w=$2} /Maximum resident/{m=$2} END{printf "%s wall, %d MiB", w, m/1024}' "$dir/$tool-$i.time"); other processes ${others} CPU-s)"
  return 0
}
ours_status=0
setup_times=""
direct_flag=true
[ "$DIRECT" = 1 ] || direct_flag=false
for size in $SIZES; do
  dir="$run/$size"
  mkdir -p "$dir"
  namespaces=$((size / NODES_PER_NS))
  t=$SECONDS
  log "growing the cluster to $size nodes, $namespaces namespaces"
  "$run/bin/scalebench" setup -kubeconfig "$run/kubeconfig" -out "$dir" -nodes "$size" -namespaces "$namespaces" \
    -replicas "$REPLICAS" -deployments-per-namespace "$DEPS" -wave-namespaces "$WAVE" -direct-pods="$direct_flag" \
    -timeout "$TIMEOUT" 2>&1 | tee "$dir/setup.log" >&2
  setup_times="$setup_times ${size}:$((SECONDS - t))s"
  log "$size nodes ready in $((SECONDS - t))s; control plane now: $(mem_sample)"
  sleep "$SETTLE"
  for i in $(seq 1 "$REPEAT"); do
    # shellcheck disable=SC2086 # OBSERVER_FLAGS is a list of flags
    measure ours "$size" "$i" "$dir" "$run/bin/observer" -kubeconfig "$dir/kubeconfig-ambientkit" -target "$TARGET" \
      -out "$dir/ours-$i.json" $OBSERVER_FLAGS
    grep -q '"error"' "$dir/ours-$i.json" 2>/dev/null && ours_status=1
    sleep 3
    measure precheck "$size" "$i" "$dir" "$istioctl" x precheck --kubeconfig "$dir/kubeconfig-istioctl" -o json --output-threshold Info
    sleep 3
    measure analyze "$size" "$i" "$dir" "$istioctl" analyze -A --kubeconfig "$dir/kubeconfig-istioctl" -o json
    sleep 3
    measure floor "$size" "$i" "$dir" "$run/bin/floor" -kubeconfig "$dir/kubeconfig-floor" -requests "$dir/ours-$i.json" -out "$dir/floor-$i.json"
    sleep 3
    measure requests "$size" "$i" "$dir" "$run/bin/floor" -mode same -kubeconfig "$dir/kubeconfig-floor" -requests "$dir/ours-$i.json" -out "$dir/requests-$i.json"
    sleep 3
  done
  if [ -n "$LEVERS" ]; then
    IFS=';' read -ra variants <<<"$LEVERS"
    log "$size nodes: levers, $REPEAT rounds of ${#variants[@]} observer variants and precheck"
    LEVERS_ROUNDS=$REPEAT LEVERS_OUT="$dir/levers" LEVERS_PIDS_DIR="$KWOK_WORKDIR/clusters/$name/pids" \
      LEVERS_QUIET_CORES=${SCALE_QUIET_CORES:-0.3} LEVERS_QUIET_WAIT=${SCALE_QUIET_WAIT:-20} ISTIOCTL="$istioctl" \
      bash hack/scalebench/levers.sh "$dir" "${variants[@]}" >"$dir/levers.log" 2>&1 || log "$size nodes: levers failed, see $dir/levers.log"
  fi
done
sleep 2 # let the audit backend flush

# --- report ----------------------------------------------------------------------------------------
peak=$(awk '{for(i=1;i<=NF;i++) if($i ~ /^total=/){v=substr($i,7); sub(/MiB/,"",v); if(v+0>m) m=v+0}} END{print m+0}' "$run/cluster-mem.log")
minavail=$(awk '{for(i=1;i<=NF;i++) if($i ~ /^avail=/){v=substr($i,7); sub(/MiB/,"",v); if(m==""||v+0<m) m=v+0}} END{print m+0}' "$run/cluster-mem.log")
"$run/bin/scalebench" report -dir "$run" -sizes "$SIZES" -audit "$audit" -rounds "$REPEAT" \
  -title "Scale bench: $SIZES nodes, $REPLICAS pods per Deployment, $DEPS Deployments per namespace, a namespace per $NODES_PER_NS nodes ($(date -u +%Y-%m-%d), $(nproc) cores)"
{
  echo
  echo "Control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok) peak RSS ${peak} MiB; lowest MemAvailable ${minavail} MiB."
  echo "Script timings: tools ${tools_s}s, cluster ${cluster_s}s, growing to each size:${setup_times}; whole script so far $((SECONDS - t_start))s (cluster deletion follows)."
  if [ -n "$LEVERS" ]; then
    echo
    echo "## Levers"
    echo
    echo "Observer variants against each other (hack/scalebench/levers.sh), median of $REPEAT rounds, alternating, each after the machine was quiet; ours above ran with: ${OBSERVER_FLAGS:-no extra flags}. Variants: ${LEVERS//;/; }."
    for size in $SIZES; do
      echo
      echo "### $size nodes"
      echo
      cat "$run/$size/levers/summary.md" 2>/dev/null || echo "(no result: see $run/$size/levers.log)"
    done
  fi
} | tee -a "$run/report.md"
[ "$ours_status" = 0 ] || { log "the observer failed: see $run/*/ours-*.json"; exit 1; }
exit 0
