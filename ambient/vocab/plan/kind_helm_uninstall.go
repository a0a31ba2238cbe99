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
	node:        noNode,
	undoByHand:  helmUninstallUndo,
	checkByHand: noCheckByHand,
}

// helmUninstallUndo is the undo by hand of an uninstall whose backup step saved the release: its
// install again, when the plan names a chart to install from.
func helmUninstallUndo(s *Step) string {
	u := s.HelmUninstall
	if u.BackupStep == "" {
		return ""
	}
	if cmd := u.undoByHand(); cmd != "" {
		return fmt.Sprintf("undo, by hand only (the executor does not reinstall): install the release again with the values the backup step `%s` saved (`%s`)", u.BackupStep, cmd)
	}
	return fmt.Sprintf("undo, by hand only (the executor does not reinstall), and no command can be given: the plan names no chart at %s to install from; install the %s chart at that version as release %s with the values the backup step `%s` saved in %s",
		orUnknown(u.FromVersion), orUnknown(u.Chart), u.Release, u.BackupStep, helmValuesFile(u.Release))
}
