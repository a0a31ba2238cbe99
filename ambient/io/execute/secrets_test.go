package execute_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// A Helm release's values can hold credentials. Backing the release up and uninstalling it keeps
// them in the backup Secret only: never in the logs, the journal ConfigMap, the executor's events,
// the Kubernetes Events or the step results.
func TestHelmValuesWithCredentialsReachOnlyTheBackupSecret(t *testing.T) {
	const credential = "s3cr3t-t0ken-4711"
	ctx := context.Background()
	w := newWorld(t)
	w.Helm = w.NewHelm(rel("istiod-1-30-3", "istiod", "1.30.3", 1, map[string]any{"pilot": map[string]any{"env": map[string]any{"CA_TOKEN": credential}}}))
	p := stepsPlan(t, w, backupStep(istiodBackup),
		plan.Step{ID: "remove", Description: "uninstall", HelmUninstall: &plan.HelmUninstall{Release: "istiod-1-30-3", Namespace: "istio-system", Chart: "istiod", BackupStep: "backup"}})
	hash, err := execute.PlanHash(p)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var events []string
	e := w.Executor(func(o *execute.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Observer = execute.Observers(func(ev execute.Event) { events = append(events, fmt.Sprintf("%+v", ev)) },
			execute.KubernetesEvents(w.Client, execute.KubernetesEventsOptions{PlanHash: hash, QPS: 1e6, Burst: 1e6}))
	})
	res, err := e.Apply(ctx, p, execute.ApplyOptions{})
	if err != nil || !res.Done {
		t.Fatalf("apply: %v", err)
	}
	where := map[string]string{"logs": logs.String(), "events": strings.Join(events, "\n"), "result": fmt.Sprintf("%+v", res)}
	var cms corev1.ConfigMapList
	if err := w.Base.List(ctx, &cms); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		where["ConfigMap "+cm.Namespace+"/"+cm.Name] = fmt.Sprint(cm.Data, cm.Annotations, cm.Labels)
	}
	var evs eventsv1.EventList
	if err := w.Base.List(ctx, &evs); err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Fatal("no Kubernetes Event was recorded; the test would prove nothing about them")
	}
	for _, ev := range evs.Items {
		where["Event "+ev.Name] = fmt.Sprint(ev.Note, ev.Reason, ev.Action, ev.Annotations)
	}
	for what, text := range where {
		if strings.Contains(text, credential) {
			t.Errorf("the credential in the release's values reached the %s", what)
		}
	}
	var secrets corev1.SecretList
	if err := w.Base.List(ctx, &secrets, client.InNamespace("istio-system"), client.MatchingLabels{"ambientkit.io/backup": "true"}); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 1 || !bytes.Contains(secrets.Items[0].Data["backup.json"], []byte(credential)) {
		t.Errorf("the backup Secret does not hold the release's values: %d backup Secrets", len(secrets.Items))
	}
}
