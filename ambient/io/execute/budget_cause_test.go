package execute

import (
	"errors"
	"fmt"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tooMany is a 429 of the Eviction API with the given causes, as the API server builds it.
func tooMany(causes ...metav1.StatusCause) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = causes
	return err
}

func TestBudgetCauseReadsTheBudgetTheAPIServerNames(t *testing.T) {
	budget := func(msg string) metav1.StatusCause {
		return metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg}
	}
	for _, tc := range []struct {
		name      string
		err       error
		budget    string
		why       string
		wantFound bool
	}{
		{name: "a refusal for want of healthy pods names the budget and its counts",
			err:    tooMany(budget("The disruption budget ledger needs 2 healthy pods and has 2 currently")),
			budget: "ledger", why: "needs 2 healthy pods and has 2 currently", wantFound: true},
		{name: "a refusal of a budget that failed sync names it too",
			err:    tooMany(budget("The disruption budget web does not allow evicting pods currently because it failed sync: boom")),
			budget: "web", why: "does not allow evicting pods currently because it failed sync: boom", wantFound: true},
		{name: "a wrapped refusal is read through the wrapping",
			err:    fmt.Errorf("evict: %w", tooMany(budget("The disruption budget db does not allow evicting pods currently"))),
			budget: "db", why: "does not allow evicting pods currently", wantFound: true},
		{name: "a 429 without a cause (throttling) names none",
			err: tooMany()},
		{name: "a cause of another type names none",
			err: tooMany(metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "The disruption budget x needs 1"})},
		{name: "a message of another shape names none",
			err: tooMany(budget("budget ledger is busy"))},
		{name: "an error that is no API status names none",
			err: errors.New("connection reset")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, why, ok := budgetCause(tc.err)
			if ok != tc.wantFound || name != tc.budget || why != tc.why {
				t.Errorf("budgetCause = %q, %q, %v; want %q, %q, %v", name, why, ok, tc.budget, tc.why, tc.wantFound)
			}
		})
	}
}
