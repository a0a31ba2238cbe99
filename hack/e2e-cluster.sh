#!/usr/bin/env bash
# Starts or stops a standalone kwok cluster configured exactly like the one the e2e suites create
# (loopback-only binding, Service range 127.96.0.0/16, the suites' kwok stages), for running the
# suites repeatedly against one cluster with E2E_KUBECONFIG.
#
#   bash hack/e2e-cluster.sh up      # prints the kubeconfig path on the last line
#   E2E_KUBECONFIG=$(bash hack/e2e-cluster.sh up | tail -n1) E2E_FAKE_NODES=on bash hack/e2e.sh
#   bash hack/e2e-cluster.sh down
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
  echo "$dir/kubeconfig"
  ;;
down)
  "$bin/kwokctl" delete cluster --name "$name" >&2
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
