package execute

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Clock is the executor's only source of time: timestamps in the journal and the lease, timeouts,
// backoff and poll intervals all go through it, so tests run without sleeping. Every
// k8s.io/utils/clock.Clock is one (clock.RealClock, the default; clock/testing.FakeClock, which a
// test steps by hand); executetest.FakeClock instead moves forward by exactly what is waited for, so
// a single-goroutine test of retries and timeouts needs no second goroutine to step it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

var _ Clock = clock.RealClock{}

// sleep waits d on the clock, or until ctx is done.
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err // a done context wins over a timer that fired at the same time
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.After(d):
		return nil
	}
}
