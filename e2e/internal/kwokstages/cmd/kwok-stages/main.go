// Command kwok-stages prints the e2e clusters' kwok stages (package kwokstages) for the scripts that
// start kwok clusters themselves (hack/e2e-cluster.sh, hack/executor-bench.sh):
//
//	go run ./e2e/internal/kwokstages/cmd/kwok-stages [-timing fast|realistic] [-ztunnel-ready 3s]
//
// -timing realistic makes every pod honour its termination grace period and, unless -ztunnel-ready
// says otherwise, delays ztunnel readiness by 3s; -ztunnel-ready alone delays only the ztunnel pods.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ambientkit/ambientkit/e2e/internal/kwokstages"
)

func main() {
	timing := flag.String("timing", "fast", "fast (per-pod opt-ins only) or realistic (every pod honours its grace period)")
	zt := flag.String("ztunnel-ready", "", "delay before an app=ztunnel pod turns Ready (Go duration; default 0, or 3s with -timing realistic)")
	flag.Parse()
	o, err := kwokstages.ParseTiming(*timing, *zt)
	if err == nil {
		var out string
		if out, err = kwokstages.Render(o); err == nil {
			fmt.Print(out)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "kwok-stages:", err)
	os.Exit(2)
}
