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
	// Reinstall is the chart, at FromVersion, that an undo by hand installs the release from again
	// with the values its backup step saved; nil when the plan's chart source cannot name that
	// version (a local folder holds the target's charts only). The executor does not reinstall.
	Reinstall *ChartRef `json:"reinstall,omitempty"`
}

// undoByHand is the command that installs the release again from its backup by hand, "" when the
// step has no backup or no chart to install from.
func (u *HelmUninstall) undoByHand() string {
	if u.BackupStep == "" || u.Reinstall == nil {
		return ""
	}
	return fmt.Sprintf("helm install %s %s -n %s -f %s", u.Release, helmChartArgs(*u.Reinstall), u.Namespace, helmValuesFile(u.Release))
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
		if r := s.HelmUninstall.Reinstall; r != nil {
			if err := r.Validate(); err != nil {
				bad("%s: helmUninstall.reinstall: %v", where, err)
			}
		}
	},
	commands: func(s *Step) []string {
		return []string{fmt.Sprintf("helm uninstall %s -n %s", s.HelmUninstall.Release, s.HelmUninstall.Namespace)}
	},
	failure: func(s *Step) string {
		u := s.HelmUninstall
		return fmt.Sprintf("release %s may be partly removed (`helm status %s -n %s`): run the step again", u.Release, u.Release, u.Namespace)
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
}
