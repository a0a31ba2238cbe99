package migrate_test

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/migrate"
)

// TestRoutesToServiceEntryHostsAreResolvedAndJudged: a DestinationRule or VirtualService of the
// namespace naming a ServiceEntry's host is resolved to the entry (no ROUTE_HOST_NOT_RESOLVED);
// when the entry has no waypoint, its TLS origination or routing rules stop after the move
// (ROUTE_NEEDS_EGRESS_WAYPOINT); an entry bound to an egress waypoint keeps them; a host that
// nothing takes stays unresolved.
func TestRoutesToServiceEntryHostsAreResolvedAndJudged(t *testing.T) {
	objects := `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: stripe, namespace: checkout}
spec: {hosts: [api.stripe.com], ports: [{number: 443, name: https, protocol: TLS}], resolution: DNS}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partners, namespace: istio-system, labels: {istio.io/use-waypoint: egress}}
spec: {hosts: ["*.partner.example"], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: stripe-tls, namespace: checkout}
spec: {host: api.stripe.com, trafficPolicy: {tls: {mode: SIMPLE}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: stripe-retries, namespace: checkout}
spec: {hosts: [api.stripe.com], http: [{retries: {attempts: 3}, route: [{destination: {host: api.stripe.com}}]}]}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: partner-lb, namespace: checkout}
spec: {host: orders.partner.example, trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: nowhere, namespace: checkout}
spec: {host: db.internal.example, trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}}
`
	s := checkoutWith(t, objects)
	r, err := migrate.Readiness(s, "checkout", migrate.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		if f.Code == migrate.CodeRouteNeedsEgressWaypoint || f.Code == migrate.CodeRouteHostNotResolved {
			got = append(got, string(f.Code)+" "+f.Object.String()+" tls="+f.Details["tlsOrigination"])
		}
	}
	sort.Strings(got)
	want := []string{
		"ROUTE_HOST_NOT_RESOLVED DestinationRule checkout/nowhere tls=",
		"ROUTE_NEEDS_EGRESS_WAYPOINT DestinationRule checkout/stripe-tls tls=true",
		"ROUTE_NEEDS_EGRESS_WAYPOINT VirtualService checkout/stripe-retries tls=false",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("findings on routes to external hosts (-want +got):\n%s", d)
	}
}
