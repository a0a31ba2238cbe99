package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	// Linked for its finding codes, which it registers in plan's catalog: every example lists and
	// knows every code of the module, whichever planners it runs.
	_ "github.com/ambientkit/ambientkit/migrate"
)

// Exit codes of the examples, like istioctl's precheck and analyze: zero when nothing stands in the
// way, a distinct code for each reason the plan cannot run, another for errors. Every example exits
// with them, through Exit.
const (
	// ExitOK: the plan is runnable (planned only), applied, dry-run or rolled back; --help and
	// --list-codes.
	ExitOK = 0
	// ExitError: anything else failed: observation, a step, the cluster.
	ExitError = 1
	// ExitUsage: a flag is unknown, malformed, out of range (a size of 0 or less, a negative
	// duration), names an unknown code or an invalid name, or contradicts another.
	ExitUsage = 2
	// ExitBlocked: blocking findings or blocked steps stop the plan: fix the cause and plan again.
	ExitBlocked = 3
	// ExitNeedsWaiver: only waivable findings stop the plan: review them and plan again with --waive.
	ExitNeedsWaiver = 4
)

// Errors that choose the exit code (ExitCode).
var (
	// ErrUsage wraps flag errors (ExitUsage).
	ErrUsage = errors.New("usage")
	// ErrBlocked means blocking findings or blocked steps stop the plan (ExitBlocked): the plan's own
	// sentinel, which ambient.ErrBlocked and migrate.ErrBlocked are too.
	ErrBlocked = plan.ErrBlocked
	// ErrNeedsWaiver means waivable findings stop the plan until they are waived (ExitNeedsWaiver).
	ErrNeedsWaiver = errors.New("the plan is not runnable until waived")
	// errDone ends a program that printed what it was asked for (--list-codes) with ExitOK.
	errDone = errors.New("done")
)

// ExitCode returns the exit code for the error a program ends with.
func ExitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp), errors.Is(err, errDone):
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrNeedsWaiver):
		return ExitNeedsWaiver
	case errors.Is(err, ErrBlocked), errors.Is(err, execute.ErrStepBlocked):
		return ExitBlocked
	}
	return ExitError
}

// Exit prints the error the program ends with (nothing for nil, --help and --list-codes) and
// returns its exit code.
func Exit(name string, err error, stderr io.Writer) int {
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errDone) {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	}
	return ExitCode(err)
}

// UsageError returns an error wrapping ErrUsage: a flag the program refuses (ExitUsage).
func UsageError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, a...)...)
}

func usage(format string, a ...any) error { return UsageError(format, a...) }

// Spec describes one flag for --help: Arg names its value ("FILE"), Example is a command-line
// fragment showing it in use.
type Spec struct {
	Name, Arg, Usage, Example string
}

// Command is an example's command line: its flags, with an example line each in --help, and the
// sections --help prints after them. Every command has --list-codes.
type Command struct {
	// Name is the program's name; Invocation how it was started ("go run ./examples/upgrade" under
	// go run), for the commands the program suggests.
	Name, Invocation string
	// Synopsis is printed under the usage line.
	Synopsis string
	// Sections are printed after the flags (offline dump commands, exit codes).
	Sections []string
	// Out receives --help and --list-codes.
	Out io.Writer
	// OfflineDryRun: the command dry-runs a plan of the demo mesh or of a dump against an
	// in-memory cluster, so --dry-run applies with --demo and --from-dir (inapplicables).
	OfflineDryRun bool

	fs     *flag.FlagSet
	specs  []Spec
	set    map[string]bool
	checks []func() error
	codes  *bool
}

// NewCommand returns a command whose --help and --list-codes go to out.
func NewCommand(name, synopsis string, out io.Writer) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	inv := os.Args[0]
	if strings.Contains(inv, "go-build") { // go run: the binary lives in a temporary folder
		inv = "go run ./examples/" + name
	}
	c := &Command{Name: name, Invocation: inv, Synopsis: synopsis, Out: out, fs: fs}
	c.codes = c.Bool(Spec{Name: "list-codes", Usage: "print every finding code with what it means, then exit", Example: "--list-codes"})
	return c
}

func (c *Command) add(s Spec) { c.specs = append(c.specs, s) }

// check adds a check Parse runs once the flags are parsed, for the flag values that are wrong
// whatever the mesh.
func (c *Command) check(f func() error) { c.checks = append(c.checks, f) }

// String defines a string flag.
func (c *Command) String(s Spec, def string) *string {
	c.add(s)
	return c.fs.String(s.Name, def, s.Usage)
}

// Int defines an int flag.
func (c *Command) Int(s Spec, def int) *int { c.add(s); return c.fs.Int(s.Name, def, s.Usage) }

// Bool defines a bool flag.
func (c *Command) Bool(s Spec) *bool { c.add(s); return c.fs.Bool(s.Name, false, s.Usage) }

// Duration defines a duration flag.
func (c *Command) Duration(s Spec, def time.Duration) *time.Duration {
	c.add(s)
	return c.fs.Duration(s.Name, def, s.Usage)
}

// Parse parses the arguments and runs the flags' checks. --help prints the help and returns
// flag.ErrHelp; --list-codes prints the codes and returns an error that exits 0; a bad flag
// returns an error wrapping ErrUsage.
func (c *Command) Parse(args []string) error {
	err := c.fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.Usage()
		return err
	case err != nil:
		return usage("%v (see --help)", err)
	case c.fs.NArg() > 0:
		return usage("unexpected argument %q (see --help)", c.fs.Arg(0))
	}
	c.set = map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	if *c.codes {
		ListCodes(c.Out)
		return errDone
	}
	var errs []error
	for _, check := range c.checks {
		errs = append(errs, check())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.checkApplicable()
}

// ListCodes prints every finding code, whether a plan can be told to accept it (--waive) and what
// it means.
func ListCodes(w io.Writer) {
	fmt.Fprintln(w, "Finding codes, each with the severities its findings are raised with. --waive CODE,... accepts the waivable")
	fmt.Fprintln(w, "findings of a code. It is refused for a code never raised waivable, and for a code of which the plan has a")
	fmt.Fprintln(w, "blocking finding (fix that one). \"blocking or waivable\": the finding's message says which case it is.")
	for _, c := range plan.AllCodes() {
		fmt.Fprintln(w, CodeLine(c))
	}
}

// CodeLine is a code's line in --list-codes: the code, the severities it is raised with, its help.
func CodeLine(c plan.Code) string {
	return fmt.Sprintf("  %-44s %-20s %s", c, plan.CodeSeverityLabel(c), plan.CodeHelp(c))
}

// Waivers parses --waive: codes separated by commas or spaces, each a known finding code as
// --list-codes prints it. An unknown code is a usage error naming the nearest known one.
func Waivers(s string) ([]plan.Code, error) {
	var out []plan.Code
	var errs []error
	for _, w := range List(s) {
		c := plan.Code(w)
		if plan.KnownCode(c) && !plan.CodeWaivable(c) {
			errs = append(errs, usage("--waive %s: findings of %s are %s, never waivable, so a waiver accepts nothing (--list-codes marks the waivable codes)", w, c, plan.CodeSeverityLabel(c)))
			continue
		}
		if plan.KnownCode(c) {
			out = append(out, c)
			continue
		}
		msg := fmt.Sprintf("--waive %s: no such finding code", w)
		if near := plan.NearestCode(w); near != "" {
			msg += fmt.Sprintf("; did you mean %s?", near)
		}
		errs = append(errs, usage("%s (--list-codes prints them all)", msg))
	}
	return out, errors.Join(errs...)
}

// CheckName refuses a flag value that is not a Kubernetes object name: a DNS-1123 label
// (namespaces, revisions, tags) or, with subdomain, a DNS-1123 subdomain (nodes, NodePools).
func CheckName(flagName, value string, subdomain bool) error {
	if value == "" {
		return nil
	}
	is := validation.IsDNS1123Label
	what := "a DNS-1123 label (lower-case letters, digits and '-', at most 63)"
	if subdomain {
		is, what = validation.IsDNS1123Subdomain, "a DNS-1123 subdomain (lower-case letters, digits, '-' and '.')"
	}
	if msgs := is(value); len(msgs) > 0 {
		return usage("--%s %q is not a valid name: want %s", flagName, value, what)
	}
	return nil
}

// AtMostOne refuses more than one of the flags.
func (c *Command) AtMostOne(names ...string) error {
	var given []string
	for _, n := range names {
		if c.set[n] {
			given = append(given, "--"+n)
		}
	}
	if len(given) > 1 {
		return usage("%s exclude each other", strings.Join(given, " and "))
	}
	return nil
}

// IsSet reports whether the flag was given on the command line.
func (c *Command) IsSet(name string) bool { return c.set[name] }

// Has reports whether the command has the flag.
func (c *Command) Has(name string) bool { return c.fs.Lookup(name) != nil }

// Usage prints --help: the flags, each with its example, then the sections.
func (c *Command) Usage() {
	fmt.Fprintf(c.Out, "Usage: %s [flags]\n\n%s\n\nFlags:\n", c.Name, strings.TrimSpace(c.Synopsis))
	for _, s := range c.specs {
		head := "  --" + s.Name
		if len(s.Name) == 1 {
			head = "  -" + s.Name
		}
		if s.Arg != "" {
			head += " " + s.Arg
		}
		fmt.Fprintf(c.Out, "%s\n%s", head, wrap(s.Usage, "      ", 100))
		if def := c.fs.Lookup(s.Name).DefValue; def != "" && def != "false" && def != "0" && def != "0s" {
			fmt.Fprintf(c.Out, "      (default %s)\n", def)
		}
		if s.Example != "" {
			fmt.Fprintf(c.Out, "      example: %s %s\n", c.Name, s.Example)
		}
	}
	for _, sec := range c.Sections {
		fmt.Fprintf(c.Out, "\n%s\n", strings.TrimRight(sec, "\n"))
	}
}

// wrap breaks text into lines of at most width characters, each indented.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}

// Line returns the command line to run the program again: its invocation and the flags that were set
// (with their values), except those in drop, followed by extra.
func (c *Command) Line(drop []string, extra ...string) string {
	words := []string{c.Invocation}
	var names []string
	for n := range c.set {
		if !contains(drop, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		f, dash := c.fs.Lookup(n), "--"
		if len(n) == 1 {
			dash = "-"
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			words = append(words, dash+n)
			continue
		}
		words = append(words, dash+n, shellQuote(f.Value.String()))
	}
	for _, e := range extra {
		words = append(words, shellQuote(e))
	}
	return strings.Join(words, " ")
}

// Only returns every flag name except those in keep, for Line's drop.
func (c *Command) Only(keep ...string) []string {
	var out []string
	for _, s := range c.specs {
		if !contains(keep, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// ExitCodesSection documents the exit codes in --help; success says what 0 means.
func ExitCodesSection(success string) string {
	return "Exit codes:\n  0  " + success + "\n  1  an error: observation, a step, the cluster" +
		"\n  2  bad flags: unknown, malformed, out of range (sizes below 1, negative durations), an unknown code or an invalid name" +
		"\n  3  blocked: blocking findings or blocked steps stop the plan; fix the cause, then plan again" +
		"\n  4  not runnable until waived: only waivable findings stop it; review them, then plan again with --waive CODE,..."
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// shellQuote quotes a word for a POSIX shell when it holds anything but safe characters.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
