package runbook

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words"
)

// kindText is what the runbook says of one action kind: its part of the row of the component it
// changes in the "What changes" table (summary; ok is false when it changes none there), and what a
// failed step leaves behind and what to do about it, for the "if it fails" line (failure). The
// commands that do a step by hand are the kind's own (plan.Commands). A test fails when a kind of
// plan.Kinds has no entry or an entry misses a part.
type kindText struct {
	summary func(s *plan.Step) (row summaryRow, ok bool)
	failure func(s *plan.Step) string
}

// noSummary is the summary of kinds that change no component of the "What changes" table.
func noSummary(*plan.Step) (summaryRow, bool) { return summaryRow{}, false }

// kindTexts is the table of the kinds' texts.
var kindTexts = map[plan.Kind]kindText{
	plan.KindAnnotate: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "some of the objects may carry the change and some not: run the step again (it overwrites)"
		},
	},
	plan.KindApplyObject: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "the object is as before or already changed (server-side apply changes it at once): run the step again, it applies the same fields"
		},
	},
	plan.KindApproval: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "nothing after it runs until it is approved; to stop the run here, do not approve"
		},
	},
	plan.KindBackup: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "nothing was deleted: the steps that delete wait for this backup; fix what stopped it (space, permissions, an object that is gone) and run it again"
		},
	},
	plan.KindCordon: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "the node stays schedulable and nothing else changed: run the step again"
		},
	},
	plan.KindDeleteObject: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			if s.DeleteObject.BackupStep != "" {
				return "the object may still exist: run the step again; the backup written by " + s.DeleteObject.BackupStep + " holds it"
			}
			return "the object may still exist: run the step again"
		},
	},
	plan.KindDeletePod: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "some pods may be deleted and some not; their controller (the DaemonSet) recreates the deleted ones: run the step again"
		},
	},
	plan.KindDrain: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return fmt.Sprintf("%s stays cordoned, with the pods not yet evicted still on it (the eviction names the PodDisruptionBudget that refused one): "+
				"fix that (scale the workload up, relax the budget) and drain again, or give the node back with `kubectl uncordon %s`", s.Drain.Node, s.Drain.Node)
		},
	},
	plan.KindHealthGate: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "the mesh is unhealthy after the steps before it: undo the last change (its undo), or fix the cause and ask again before going on"
		},
	},
	plan.KindHelmInstall: {
		summary: func(s *plan.Step) (summaryRow, bool) {
			h := s.HelmInstall
			how := "install"
			if m := movedSummary(h); m != "" {
				how += " (" + m + ")"
			}
			return helmRow(h.Namespace, h.Release, h.Chart.Name, "–", h.Chart.Version, how), true
		},
		failure: func(s *plan.Step) string {
			h := s.HelmInstall
			return fmt.Sprintf("Helm may leave release %s failed (`helm status %s -n %s`): undo it, fix the cause and run the step again", h.Release, h.Release, h.Namespace)
		},
	},
	plan.KindHelmRollback: {
		summary: func(s *plan.Step) (summaryRow, bool) {
			r := s.HelmRollback
			return helmRow(r.Namespace, r.Release, "", "?", fmt.Sprintf("Helm revision %d", r.Revision), "roll back"), true
		},
		failure: func(s *plan.Step) string {
			r := s.HelmRollback
			return fmt.Sprintf("release %s stays at the revision it was at (`helm history %s -n %s`): fix the cause and run it again", r.Release, r.Release, r.Namespace)
		},
	},
	plan.KindHelmUninstall: {
		summary: func(s *plan.Step) (summaryRow, bool) {
			h := s.HelmUninstall
			how := "uninstall"
			if h.BackupStep != "" {
				how = "back up, uninstall"
			}
			return helmRow(h.Namespace, h.Release, "", words.OrUnknown(h.FromVersion), "removed", how), true
		},
		failure: func(s *plan.Step) string {
			u := s.HelmUninstall
			return fmt.Sprintf("release %s may be partly removed (`helm status %s -n %s`): run the step again", u.Release, u.Release, u.Namespace)
		},
	},
	plan.KindHelmUpgrade: {
		summary: func(s *plan.Step) (summaryRow, bool) {
			h := s.HelmUpgrade
			how := "upgrade"
			if h.FromVersion == h.Chart.Version {
				how = "values"
			}
			if m := movedSummary(h); m != "" {
				how += " (" + m + ")"
			}
			return helmRow(h.Namespace, h.Release, h.Chart.Name, words.OrUnknown(h.FromVersion), h.Chart.Version, how), true
		},
		failure: func(s *plan.Step) string {
			h := s.HelmUpgrade
			return fmt.Sprintf("Helm records a failed revision of %s and its objects may be partly changed (`helm history %s -n %s`): fix the cause and run the step again, or undo it", h.Release, h.Release, h.Namespace)
		},
	},
	plan.KindMoveTag: {
		summary: func(s *plan.Step) (summaryRow, bool) {
			m := s.MoveTag
			return summaryRow{key: "tag " + m.Tag, name: "tag " + m.Tag, current: words.OrUnknown(m.From), target: m.To, how: "move"}, true
		},
		failure: func(s *plan.Step) string {
			return "the tag points at either revision (the check says which) and nothing was restarted: run the step again, or undo it"
		},
	},
	plan.KindPatchLabels: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "some of the objects may carry the change and some not: run the step again (it overwrites)"
		},
	},
	plan.KindReinject: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "the labels may be set and some workloads restarted; a rollout that does not finish keeps its old pods serving (`kubectl rollout status` names it): fix it and run the step again"
		},
	},
	plan.KindRestart: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "some workloads may be restarted and some not; a rollout that does not finish keeps its old pods serving (`kubectl rollout status` names it): fix it and run the step again, or `kubectl rollout undo` it"
		},
	},
	plan.KindRestore: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "some objects may be restored and some not: run the step again (it applies them again)"
		},
	},
	plan.KindUncordon: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "the node stays cordoned and nothing else changed: run the step again"
		},
	},
	plan.KindVerify: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "this step changes nothing: fix what the check names and check again before going on"
		},
	},
	plan.KindWaitFor: {
		summary: noSummary,
		failure: func(s *plan.Step) string {
			return "this step changes nothing: what it waits for did not come in time; find out why with its command, fix it and wait again (the steps before it stay done)"
		},
	},
}

// movedSummary is how a summary row says what was moved: "tag 1.30.3 → 1.31.4".
func movedSummary(h *plan.HelmRelease) string {
	var parts []string
	for _, m := range h.Moved {
		parts = append(parts, fmt.Sprintf("%s %s → %s", m.Key, m.From, m.To))
	}
	return strings.Join(parts, ", ")
}
