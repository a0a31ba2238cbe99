package execute

import (
	"context"
	"time"
)

// Clock is the executor's only source of time: timestamps in the journal and the lease, timeouts,
// backoff and poll intervals all go through it, so tests run without sleeping.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns the wall clock's time.
func (RealClock) Now() time.Time { return time.Now() }

// After returns a channel that receives the time after d (time.After).
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

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
