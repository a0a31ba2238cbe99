package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func checkBackupReadable(cp *checkPass, ctx context.Context, _ plan.Check, a plan.BackupReadableArgs) (bool, string, error) {
	id := a.Step
	if id == "" {
		id = cp.st.ID
	}
	rec := cp.r.record(id)
	if rec == nil || rec.State["digest"] == "" {
		return false, fmt.Sprintf("step %s has written no backup", id), nil
	}
	b, err := cp.e.readBackup(ctx, cp.r, id, rec.State["digest"])
	if errors.Is(err, ErrNoBackup) {
		return false, err.Error(), nil
	}
	if err != nil {
		return false, "", err
	}
	return true, fmt.Sprintf("%d entries read back", len(b.Entries)), nil
}
