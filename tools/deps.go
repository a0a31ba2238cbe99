//go:build tools

package tools

import (
	_ "github.com/google/go-cmp/cmp"
	_ "helm.sh/helm/v3/pkg/action"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/controller-runtime/pkg/client"
	_ "sigs.k8s.io/e2e-framework/pkg/env"
	_ "sigs.k8s.io/yaml"
)
