package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

// exec runs the example on the embedded demo mesh (the examples read the live cluster unless told).
func exec(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"--demo"}, args...), strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestTheDemoPlanReadsLikeTheRunbookAndSaysWhatToWaive(t *testing.T) {
	out, err := exec("--green-nodepools", "general,batch", "--batch-size", "4")
	if code := cli.ExitCode(err); code != cli.ExitNeedsWaiver || !strings.Contains(err.Error(), "--waive PDB_BLOCKS_DRAIN") {
		t.Fatalf("exit %d (%v), want %d naming --waive PDB_BLOCKS_DRAIN", code, err, cli.ExitNeedsWaiver)
	}
	for _, want := range []string{"ztunnel/bluegreen/pin-blue", "CA_TRUSTED_NODE_ACCOUNTS", "helm install ztunnel-green", "kubectl drain", "helm uninstall ztunnel -n istio-system"} {
		if !strings.Contains(out, want) {
			t.Errorf("the runbook lacks %q", want)
		}
	}
}

func TestTheWaivedDemoPlanDecodesAndIsNotApplied(t *testing.T) {
	out, err := exec("--green-nodes", "3", "--waive", "PDB_BLOCKS_DRAIN", "-o", "yaml")
	if err != nil {
		t.Fatalf("the waived plan of the demo should be runnable: %v", err)
	}
	p, err := plan.Decode([]byte(out))
	if err != nil {
		t.Fatalf("-o yaml does not decode: %v", err)
	}
	if _, ok := p.Step("ztunnel/bluegreen/green-capacity"); !ok || !p.Runnable() {
		t.Errorf("want a runnable plan waiting for the 3 green nodes; steps %d, runnable %v", len(p.Steps), p.Runnable())
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--jobs", "kill"},
		{"--green-nodepools", "general", "--relabel", "n1"},
		{"--batch-size", "-1"},
		{"--green-node-allocatable", "cpu"},
		{"--green-node-allocatable", "cpu=lots"},
		{"--green-node-allocatable", "cpu=0"},
		{"--green-node-allocatable", "cpu=8", "--relabel", "ip-10-0-1-11.ec2.internal"},
		{"-o", "xml"},
		{"--target", "v1"},
	} {
		if _, err := exec(args...); cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%q: exit %d (%v), want a usage error", args, cli.ExitCode(err), err)
		}
	}
}

func TestTheSizeOfTheNodesAddedCountsTheGreenNodesNeeded(t *testing.T) {
	out, err := exec("--green-nodes", "1", "--green-node-allocatable", "cpu=8,memory=32Gi,pods=58", "--waive", "PDB_BLOCKS_DRAIN", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Findings {
		if f.Code == plan.CodeBlueGreenCapacityNeeded {
			if f.Details["greenNodesAdded"] == "" || !strings.Contains(f.Message, "as GreenCapacity.NodeAllocatable says") {
				t.Errorf("the capacity finding does not count green nodes of the size given: %s %v", f.Message, f.Details)
			}
			return
		}
	}
	t.Error("no BLUEGREEN_CAPACITY_NEEDED finding")
}
