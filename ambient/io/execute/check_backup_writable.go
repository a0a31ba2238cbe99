package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// checkBackupWritable: the backup file can be written here, and is not a file of something else.
// It writes and removes a probe file next to it; it never touches the file itself.
func checkBackupWritable(cp *checkPass, _ context.Context, _ plan.Check, a plan.BackupWritableArgs) (bool, string, error) {
	dir := filepath.Dir(a.File)
	fi, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return false, fmt.Sprintf("backup file %s: directory %s does not exist; create it or name another file", a.File, dir), nil
	case err != nil:
		return false, fmt.Sprintf("backup file %s: %v", a.File, err), nil
	case !fi.IsDir():
		return false, fmt.Sprintf("backup file %s: %s is not a directory", a.File, dir), nil
	}
	probe, err := os.CreateTemp(dir, ".ambientkit-probe-*")
	if err != nil {
		return false, fmt.Sprintf("backup file %s cannot be written: %v", a.File, err), nil
	}
	name := probe.Name()
	_, werr := probe.Write([]byte("probe"))
	cerr := probe.Close()
	_ = os.Remove(name)
	if werr != nil || cerr != nil {
		return false, fmt.Sprintf("backup file %s cannot be written: %v", a.File, firstErr(werr, cerr)), nil
	}
	data, err := os.ReadFile(a.File)
	switch {
	case os.IsNotExist(err):
		return true, "", nil
	case err != nil:
		return false, fmt.Sprintf("backup file %s exists and cannot be read: %v", a.File, err), nil
	}
	var b Backup
	if json.Unmarshal(data, &b) != nil || b.Plan == "" {
		return false, fmt.Sprintf("backup file %s exists and is not an ambientkit backup; name a new file or move it away", a.File), nil
	}
	if b.Plan != cp.r.hash || (a.Step != "" && b.Step != a.Step) {
		return false, fmt.Sprintf("backup file %s holds the backup of step %s of another plan (%s); name a new file or move it away", a.File, b.Step, shortHash(b.Plan)), nil
	}
	return true, "", nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
