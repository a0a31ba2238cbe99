// Package e2e holds the end-to-end suites of ambientkit. They run on sigs.k8s.io/e2e-framework
// against a real control plane and the real Istio Helm charts, and only with the build tag e2e:
//
//	bash hack/e2e.sh                       # builds the control-plane binaries, then runs the suites
//	go test -tags e2e -count=1 ./e2e/...   # with E2E_BIN_DIR set (kwok) or E2E_KUBECONFIG set
//
// See README.md in this folder for the providers (kwok, kind, an existing cluster), the environment
// variables and measured times.
package e2e
