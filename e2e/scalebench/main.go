//go:build e2e

// Command scalebench fills a kwok cluster for the scale bench (hack/scale-bench.sh) and prints its
// report. It is a benchmark helper, not part of CI.
//
//	scalebench setup  -kubeconfig K -out DIR [-nodes 1000 -namespaces 500 -pods 20000]
//	scalebench report -dir DIR
//
// setup creates the kwok nodes (two pools), the Gateway API CRDs, the real Istio charts (base, istiod
// revision 1-30-3, revision tags, istio-cni, ztunnel, the ingress gateway: exactly what the e2e harness
// installs) with the fake istiod serving injection, then the namespaces (ambient, sidecar through a tag,
// through the revision and through istio-injection=enabled, and unmeshed), Deployments with their
// Services and PDBs in waves of -wave-namespaces namespaces (each wave's pods run before the next is
// created: a 2-core API server given 20,000 pods at once times requests out), and some Istio
// policies; it waits until every pod runs and enrols the ambient pods as istio-cni would
// (pods/status annotation). Finally it creates one ServiceAccount per measured
// tool (bound to cluster-admin) and writes a kubeconfig for each, so the audit log tells their
// requests apart by user.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scalebench setup|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "setup":
		err = setupCmd(os.Args[2:])
	case "report":
		err = reportCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want setup or report", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}
