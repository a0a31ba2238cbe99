#!/usr/bin/env bash
# Starts or stops a standalone kwok cluster configured exactly like the one the e2e suites create
# (loopback-only binding, Service range 127.96.0.0/16, the suites' kwok stages), for running the
# suites repeatedly against one cluster with E2E_KUBECONFIG.
#
#   bash hack/e2e-cluster.sh up      # prints the kubeconfig path on the last line
#   E2E_KUBECONFIG=$(bash hack/e2e-cluster.sh up | tail -n1) E2E_FAKE_NODES=on bash hack/e2e.sh
#   bash hack/e2e-cluster.sh down    # also stops the demo mesh's program
#
# `up --demo` also installs the embedded demo mesh (ambient/io/demo: 14 nodes in two pools, Istio 1.30.3
# from the real charts with the Helm SDK, tags, sidecar and ambient namespaces, waypoints, workloads;
# e2e/internal/cmd/demo-mesh), so every example runs against it in one command. It prints a comment
# line with the chart folder the examples' --charts takes (1.31.4, and <chart>@1.30.3 beside), then
# the kubeconfig path:
#
#   out=$(bash hack/e2e-cluster.sh up --demo); KC=$(tail -n1 <<<"$out"); CHARTS=$(sed -n 's/^# charts: //p' <<<"$out")
#   go run ./examples/plan-upgrade --kubeconfig "$KC" --target 1.31.4 --charts "$CHARTS"
#
# No istiod runs on kwok, so the program stays in the background playing istiod's webhooks and status
# and the CNI's capture, as the e2e harness does (log: $dir/demo-mesh.log); `down` stops it. The first
# run compiles it and downloads the charts' Go module (minutes); it waits up to E2E_DEMO_WAIT seconds
# (default 900) for the mesh.
#
# With E2E_FAKE_NODES=on the suites create (and afterwards delete) their kwok nodes. State lives in ${E2E_CLUSTER_DIR:-$TMPDIR/ambientkit-e2e-cluster}.
# E2E_TIMING=realistic makes every pod honour its termination grace period and delays ztunnel readiness
# (E2E_ZTUNNEL_READY, default 3s; set alone, it delays only ztunnel); by default only pods annotated
# e2e.ambientkit.io/timing=realistic or e2e.ambientkit.io/ready-after=<duration> are slow
# (e2e/internal/kwokstages).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${E2E_CLUSTER_DIR:-${TMPDIR:-/tmp}/ambientkit-e2e-cluster}
name=${E2E_CLUSTER_NAME:-ambientkit-e2e-standalone}
bin=${E2E_BIN_DIR:-$(bash "$root/hack/e2e-bins.sh" | tail -n 1)}
export KWOK_WORKDIR="$dir/kwok"
mkdir -p "$dir"

case "${1:-}" in
up)
  demo=false
  case "${2:-}" in
  --demo) demo=true ;;
  "") ;;
  *)
    echo "usage: $0 up [--demo] | down" >&2
    exit 2
    ;;
  esac
  {
    printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n---\n'
    (cd "$root" && go run ./e2e/internal/kwokstages/cmd/kwok-stages -timing "${E2E_TIMING:-fast}" -ztunnel-ready "${E2E_ZTUNNEL_READY:-}")
  } >"$dir/kwokctl.yaml"
  "$bin/kwokctl" create cluster --name "$name" --runtime binary --config "$dir/kwokctl.yaml" \
    --kube-apiserver-binary "$bin/kube-apiserver" --kube-controller-manager-binary "$bin/kube-controller-manager" \
    --kube-scheduler-binary "$bin/kube-scheduler" --kwok-controller-binary "$bin/kwok" --etcd-binary "$bin/etcd" \
    --extra-args kube-apiserver=service-cluster-ip-range=127.96.0.0/16 \
    --extra-args kube-controller-manager=service-cluster-ip-range=127.96.0.0/16 \
    --kubeconfig "$dir/kubeconfig" --wait 3m >&2
  if $demo; then
    (cd "$root" && go build -o "$dir/demo-mesh" ./e2e/internal/cmd/demo-mesh) >&2
    rm -f "$dir/demo-mesh.ready" "$dir/demo-mesh.pid"
    setsid "$dir/demo-mesh" -kubeconfig "$dir/kubeconfig" -dir "$dir" >"$dir/demo-mesh.log" 2>&1 </dev/null &
    started=$!
    deadline=$((SECONDS + ${E2E_DEMO_WAIT:-900}))
    until [ -s "$dir/demo-mesh.ready" ]; do
      if ! kill -0 "$started" 2>/dev/null || ((SECONDS > deadline)); then
        cat "$dir/demo-mesh.log" >&2
        echo "e2e-cluster.sh: the demo mesh is not ready (log above, $dir/demo-mesh.log); the cluster is still up: bash $0 down" >&2
        exit 1
      fi
      sleep 1
    done
    cat "$dir/demo-mesh.log" >&2
    echo "# charts: $(cat "$dir/demo-mesh.ready")"
  fi
  echo "$dir/kubeconfig"
  ;;
down)
  if [ -s "$dir/demo-mesh.pid" ]; then
    pid=$(cat "$dir/demo-mesh.pid")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    fi
  fi
  "$bin/kwokctl" delete cluster --name "$name" >&2
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 up [--demo] | down" >&2
  exit 2
  ;;
esac
