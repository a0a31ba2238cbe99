package executetest

import (
	"sync"
	"time"
)

// FakeClock is an execute.Clock that never sleeps: After(d) moves the clock forward by d and fires at
// once. Time only passes when someone waits (or the test calls Advance), so timeouts and backoff are
// exact and instant.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
	// Slept is the total time waited through After.
	Slept time.Duration
	// Waits counts After calls.
	Waits int
}

// NewFakeClock returns a clock at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After advances the clock by d and returns a channel that already holds the new time.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
		c.Slept += d
	}
	c.Waits++
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
