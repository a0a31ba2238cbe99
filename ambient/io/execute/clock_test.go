package execute

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestAClockFromKubernetesUtilsDrivesTheExecutorsWaits(t *testing.T) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(start)
	done := make(chan error, 1)
	go func() { done <- sleep(context.Background(), fc, 5*time.Second) }()
	for !fc.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	fc.Step(4 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("sleep returned %v before its 5 seconds had passed", err)
	default:
	}
	fc.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("sleep: %v", err)
	}
}

func TestRetryBackoffDoublesUpToItsCap(t *testing.T) {
	e := &engine{opts: Options{RetryBackoff: 4 * time.Second}}
	b := e.backoff()
	var got []time.Duration
	for range 6 {
		got = append(got, b.Step())
	}
	want := []time.Duration{4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits = %v, want %v", got, want)
		}
	}
}
