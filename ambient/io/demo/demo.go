package demo

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

//go:embed cluster/*.yaml
var embedded embed.FS

// Files returns the demo cluster's YAML files (NN-topic.yaml at the root of the returned FS).
func Files() fs.FS {
	sub, err := fs.Sub(embedded, "cluster")
	if err != nil { // cannot happen: the directory is embedded at build time
		panic(err)
	}
	return sub
}

// Snapshot observes the demo cluster (Observation.Source "demo"). Each call returns a new snapshot.
func Snapshot(ctx context.Context) (*mesh.Snapshot, error) {
	s, err := observe.FS(ctx, "demo", Files(), observe.Options{})
	if err != nil {
		return nil, fmt.Errorf("observe the embedded demo cluster: %w", err)
	}
	s.Observation.Source = "demo"
	return s, nil
}

// Objects decodes the demo cluster into objects for a fake client built with observe.Scheme: typed
// objects for built-in kinds and CRDs, unstructured ones for custom resources.
func Objects() ([]client.Object, error) {
	objs, err := observe.DecodeFS(Files())
	if err != nil {
		return nil, fmt.Errorf("decode the embedded demo cluster: %w", err)
	}
	return objs, nil
}
