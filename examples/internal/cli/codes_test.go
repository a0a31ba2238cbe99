package cli

import (
	"strings"
	"testing"
)

// TestEveryExampleListsTheCodesOfEveryPlanner fails when --list-codes misses the codes a package
// other than plan declares (migrate's register themselves in plan's catalog when linked; the codes
// are written as strings, so that this test does not link migrate itself).
func TestEveryExampleListsTheCodesOfEveryPlanner(t *testing.T) {
	var b strings.Builder
	ListCodes(&b)
	for _, c := range []string{"ROUTE_HOST_NOT_RESOLVED", "MIGRATION_NAMESPACE_NOT_FOUND", "PDB_BLOCKS_DRAIN"} {
		if !strings.Contains(b.String(), "  "+c+" ") {
			t.Errorf("--list-codes lacks %s", c)
		}
	}
}
