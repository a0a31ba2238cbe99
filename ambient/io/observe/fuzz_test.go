package observe_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// FuzzYAML feeds arbitrary bytes to the offline loader. It must never panic: every input gives a
// snapshot that encodes, or an error wrapping ErrInvalidInput. Seeds live in testdata/fuzz/FuzzYAML.
func FuzzYAML(f *testing.F) {
	f.Add([]byte(istiodYAML))
	f.Add([]byte(nodeAgents))
	f.Add([]byte(pods))
	f.Add([]byte(policies))
	f.Add([]byte(kubectlVersionYAML))
	f.Add([]byte(migrationInput))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := observe.YAML(context.Background(), "fuzz.yaml", bytes.NewReader(data), observe.Options{})
		if err != nil {
			if !errors.Is(err, observe.ErrInvalidInput) {
				t.Fatalf("error does not wrap ErrInvalidInput: %v", err)
			}
		} else if _, err := mesh.EncodeSnapshot(s); err != nil {
			t.Fatalf("snapshot does not encode: %v", err)
		}
		if _, err := observe.Decode("fuzz.yaml", bytes.NewReader(data)); err != nil && !errors.Is(err, observe.ErrInvalidInput) {
			t.Fatalf("Decode error does not wrap ErrInvalidInput: %v", err)
		}
	})
}
