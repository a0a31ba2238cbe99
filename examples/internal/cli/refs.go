package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Refs reads a flag's "Kind/name,..." as objects of the namespace ns; "all" (where allowAll) and
// "" are none. Anything else is a usage error naming the flag.
func Refs(flag, list, ns string, allowAll bool) ([]mesh.ObjectRef, error) {
	var out []mesh.ObjectRef
	var errs []error
	for _, s := range List(list) {
		kind, name, ok := strings.Cut(s, "/")
		switch {
		case s == "all" && allowAll:
			continue
		case !ok || kind == "" || name == "":
			errs = append(errs, usage("--%s %q: want KIND/NAME (DestinationRule/web)", flag, s))
			continue
		}
		errs = append(errs, CheckName(flag, name, true))
		out = append(out, mesh.ObjectRef{Kind: kind, Namespace: ns, Name: name})
	}
	return out, errors.Join(errs...)
}

// CheckChosen refuses an object of a flag (chosen) that is none of those on offer: --apply takes
// the objects the readiness report's proposals are for (or all), and one that names none of them
// would apply nothing in silence. what says what is on offer ("proposal").
func CheckChosen(flag, what string, chosen, offered []mesh.ObjectRef) error {
	var have []string
	for _, r := range offered {
		have = append(have, r.Kind+"/"+r.Name)
	}
	for _, r := range chosen {
		if slices.Contains(have, r.Kind+"/"+r.Name) {
			continue
		}
		if len(have) == 0 {
			return usage("--%s %s/%s: the readiness report has no %s, so there is nothing to %s", flag, r.Kind, r.Name, what, flag)
		}
		return usage("--%s %s/%s: no %s is for it; the report's are for %s (or --%s all)", flag, r.Kind, r.Name, what, strings.Join(have, ", "), flag)
	}
	return nil
}
