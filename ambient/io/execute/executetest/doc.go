// Package executetest holds fakes for code that drives an execute.Executor: FakeHelm, an in-memory
// HelmClient with a release history, fault injection and a hook that plays the chart's effect on the
// cluster; and FakeClock, a clock that moves forward by exactly the time anyone waits for, so tests
// of timeouts, backoff and settle times run instantly and deterministically.
//
// World also plays the API server's authorizer: it answers SelfSubjectAccessReviews (allowing all,
// but what Deny names), and records every request as the permission RBAC would check (Requests), so
// tests can prove the executor's preflight and its derived permissions.
package executetest
