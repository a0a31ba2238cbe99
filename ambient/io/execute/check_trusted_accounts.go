package execute

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func checkTrustedAccounts(cp *checkPass, ctx context.Context, _ plan.Check, a plan.TrustedAccountsArgs) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	var want []string
	if len(a.Accounts) > 0 {
		want = a.Accounts
	} else {
		for _, z := range s.Ztunnels {
			want = append(want, z.Account())
		}
	}
	var bad []string
	for _, r := range s.Revisions {
		if a.Revision != "" && r.Name != a.Revision {
			continue
		}
		if r.TrustedAccountsUnknown {
			bad = append(bad, fmt.Sprintf("revision %s reads its trusted accounts from a ConfigMap or Secret the snapshot cannot read", r.Name))
			continue
		}
		for _, acc := range want {
			if !slices.Contains(r.TrustedZtunnelAccounts, acc) {
				bad = append(bad, fmt.Sprintf("revision %s does not trust %s (trusts %s)", r.Name, acc, orNone(r.TrustedZtunnelAccounts)))
			}
		}
		if !a.Only {
			continue
		}
		for _, t := range r.TrustedZtunnelAccounts {
			if !slices.Contains(want, t) {
				bad = append(bad, fmt.Sprintf("revision %s still trusts %s, want only %s", r.Name, t, strings.Join(want, ",")))
			}
		}
	}
	if len(bad) > 0 {
		return false, plan.ListSome(bad, 6), nil
	}
	return true, "", nil
}
