//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/ambientkit/ambientkit/e2e/internal/harness"
)

var (
	testenv env.Environment
	// h is the run's environment: cluster, clients, fakes, what the fixtures created.
	h *harness.Harness
)

func TestMain(m *testing.M) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: flags: %v\n", err)
		os.Exit(2)
	}
	if h, err = harness.New(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(2)
	}
	testenv = env.NewWithConfig(cfg)
	testenv.Setup(h.CreateCluster, h.InstallIstio, h.CreateFixtures)
	testenv.AfterEachTest(h.RecordFailure)
	testenv.Finish(h.Finish)

	// Ctrl-C or a kill still deletes the cluster (its processes would outlive this one otherwise).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		h.Logf("received %s: tearing down", s)
		h.Teardown()
		os.Exit(130)
	}()

	code := testenv.Run(m)
	h.Done(code)
	os.Exit(code)
}
