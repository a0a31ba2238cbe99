package executetest

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DemoBudget is the demo mesh's PodDisruptionBudget that PrepareDemo relaxes (namespace, name).
var DemoBudget = [2]string{"data", "postgres"}

// PrepareDemo makes a world built from the demo mesh's objects (demo.Objects) one a run can go
// through to its end: its Deployments get their pods' owners (SynthesizeDeployments), and the
// demo's postgres budget, which allows no eviction (plan-upgrade --demo's PDB_BLOCKS_DRAIN, which a
// drain would wait on until its timeout), is relaxed to one at a time.
func (w *World) PrepareDemo(ctx context.Context) error {
	if err := w.SynthesizeDeployments(ctx); err != nil {
		return err
	}
	var pdb policyv1.PodDisruptionBudget
	key := client.ObjectKey{Namespace: DemoBudget[0], Name: DemoBudget[1]}
	if err := w.Base.Get(ctx, key, &pdb); err != nil {
		return fmt.Errorf("the demo's budget %s: %w", key, err)
	}
	one := intstr.FromInt32(1)
	pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = nil, &one
	if err := w.Base.Update(ctx, &pdb); err != nil {
		return fmt.Errorf("the demo's budget %s: %w", key, err)
	}
	w.SyncBudgets(ctx, key.Namespace)
	return nil
}
