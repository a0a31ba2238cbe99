package observe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// schedulingInput is two nodes, a StatefulSet of two pods (one on a local volume, one on a zonal
// one), and a Deployment pod whose requests exercise every rule of the scheduler's count.
const schedulingInput = `apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110", example.com/gpu: "1"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: b}}
status:
  allocatable: {cpu: 3500m, memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: api-5d8f7-abcde
  namespace: shop
  labels: {app: api, pod-template-hash: 5d8f7}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: api-5d8f7, controller: true}]
spec:
  nodeName: n1
  nodeSelector: {pool: general}
  tolerations: [{key: dedicated, operator: Equal, value: shop, effect: NoSchedule}, {operator: Exists, effect: NoExecute}]
  overhead: {cpu: 50m}
  containers:
  - {name: app, image: app, resources: {requests: {cpu: 500m, memory: 1Gi}}, ports: [{containerPort: 8080, hostPort: 9090}]}
  - {name: log, image: log, resources: {requests: {cpu: 100m}}}
  initContainers:
  - {name: proxy, image: proxy, restartPolicy: Always, resources: {requests: {cpu: 200m, memory: 256Mi}}}
  - {name: migrate, image: migrate, resources: {requests: {cpu: "2", memory: 512Mi}}}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: api}}}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: api}}, matchLabelKeys: [pod-template-hash]}
  - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: api}}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: shop
  labels: {app: db}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, controller: true}]
spec:
  nodeName: n1
  resources: {requests: {cpu: "1", memory: 2Gi}}
  containers: [{name: db, image: db, resources: {requests: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data-db-0}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-1
  namespace: shop
  labels: {app: db}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, controller: true}]
spec:
  nodeName: n2
  resources: {requests: {cpu: "1", memory: 2Gi}}
  containers: [{name: db, image: db, resources: {requests: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data-db-1}}, {name: cache, persistentVolumeClaim: {claimName: pending}}, {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: shop}
spec: {nodeName: n2, containers: [{name: x, image: x, resources: {requests: {cpu: "3"}}}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-0, namespace: shop}
spec: {volumeName: pv-local}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-1, namespace: shop}
spec: {volumeName: pv-zonal}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pending, namespace: shop}
spec: {}
status: {phase: Pending}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-local}
spec:
  local: {path: /mnt/disk}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]}]}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-zonal, labels: {topology.kubernetes.io/zone: b__c}}
spec: {csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}}
`

// TestWhatPlacesAnEvictedPodReachesTheSnapshot: nodes carry their allocatable resources and the
// requests of their unfinished pods; a workload carries one pod's requests as the scheduler counts
// them, its hard constraints (soft spread constraints left out, matchLabelKeys folded in), and each
// pod's node and the volumes that pin it, claims that cannot be resolved named as unread.
func TestWhatPlacesAnEvictedPodReachesTheSnapshot(t *testing.T) {
	s, err := observe.YAML(context.Background(), "cluster.yaml", strings.NewReader(schedulingInput), observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const gi, mi = int64(1 << 30), int64(1 << 20)
	nodes := map[string]mesh.Node{}
	for _, n := range s.Nodes {
		nodes[n.Name] = n
	}
	if d := cmp.Diff(mesh.Resources{"cpu": 4000, "memory": 16 * gi, "pods": 110, "example.com/gpu": 1}, nodes["n1"].Allocatable); d != "" {
		t.Errorf("n1 allocatable (-want +got):\n%s", d)
	}
	// api: containers 600m + sidecar 200m = 800m, but the init container with the sidecar before it
	// needs 2200m, which wins; memory 1Gi+256Mi against 512Mi+256Mi; overhead 50m on top. db-0:
	// pod-level requests replace the containers' cpu and memory, not their ephemeral storage.
	apiReq := mesh.Resources{"cpu": 2250, "memory": gi + 256*mi, "pods": 1}
	dbReq := mesh.Resources{"cpu": 1000, "memory": 2 * gi, "ephemeral-storage": gi, "pods": 1}
	if d := cmp.Diff(apiReq.Add(dbReq), nodes["n1"].Requested); d != "" {
		t.Errorf("n1 requested (-want +got):\n%s", d)
	}
	if d := cmp.Diff(dbReq, nodes["n2"].Requested); d != "" {
		t.Errorf("n2 requested, the finished pod left out (-want +got):\n%s", d)
	}

	api := findWorkload(t, s, "shop", "api")
	want := &mesh.Scheduling{
		Requests:     apiReq,
		NodeSelector: map[string]string{"pool": "general"},
		Tolerations:  []mesh.Toleration{{Key: "dedicated", Operator: "Equal", Value: "shop", Effect: "NoSchedule"}, {Operator: "Exists", Effect: "NoExecute"}},
		AntiAffinity: []mesh.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", Selector: &mesh.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}},
		Spread: []mesh.SpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", Selector: &mesh.LabelSelector{
			MatchLabels: map[string]string{"app": "api"}, MatchExpressions: []mesh.SelectorTerm{{Key: "pod-template-hash", Operator: "In", Values: []string{"5d8f7"}}}}}},
		HostPorts: []string{"TCP/9090"},
	}
	if d := cmp.Diff(want, api.Scheduling); d != "" {
		t.Errorf("api scheduling (-want +got):\n%s", d)
	}

	db := findWorkload(t, s, "shop", "db")
	if db.Scheduling == nil || db.Scheduling.Varies {
		t.Errorf("db scheduling %+v, want its two equal pods' without Varies", db.Scheduling)
	}
	wantPlaced := []mesh.PodPlace{
		{Name: "db-0", Node: "n1", Volumes: []mesh.VolumePin{{Claim: "data-db-0", Volume: "pv-local", Local: true,
			Terms: []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{"n1"}}}}}}}},
		{Name: "db-1", Node: "n2", Volumes: []mesh.VolumePin{{Claim: "data-db-1", Volume: "pv-zonal",
			Terms: []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"b", "c"}}}}}}},
			Unread: []string{"db-1-scratch", "pending"}},
	}
	if d := cmp.Diff(wantPlaced, db.Placed); d != "" {
		t.Errorf("db pods (-want +got):\n%s", d)
	}
	if !db.Placed[1].Volumes[0].Matches(map[string]string{"topology.kubernetes.io/zone": "c"}) || db.Placed[1].Volumes[0].Matches(nodes["n1"].Labels) {
		t.Error("the zonal volume should be usable in zones b and c only")
	}
}
