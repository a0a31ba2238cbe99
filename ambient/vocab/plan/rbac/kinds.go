package rbac

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// kindNeed is what the plan's steps of one action kind need of the cluster, from their payload:
// needs adds the permissions (the comments beside them name the executor's file that does the
// requests), release names the Helm release the step touches, "namespace/name" ("" for none), and
// the release's chart when the step says it, so that a rollback or an uninstall knows what objects
// its release holds. A test fails when a kind of plan.Kinds has no entry.
type kindNeed struct {
	needs   func(s *plan.Step, dry bool, n need)
	release func(s *plan.Step) (release, chart string)
}

// needsNothing is the needs of kinds whose action asks nothing of the cluster (their checks' needs
// are added with every step's checks).
func needsNothing(*plan.Step, bool, need) {}

// noRelease is the release of kinds that touch no Helm release.
func noRelease(*plan.Step) (release, chart string) { return "", "" }

// srcEviction: a drain evicts through the pods/eviction subresource.
const srcEviction = "k8s.io/api@v0.37.2 policy/v1 Eviction (POST pods/<name>/eviction)"

// helmReleaseOf names the release an install or upgrade touches, "namespace/name", and its chart.
func helmReleaseOf(h *plan.HelmRelease) (release, chart string) {
	return h.Namespace + "/" + h.Release, h.Chart.Name
}

// kindNeeds is the table of the kinds' needs.
var kindNeeds = map[plan.Kind]kindNeed{
	plan.KindAnnotate: {
		// action_annotate.go: as PatchLabels, on the annotations.
		needs:   func(s *plan.Step, _ bool, n need) { n.metadata(s.Annotate.APIVersion, s.Annotate.Targets()) },
		release: noRelease,
	},
	plan.KindApplyObject: {
		// action_apply_object.go: a GET to see whether the object already holds the plan's fields, then a
		// server-side apply (patch; create when it does not exist).
		needs:   func(s *plan.Step, dry bool, n need) { n.apply(s.ApplyObject.Object, dry) },
		release: noRelease,
	},
	plan.KindApproval: {
		// The Approve hook answers: nothing of the cluster.
		needs:   needsNothing,
		release: noRelease,
	},
	plan.KindBackup: {
		// action_backup.go: a GET of each object, a Helm read of each release, and for a namespace one LIST
		// of the CRDs, then one LIST per Istio and Gateway API kind the cluster serves. Writing the backup
		// is the executor's backup store's business.
		needs: func(s *plan.Step, _ bool, n need) {
			b := s.Backup
			for _, o := range b.Objects {
				if o.HelmRelease != "" {
					n.add("list", "", "secrets", o.Object.Namespace, "", srcHelmStorage)
					continue
				}
				g, res := Resource(o.APIVersion, o.Object.Kind)
				n.add("get", g, res, o.Object.Namespace, o.Object.Name)
			}
			if b.Namespace != "" {
				n.add("list", "apiextensions.k8s.io", "customresourcedefinitions", "", "")
				for _, g := range meshGroups {
					n.add("list", g, "*", b.Namespace, "", srcMeshGroups)
				}
			}
		},
		release: noRelease,
	},
	plan.KindCordon: {
		// action_cordon.go: GET the node, merge-patch spec.unschedulable.
		needs:   func(s *plan.Step, _ bool, n need) { n.verbs([]string{"get", "patch"}, "", "nodes", "", s.Cordon.Node) },
		release: noRelease,
	},
	plan.KindDeleteObject: {
		// action_delete_object.go: a DELETE; a rollback naming no backup step reads the object first.
		needs: func(s *plan.Step, dry bool, n need) {
			d := s.DeleteObject
			g, res := Resource(d.APIVersion, d.Object.Kind)
			n.add("delete", g, res, d.Object.Namespace, d.Object.Name)
			if !dry && d.BackupStep == "" {
				n.add("get", g, res, d.Object.Namespace, d.Object.Name)
			}
		},
		release: noRelease,
	},
	plan.KindDeletePod: {
		// action_delete_pod.go: one LIST by labels in the namespace; a DELETE per pod with a UID
		// precondition, and a GET when that conflicts (is it a replacement?).
		needs: func(s *plan.Step, dry bool, n need) {
			ns := s.DeletePod.Namespace
			n.add("list", "", "pods", ns, "")
			if !dry {
				n.add("delete", "", "pods", ns, "")
				n.add("get", "", "pods", ns, "")
			}
		},
		release: noRelease,
	},
	plan.KindDrain: {
		// action_drain.go: one LIST of the node's pods in every namespace (field selector spec.nodeName),
		// an eviction per pod, one LIST of the budgets when evictions are refused (and, for the stall
		// guard, of the refusing budget's namespace, with a LIST of its pods), one LIST of the
		// namespaces for ambient-only drains, and a GET of the node once the drain timed out (is it gone?).
		needs: func(s *plan.Step, dry bool, n need) {
			d := s.Drain
			n.add("list", "", "pods", "", "")
			n.add("create", "", "pods/eviction", "", "", srcEviction)
			n.add("list", "policy", "poddisruptionbudgets", "", "")
			if d.AmbientOnly {
				n.add("list", "", "namespaces", "", "")
			}
			if !dry {
				n.add("get", "", "nodes", "", d.Node)
			}
		},
		release: noRelease,
	},
	plan.KindHealthGate: {
		// The caller's probe answers: nothing of the cluster.
		needs:   needsNothing,
		release: noRelease,
	},
	plan.KindHelmInstall: {
		// action_helm_install.go, through the HelmClient: what Helm stores and applies (helm.go).
		needs: func(s *plan.Step, dry bool, n need) {
			h := s.HelmInstall
			n.helm(helmInstallOp, h.Namespace, h.Release, h.Chart.Name, h.Values, h.ReuseValues, dry, true)
		},
		release: func(s *plan.Step) (string, string) { return helmReleaseOf(s.HelmInstall) },
	},
	plan.KindHelmRollback: {
		// action_helm_rollback.go: Helm applies the revision returned to, of the chart another step of the
		// plan names.
		needs: func(s *plan.Step, dry bool, n need) {
			r := s.HelmRollback
			n.helm(helmRollbackOp, r.Namespace, r.Release, n.chartOf(r.Namespace, r.Release), nil, true, dry, true)
			// Helm reads the revision to return to by its record's name.
			n.add("get", "", "secrets", r.Namespace, helmRecordName(r.Release, r.Revision), srcHelmStorage)
		},
		// A rollback does not say its release's chart.
		release: func(s *plan.Step) (string, string) {
			return s.HelmRollback.Namespace + "/" + s.HelmRollback.Release, ""
		},
	},
	plan.KindHelmUninstall: {
		// action_helm_uninstall.go: Helm deletes what the release's chart holds, as another step of the
		// plan names it.
		needs: func(s *plan.Step, dry bool, n need) {
			u := s.HelmUninstall
			values, known := n.valuesOf(u.Namespace, u.Release)
			n.helm(helmUninstallOp, u.Namespace, u.Release, n.chartOf(u.Namespace, u.Release), values, !known, dry, false)
		},
		// The chart, when the plan recorded it (empty in older plans).
		release: func(s *plan.Step) (string, string) {
			return s.HelmUninstall.Namespace + "/" + s.HelmUninstall.Release, s.HelmUninstall.Chart
		},
	},
	plan.KindHelmUpgrade: {
		// action_helm_upgrade.go, through the HelmClient: what Helm stores and applies (helm.go).
		needs: func(s *plan.Step, dry bool, n need) {
			h := s.HelmUpgrade
			n.helm(helmUpgradeOp, h.Namespace, h.Release, h.Chart.Name, h.Values, h.ReuseValues, dry, h.FromVersion == "" || h.FromVersion != h.Chart.Version)
		},
		release: func(s *plan.Step) (string, string) { return helmReleaseOf(s.HelmUpgrade) },
	},
	plan.KindMoveTag: {
		// action_move_tag.go: each rendered object is server-side applied, as ApplyObject does.
		needs: func(s *plan.Step, dry bool, n need) {
			for _, o := range s.MoveTag.Objects {
				n.apply(o, dry)
			}
		},
		release: noRelease,
	},
	plan.KindPatchLabels: {
		// action_patch_labels.go: one object is read and merge-patched; several are read with one LIST
		// of their metadata, then patched one by one.
		needs:   func(s *plan.Step, _ bool, n need) { n.metadata(s.PatchLabels.APIVersion, s.PatchLabels.Targets()) },
		release: noRelease,
	},
	plan.KindReinject: {
		// action_reinject.go: the namespace's labels (GET, merge-patch), then the restart.
		needs: func(s *plan.Step, dry bool, n need) {
			n.verbs([]string{"get", "patch"}, "", "namespaces", "", s.Reinject.Namespace)
			if !dry {
				n.restart(s.Reinject.Workloads)
			}
		},
		release: noRelease,
	},
	plan.KindRestart: {
		// action_restart.go: GET and merge-patch each workload's pod template, then GET it until it rolled
		// out. A dry run only describes the restart.
		needs: func(s *plan.Step, dry bool, n need) {
			if !dry {
				n.restart(s.Restart.Workloads)
			}
		},
		release: noRelease,
	},
	plan.KindRestore: {
		// action_restore.go: the objects are server-side applied again, as ApplyObject does.
		needs: func(s *plan.Step, dry bool, n need) {
			for _, o := range s.Restore.Objects {
				n.apply(map[string]any{"apiVersion": o.APIVersion, "kind": o.Object.Kind,
					"metadata": map[string]any{"namespace": o.Object.Namespace, "name": o.Object.Name}}, dry)
			}
		},
		release: noRelease,
	},
	plan.KindUncordon: {
		// action_uncordon.go: as Cordon.
		needs: func(s *plan.Step, _ bool, n need) {
			n.verbs([]string{"get", "patch"}, "", "nodes", "", s.Uncordon.Node)
		},
		release: noRelease,
	},
	plan.KindVerify: {
		// The checks' needs are added with every step's checks.
		needs:   needsNothing,
		release: noRelease,
	},
	plan.KindWaitFor: {
		// The check's needs are added with every step's checks.
		needs:   needsNothing,
		release: noRelease,
	},
}
