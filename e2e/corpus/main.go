//go:build e2e

// Command corpus regenerates testdata/broken: every broken-mesh state of the corpus, made on one kwok
// cluster with the real Istio charts (installed with the Helm SDK, as e2e/internal/harness does) and
// dumped with exactly the commands of observe.DumpCommands, then pruned to what the observer reads.
//
//	go run -tags e2e ./e2e/corpus -out testdata/broken [-only id,id] [-keep]
//
// hack/corpus.sh runs it under the e2e lock. For each state (states.go) it installs the state's
// Istio from a clean slate, creates the state's objects, waits until kwok and the fakes settle, runs
// the dump commands into <out>/<id>/dump, prunes the files (prune.go) and checks that the pruned dump
// gives the same snapshot as the raw one, writes <out>/<id>/README.md (the report, what breaks) and
// <out>/<id>/expect.yaml (the command to run and the findings a correct tool must answer with),
// then removes everything it installed before the next state.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
)

func main() {
	out := flag.String("out", "testdata/broken", "folder the states are written to (one sub-folder per state)")
	only := flag.String("only", "", "comma-separated state ids to regenerate (default: all)")
	keep := flag.Bool("keep", false, "leave the cluster running at the end")
	list := flag.Bool("list", false, "list the states and exit")
	index := flag.Bool("index", false, "rewrite <out>/README.md and each generated state's README.md and expect.yaml from the table, and exit (no cluster)")
	flag.Parse()
	if *list {
		for _, s := range states {
			fmt.Printf("%-48s %-8s %s\n", s.ID, s.BeforeCorpus, s.Title)
		}
		return
	}
	if *index {
		if err := rewriteMetadata(*out, states); err != nil {
			fmt.Fprintf(os.Stderr, "corpus: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *only, *keep); err != nil {
		fmt.Fprintf(os.Stderr, "corpus: %v\n", err)
		os.Exit(1)
	}
}

func logf(t0 time.Time) func(string, ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[corpus %6.1fs] %s\n", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
	}
}

func run(out, only string, keep bool) error {
	t0 := time.Now()
	log := logf(t0)
	selected, err := selectStates(only)
	if err != nil {
		return err
	}
	if err := checkStates(states); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeIndex(out, states); err != nil {
		return err
	}
	bin := os.Getenv("E2E_BIN_DIR")
	if bin == "" {
		return errors.New("E2E_BIN_DIR is not set: run E2E_BIN_DIR=$(bash hack/e2e-bins.sh | tail -1) first (hack/corpus.sh does)")
	}
	runDir, err := os.MkdirTemp("", "ambientkit-corpus-")
	if err != nil {
		return err
	}
	c, err := cluster.New(cluster.Options{Provider: cluster.ProviderKwok, Name: "ambientkit-corpus", RunDir: runDir, BinDir: bin, Logf: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		if keep {
			log("cluster left running; kubeconfig %s", c.Kubeconfig())
			return
		}
		if err := c.Destroy(context.Background()); err != nil {
			log("delete the cluster: %v", err)
		}
		_ = os.RemoveAll(runDir)
	}()
	kc, err := c.Create(ctx)
	if err != nil {
		return err
	}
	env, err := newEnv(ctx, kc, runDir, bin, log)
	if err != nil {
		return err
	}
	defer env.stop()
	timings := map[string]time.Duration{}
	for _, s := range selected {
		st := time.Now()
		log("state %s: %s", s.ID, s.Title)
		if err := env.generate(ctx, s, filepath.Join(out, s.ID)); err != nil {
			return fmt.Errorf("state %s: %w", s.ID, err)
		}
		timings[s.ID] = time.Since(st)
		log("state %s done in %s", s.ID, timings[s.ID].Round(100*time.Millisecond))
	}
	var lines []string
	for id, d := range timings {
		lines = append(lines, fmt.Sprintf("%s=%s", id, d.Round(100*time.Millisecond)))
	}
	sort.Strings(lines)
	log("%d states in %s (%s)", len(selected), time.Since(t0).Round(time.Second), strings.Join(lines, " "))
	return nil
}

func selectStates(only string) ([]*State, error) {
	if only == "" {
		return states, nil
	}
	byID := map[string]*State{}
	for _, s := range states {
		byID[s.ID] = s
	}
	var out []*State
	for _, id := range strings.Split(only, ",") {
		s, ok := byID[strings.TrimSpace(id)]
		if !ok {
			return nil, fmt.Errorf("-only: no state %q (see -list)", id)
		}
		out = append(out, s)
	}
	return out, nil
}

// checkStates refuses a table with repeated ids or a state without a source or expectation.
func checkStates(all []*State) error {
	seen := map[string]bool{}
	for _, s := range all {
		switch {
		case seen[s.ID]:
			return fmt.Errorf("state %s is listed twice", s.ID)
		case len(s.Sources) == 0:
			return fmt.Errorf("state %s names no report it comes from", s.ID)
		case len(s.Expect) == 0:
			return fmt.Errorf("state %s expects no finding", s.ID)
		case len(s.Command) == 0:
			return fmt.Errorf("state %s names no command", s.ID)
		case s.BeforeCorpus != beforeAnswered && s.BeforeCorpus != beforeMissed && s.BeforeCorpus != beforePartly:
			return fmt.Errorf("state %s: BeforeCorpus is %q, want %s, %s or %s", s.ID, s.BeforeCorpus, beforeAnswered, beforeMissed, beforePartly)
		case s.BeforeCorpus != beforeAnswered && s.Before == "":
			return fmt.Errorf("state %s was %s before the corpus: say why in Before", s.ID, s.BeforeCorpus)
		case s.BeforeCorpus != beforeAnswered && !s.Pending && s.Rule == "":
			return fmt.Errorf("state %s is answered by %s: name the rule in Rule", s.ID, s.Answers)
		}
		seen[s.ID] = true
	}
	return nil
}

// rewriteMetadata rewrites what the table says of each state whose dump exists (README.md,
// expect.yaml) and the index, leaving the dumps as they are: a change of text or expectation needs
// no cluster.
func rewriteMetadata(out string, all []*State) error {
	if err := checkStates(all); err != nil {
		return err
	}
	for _, s := range all {
		dir := filepath.Join(out, s.ID)
		if _, err := os.Stat(filepath.Join(dir, "dump")); err != nil {
			continue
		}
		if err := writeState(s, dir); err != nil {
			return fmt.Errorf("state %s: %w", s.ID, err)
		}
	}
	return writeIndex(out, all)
}
