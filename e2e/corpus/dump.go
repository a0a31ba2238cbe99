//go:build e2e

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// dump runs the commands of observe.DumpCommands against the cluster into dir/dump (raw copies in
// the run folder), prunes them, and checks the pruned dump gives the snapshot the raw one gives.
func (e *Env) dump(ctx context.Context, s *State, dir string) error {
	seen := map[string]bool{}
	var nss []string
	for _, r := range e.releases {
		if !seen[r.namespace] {
			seen[r.namespace] = true
			nss = append(nss, r.namespace)
		}
	}
	sort.Strings(nss)
	raw := filepath.Join(e.runDir, "raw", s.ID)
	out := filepath.Join(dir, "dump")
	for _, d := range []string{raw, out} {
		if err := mkdirClean(d); err != nil {
			return err
		}
	}
	cmds := observe.DumpCommands(observe.DumpOptions{Kubectl: []string{filepath.Join(e.bin, "kubectl"), "--kubeconfig", e.kubeconfig}, ReleaseNamespaces: nss})
	// The commands read and never write, so they run four at a time.
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = dumpOne(ctx, c, raw, out)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	want, err := observe.Dir(ctx, raw, observe.Options{})
	if err != nil {
		return fmt.Errorf("observe the raw dump: %w", err)
	}
	got, err := observe.Dir(ctx, out, observe.Options{})
	if err != nil {
		return fmt.Errorf("observe the pruned dump: %w", err)
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(mesh.Snapshot{}, "Observation"), cmpopts.EquateEmpty()); d != "" {
		return fmt.Errorf("the pruned dump observes differently from the raw one (-raw +pruned):\n%s", d)
	}
	e.log("state %s: dumped %d commands into %s", s.ID, len(cmds), out)
	return nil
}

// dumpOne runs one dump command, saves its output raw and pruned. An optional kind the cluster
// does not serve leaves no file, as the dump's own instructions say (DumpCommand.Optional).
func dumpOne(ctx context.Context, c observe.DumpCommand, raw, out string) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if c.Optional && strings.Contains(stderr.String(), "the server doesn't have a resource type") {
			return nil
		}
		return fmt.Errorf("%s: %w: %s", c, err, strings.TrimSpace(stderr.String()))
	}
	if err := os.WriteFile(filepath.Join(raw, c.File), stdout.Bytes(), 0o644); err != nil {
		return err
	}
	pruned, keep, err := prune(c.File, stdout.Bytes())
	if err != nil {
		return fmt.Errorf("prune %s: %w", c.File, err)
	}
	if !keep {
		return nil
	}
	return os.WriteFile(filepath.Join(out, c.File), pruned, 0o644)
}
