// Package estimate is the time model of a plan: how long the executor takes for it, at least,
// expected and at most (Time), and the physical limit of a wave of drains (Limit), which the
// executor bench holds measured runs to.
//
// What each action kind waits for (a drain's timeout, a health gate's settle, an approval) and what
// it takes beyond that (a Helm change's rollout, a restart's batches, new nodes joining) is its entry
// in kinds.go; Waits adds them up for the runbook's Phases table. The durations a plan cannot know
// are Options, with defaults.
package estimate
