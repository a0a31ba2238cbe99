//go:build e2e

package main

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// helperCRDs serve the kinds of other projects that states use (Prometheus Operator, Flagger,
// Karpenter), each with a schema that keeps every field: only their objects matter to the corpus,
// and these CRDs are ours, not the projects' own.
const helperCRDs = `{{range .}}apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: {{.Plural}}.{{.Group}}}
spec:
  group: {{.Group}}
  scope: {{.Scope}}
  names: {plural: {{.Plural}}, singular: {{.Singular}}, kind: {{.Kind}}}
  versions:
  - name: {{.Version}}
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
---
{{end}}`

type helperCRD struct{ Group, Version, Kind, Plural, Singular, Scope string }

var helperCRDList = []helperCRD{
	{"monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules", "prometheusrule", "Namespaced"},
	{"flagger.app", "v1beta1", "MetricTemplate", "metrictemplates", "metrictemplate", "Namespaced"},
	{"karpenter.sh", "v1", "NodePool", "nodepools", "nodepool", "Cluster"},
}

func pollUntil(ctx context.Context, f func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, f)
}
