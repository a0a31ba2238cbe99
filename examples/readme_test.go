package examples_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
)

// readmeRun is what the README promises of one command it shows: the exit status the program ends
// with (under go run, which exits 1 and prints "exit status N" last for a status N other than 0),
// and what its output holds.
type readmeRun struct {
	// Status is the program's exit status.
	Status int
	// Stdout and Stderr are strings the output holds.
	Stdout, Stderr []string
	// Dump stands in for a folder the README has the reader save with kubectl (its --from-dir):
	// a dump of the corpus, so that the command runs as written but for that one word.
	Dump [2]string
}

// readmeRuns are the commands of the README that run an example, each with what the README says of
// it. A command the README shows and this table lacks fails the test, as does a row the README no
// longer shows: the README and this table change together.
var readmeRuns = map[string]readmeRun{
	"go run ./examples/plan-upgrade --demo": {Status: 4,
		Stdout: []string{"Source: the embedded demo mesh", "Status: not runnable", "1.30.3", "1.31.4", "PDB_BLOCKS_DRAIN"},
		Stderr: []string{"--waive PDB_BLOCKS_DRAIN"}},
	"go run ./examples/plan-upgrade --demo --waive PDB_BLOCKS_DRAIN": {Status: 0,
		Stdout: []string{"Source: the embedded demo mesh", "Status: runnable once reviewed"}},
	"go run ./examples/upgrade --demo --dry-run": {Status: 0,
		Stdout: []string{"trying the plan on the in-memory demo cluster", "StepFinished ztunnel/node/", "done on the in-memory demo cluster: 108 steps"}},
	"go run ./examples/move-tag --demo --assume-installed 1.31.4": {Status: 0,
		Stdout: []string{"Source: the embedded demo mesh", "# Tags, lowest risk first", "# move tag canary"}},
	"go doc -all ./ambient": {Status: 0, Stdout: []string{"func PlanUpgrade(", "func ComputeCompatibility("}},
	"go run ./examples/plan-upgrade --from-dir dump": {Status: 3,
		Dump:   [2]string{"dump", "testdata/broken/z06-two-ztunnels-one-node/dump"},
		Stdout: []string{"Source: the dump in folder ", "ZTUNNEL_TWO_ON_ONE_NODE"}},
}

// clusterFlags name a live cluster: a command with one of them is not run against one here; it is
// run with no kubeconfig to be found, and must fail on that alone (exit status 2 naming the
// kubeconfig), which proves every other flag it shows exists and parses.
var clusterFlags = []string{"--kubeconfig", "--context"}

// readmeCommands returns every command the README shows that runs an example (go run
// ./examples/...) or prints the API (go doc): the lines of its sh blocks, without their trailing
// comments, and its inline code.
func readmeCommands(t *testing.T) (cmds []string, readme string) {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme = string(b)
	add := func(c string) {
		c = strings.Join(strings.Fields(c), " ")
		if (strings.HasPrefix(c, "go run ./examples/") || strings.HasPrefix(c, "go doc ")) && !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	inBlock, fence := false, ""
	for _, line := range strings.Split(readme, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !inBlock {
				inBlock, fence = true, strings.TrimPrefix(trimmed, "```")
			} else {
				inBlock = false
			}
			continue
		}
		if inBlock {
			if fence == "sh" {
				if i := strings.Index(line, " #"); i >= 0 {
					line = line[:i]
				}
				add(line)
			}
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
	}
	return cmds, readme
}

// TestEveryCommandTheREADMEShowsRunsAsWritten runs each command of the README that runs an example
// verbatim with bash from the repository root, as a new user would on a fresh machine: an empty
// HOME, no KUBECONFIG, no network for the go command. A command that names no cluster ends with the
// status and output the README promises (readmeRuns); one that names a cluster fails only for want
// of its kubeconfig. The README's first command is the one the quick start says plans the demo
// mesh, and the status the README names for it is the one it ends with.
func TestEveryCommandTheREADMEShowsRunsAsWritten(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Fatal("the README's commands are for a POSIX shell")
	}
	cmds, readme := readmeCommands(t)
	if len(cmds) == 0 {
		t.Fatal("no command of the README runs an example: is the parser or the README wrong?")
	}
	if first := "go run ./examples/plan-upgrade --demo"; cmds[0] != first {
		t.Errorf("the README's first command is %q, want %q (it plans the demo mesh on a fresh machine)", cmds[0], first)
	}
	quick := readme[strings.Index(readme, "## Quick start"):]
	quick = quick[:strings.Index(quick[3:], "\n## ")+3]
	if want := "exit status 4"; !strings.Contains(quick, want) {
		t.Errorf("the quick start does not name the first command's status as go run prints it (%q)", want)
	}
	for c := range readmeRuns {
		if !slices.Contains(cmds, c) {
			t.Errorf("readmeRuns has %q, which the README no longer shows: remove the row", c)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	env := freshMachine(t)
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			t.Parallel() // each runs in a shell of its own; none writes into the checkout
			named := slices.ContainsFunc(clusterFlags, func(f string) bool { return slices.Contains(strings.Fields(c), f) })
			want, ok := readmeRuns[c]
			switch {
			case named && ok:
				t.Fatalf("%q names a cluster, and readmeRuns has a row for it: it cannot run here", c)
			case !named && !ok:
				t.Fatalf("the README shows %q, which names no cluster and has no row in readmeRuns: add what the README promises of it", c)
			}
			line := c
			if want.Dump[0] != "" {
				line = strings.Replace(c, "--from-dir "+want.Dump[0], "--from-dir "+want.Dump[1], 1)
			}
			status, stdout, stderr := goRun(t, root, env, line)
			if named {
				all := stdout + stderr
				if status != 2 || !strings.Contains(all, "--kubeconfig") || strings.Contains(all, "not defined") || strings.Contains(all, "unexpected argument") {
					t.Errorf("%s: with no kubeconfig it should fail on that alone (status 2 naming --kubeconfig); status %d:\n%s", c, status, all)
				}
				return
			}
			if status != want.Status {
				t.Errorf("%s: exit status %d, the README promises %d\nstderr:\n%s", c, status, want.Status, stderr)
			}
			for _, w := range want.Stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("%s: the output lacks %q:\n%.2000s", c, w, stdout)
				}
			}
			for _, w := range want.Stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s: stderr lacks %q:\n%s", c, w, stderr)
				}
			}
		})
	}
}

// freshMachine is the environment of a new user's shell: PATH, an empty HOME, no KUBECONFIG, and the
// go command's caches (kept, so that the test costs a build once) with no network to fetch from.
func freshMachine(t *testing.T) []string {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly"}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return env
}

// goRun runs the command line with bash in dir and returns the program's exit status as go run
// reports it: go run exits 1 and prints "exit status N" last for a program's status N.
func goRun(t *testing.T, dir string, env []string, line string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case !errors.As(err, &exit):
		t.Fatalf("%s: %v", line, err)
	}
	m := regexp.MustCompile(`exit status (\d+)\n$`).FindStringSubmatch(errOut.String())
	if exit.ExitCode() != 1 || m == nil {
		t.Fatalf("%s: exit code %d without go run's \"exit status N\" line (did it build?):\n%s", line, exit.ExitCode(), errOut.String())
	}
	n := 0
	for _, d := range m[1] {
		n = n*10 + int(d-'0')
	}
	return n, out.String(), errOut.String()
}

// TestTheREADMEsGoBlockIsTheBodyOfReadmeAPI holds the README's Go block equal to the body of
// readmeAPI (readme_api_test.go), between its README markers and one tab less indented: the code
// the README shows compiles, and changes with the API.
func TestTheREADMEsGoBlockIsTheBodyOfReadmeAPI(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n```go\n(.*?)```\n").FindAllStringSubmatch(string(b), -1)
	if len(blocks) != 1 {
		t.Fatalf("the README has %d Go blocks, want the one readmeAPI holds", len(blocks))
	}
	src, err := os.ReadFile("readme_api_test.go")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile("(?s)\t// README begin\n(.*)\t// README end\n").FindStringSubmatch(string(src))
	if body == nil {
		t.Fatal("readme_api_test.go has no README markers")
	}
	var want []string
	for _, l := range strings.SplitAfter(body[1], "\n") {
		want = append(want, strings.TrimPrefix(l, "\t"))
	}
	if diff := cmp.Diff(strings.Join(want, ""), blocks[0][1]); diff != "" {
		t.Errorf("the README's Go block is not readmeAPI's body (-readmeAPI +README); copy the body, one tab less indented:\n%s", diff)
	}
}

// TestTheREADMEsDumpCommandsAreTheOnesHelpPrints holds the dump commands the README shows equal to
// the first ones --help prints (observe.DumpCommands), in order: a reader who copies them saves what
// the observer reads.
func TestTheREADMEsDumpCommandsAreTheOnesHelpPrints(t *testing.T) {
	_, readme := readmeCommands(t)
	i := strings.Index(readme, "```sh\nmkdir dump && cd dump\n")
	if i < 0 {
		t.Fatal("the README shows no dump commands (a sh block opening with mkdir dump && cd dump)")
	}
	block := readme[i+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	want := []string{"mkdir dump && cd dump"}
	for _, c := range observe.DumpCommands(observe.DumpOptions{}) {
		want = append(want, c.String())
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if n >= len(want) || line != want[n] {
			t.Errorf("the README's dump command %d is\n  %s\nwant what --help prints there:\n  %s", n+1, line, want[min(n, len(want)-1)])
		}
		n++
	}
	if n < 2 {
		t.Errorf("the README shows %d dump commands, want at least the folder and the first kubectl line", n)
	}
}
