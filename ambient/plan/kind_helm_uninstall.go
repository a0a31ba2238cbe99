package plan

import "fmt"

// HelmUninstall removes a release.
type HelmUninstall struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Chart is the release's chart (istiod, cni, ztunnel, gateway, base), so that what its objects
	// need is known (RequiredPermissions); empty in plans made before it was recorded.
	Chart string `json:"chart,omitempty"`
	// BackupStep is the ID of the Backup step that saved what is removed. A rollback that removes what
	// its step installed names none: the executor backs the release up itself before removing it.
	BackupStep string `json:"backupStep"`
	// FromVersion is the chart version of the release removed, when known, for the reviewer; the
	// executor does not read it.
	FromVersion string `json:"fromVersion,omitempty"`
}

// KindHelmUninstall is the kind of steps whose action is Step.HelmUninstall.
const KindHelmUninstall Kind = "HelmUninstall"

var helmUninstallKind = kindSpec{
	kind:    KindHelmUninstall,
	payload: payloadOf(func(s *Step) *HelmUninstall { return s.HelmUninstall }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		if s.HelmUninstall.Release == "" || s.HelmUninstall.Namespace == "" {
			bad("%s: helm release and namespace must be set", where)
		}
	},
	commands: func(s *Step) []string {
		return []string{fmt.Sprintf("helm uninstall %s -n %s", s.HelmUninstall.Release, s.HelmUninstall.Namespace)}
	},
	node: noNode,
	summary: func(s *Step) (summaryRow, bool) {
		h := s.HelmUninstall
		how := "uninstall"
		if h.BackupStep != "" {
			how = "back up, uninstall"
		}
		return helmRow(h.Namespace, h.Release, "", orUnknown(h.FromVersion), "removed", how), true
	},
	timing: helmTiming,
	// action_helm_uninstall.go: Helm deletes what the release's chart holds, as another step of the
	// plan names it.
	permissions: func(s *Step, dry bool, n need) {
		u := s.HelmUninstall
		values, known := n.valuesOf(u.Namespace, u.Release)
		n.helm(helmUninstallOp, u.Namespace, u.Release, n.chartOf(u.Namespace, u.Release), values, !known, dry, false)
	},
	// The chart, when the plan recorded it (empty in older plans).
	release: func(s *Step) (string, string) {
		return s.HelmUninstall.Namespace + "/" + s.HelmUninstall.Release, s.HelmUninstall.Chart
	},
}
