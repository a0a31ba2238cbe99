package releases_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The release data is parsed, never fetched: whoever reads an index (helm, the helmsdk adapter, the
// caller) hands it over. The root purity test covers this package only through its importers.
func TestTheReleaseDataCannotFetchAnything(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"net", "net/http", "k8s.io/client-go", "helm.sh/helm/v3", "sigs.k8s.io/controller-runtime"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("package releases depends on %s; it must only parse what it is given", dep)
			}
		}
	}
}
