package tags_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/tags"
)

// Moving the demo mesh's canary tag to a new revision, once that revision runs: the move, the
// restarts of what the tag injects, a health gate, and the rollback that points the tag back. Asked
// to move a tag that does not exist, MoveTag blocks with a finding.
func ExampleMoveTag() {
	s, err := demo.Snapshot(context.Background())
	if err != nil {
		panic(err)
	}
	// The demo runs one revision, 1-30-3; stand for a canary 1-31-4 installed beside it.
	canary := s.Revisions[0]
	canary.Name, canary.Deployment, canary.Version = "1-31-4", "istiod-1-31-4", mesh.MustParseVersion("1.31.4")
	s.Revisions = append(s.Revisions, canary)

	p, err := tags.MoveTag(s, "canary", "1-31-4", tags.MoveOptions{})
	if err != nil {
		panic(err)
	}
	for _, st := range p.Steps {
		undo := ""
		if st.Rollback != nil {
			undo = " (undo: " + st.Rollback.Description + ")"
		}
		fmt.Printf("%s: %s%s\n", st.ID, st.Kind(), undo)
	}

	p, err = tags.MoveTag(s, "stable", "1-31-4", tags.MoveOptions{})
	if errors.Is(err, plan.ErrBlocked) {
		f := plan.Stopping(p.Findings)[0]
		fmt.Println("blocked:", f.Code, f.Details["known"])
	}
	// Output:
	// prechecks: Verify
	// tags/canary/move: MoveTag (undo: point tag canary back at revision 1-30-3)
	// tags/canary/health: HealthGate
	// blocked: TAG_UNKNOWN canary,default,prod-stable
}
