// Package charts installs the real Istio Helm charts, shipped in the istio.io/istio Go module, with the
// Helm v3 SDK, and finds the Gateway API CRDs in the sigs.k8s.io/gateway-api Go module. Nothing is
// vendored: both folders come from the Go module cache (`go mod download`).
package charts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// Modules the charts and CRDs come from.
const (
	IstioModule = "istio.io/istio"
	// IstioModuleVersion is pinned: the module proxy serves only pseudo-versions of istio.io/istio.
	IstioModuleVersion = "v0.0.0-20260827124520-eed52ebb66ad"
	GatewayAPIModule   = "sigs.k8s.io/gateway-api"
)

// Chart folders under IstioChartsDir.
const (
	ChartBase    = "base"
	ChartIstiod  = "istio-control/istio-discovery"
	ChartCNI     = "istio-cni"
	ChartZtunnel = "ztunnel"
	ChartGateway = "gateway"
)

// IstioChartsDir returns the manifests/charts folder of istio.io/istio@IstioModuleVersion, or
// E2E_ISTIO_CHARTS when set.
func IstioChartsDir(ctx context.Context) (string, error) {
	if d := os.Getenv("E2E_ISTIO_CHARTS"); d != "" {
		return d, nil
	}
	dir, err := ModuleDir(ctx, IstioModule, IstioModuleVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "manifests", "charts"), nil
}

// GatewayAPICRDsDir returns config/crd/standard of sigs.k8s.io/gateway-api at the version this
// repository's go.mod requires, or E2E_GATEWAY_API_CRDS when set. It also returns that version.
func GatewayAPICRDsDir(ctx context.Context) (string, string, error) {
	if d := os.Getenv("E2E_GATEWAY_API_CRDS"); d != "" {
		return d, "", nil
	}
	v, err := goCmd(ctx, "", "list", "-m", "-f", "{{.Version}}", GatewayAPIModule)
	if err != nil {
		return "", "", fmt.Errorf("version of %s in go.mod: %w", GatewayAPIModule, err)
	}
	version := strings.TrimSpace(v)
	dir, err := ModuleDir(ctx, GatewayAPIModule, version)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, "config", "crd", "standard"), version, nil
}

// ModuleDir returns the folder of module@version in the Go module cache, downloading it with
// `go mod download` when needed (a no-op with a warm cache).
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	// Run outside any module so this repository's go.mod and go.sum are never touched.
	out, err := goCmd(ctx, os.TempDir(), "mod", "download", "-json", module+"@"+version)
	var info struct {
		Dir   string
		Error string
	}
	if jerr := json.Unmarshal([]byte(out), &info); jerr != nil {
		if err != nil {
			return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
		}
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, jerr)
	}
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no folder reported", module, version)
	}
	return info.Dir, nil
}

func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// GOFLAGS such as -mod=vendor would break `go mod download` outside a module.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// InstallGatewayAPICRDs applies the standard-channel Gateway API CRDs (and the bundle's admission
// policy) from the Go module and waits until the CRDs are established. It returns the bundle version.
func InstallGatewayAPICRDs(ctx context.Context, ap *kube.Applier, timeout time.Duration) (string, error) {
	dir, version, err := GatewayAPICRDsDir(ctx)
	if err != nil {
		return "", err
	}
	objs, err := kube.ReadYAMLDir(dir)
	if err != nil {
		return "", err
	}
	var crds []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
			if v := o.GetAnnotations()["gateway.networking.k8s.io/bundle-version"]; v != "" && version == "" {
				version = v
			}
		}
	}
	if err := ap.Apply(ctx, objs...); err != nil {
		return "", err
	}
	if err := ap.WaitCRDsEstablished(ctx, crds, timeout); err != nil {
		return "", err
	}
	return version, nil
}
