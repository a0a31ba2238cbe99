//go:build e2e

// Command executorbench measures what the executor costs per node on a real API server (issue 12;
// hack/executor-bench.sh runs it, a script, not part of CI):
//
//	executorbench fakes -kubeconfig K           # the fake istiod, in its own process, until killed
//	executorbench run   -kubeconfig K -strategy node-by-node|blue-green -out DIR [flags]
//	executorbench watch -kubeconfig K           # run's pod watch, in a process of its own (run starts it)
//
// run observes the cluster a scalebench setup filled (observe.Live), plans a ztunnel replacement with
// the real planner (ztunnel.AddUpgrade with NodeByNode, or ztunnel.BlueGreenZtunnel) to charts
// stamped as -target from the same sources, and applies it with execute.New, the Helm SDK adapter and
// a Snapshot over observe.Live, as a user of the library would. For blue-green it stands in for
// Karpenter: once the install-green step is done it creates kwok nodes labelled green. Every API
// request of the process goes through a counting transport and is attributed to the step it was
// made for (everything since the previous step finished); the process's CPU time (getrusage) is
// compared with the wall time of the Apply. The fake istiod (injection webhooks for the pods the
// drains recreate) runs in another process so its TLS work is not counted as the executor's. The
// health probe answers healthy without a request: the probe is the caller's, not the executor's.
//
// run also measures the waves' wall time against their physical limit (package limit): a child
// process (executorbench watch, so its work is not counted either) watches every pod and records
// each evicted pod's node, grace period, and when it was seen terminating and gone; the plan gives
// the waves and their settle, the budgets come from the cluster. The report's last line is
// "ratio: <wall ÷ limit>".
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: executorbench fakes|run|watch [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fakes":
		err = fakesCmd(os.Args[2:])
	case "run":
		err = runCmd(os.Args[2:])
	case "watch":
		err = watchCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want fakes, run or watch", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "executorbench:", err)
		os.Exit(1)
	}
}
