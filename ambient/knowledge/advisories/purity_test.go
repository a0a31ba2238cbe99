package advisories_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The advisory data is parsed, never fetched: the generator in hack/advisories reads upstream, this
// package only reads what it is given.
func TestTheAdvisoryDataCannotFetchAnything(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"net", "net/http", "os/exec", "k8s.io/client-go", "helm.sh/helm/v3", "sigs.k8s.io/controller-runtime"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("package advisories depends on %s; it must only parse what it is given", dep)
			}
		}
	}
}
