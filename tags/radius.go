package tags

import (
	"fmt"
	"sort"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Radius is what a tag reaches: everything that moves when the tag moves.
type Radius = mesh.TagRadius

// BlastRadius computes what the tag reaches in the snapshot (mesh.Snapshot.TagRadius). ok is false
// when the tag does not exist.
func BlastRadius(s *mesh.Snapshot, tag string) (Radius, bool) { return s.TagRadius(tag) }

// Ranked is a tag in risk order with the reason for its place.
type Ranked struct {
	Radius Radius `json:"radius"`
	Reason string `json:"reason"`
}

// Order sorts the tags that point at one of the given revisions lowest risk first: fewer stateful
// workloads, then fewer gateways and waypoints, then fewer sidecar pods, then fewer namespaces, then
// name; tag default always last, since it also catches everything unlabelled. An empty revisions list
// means every tag.
func Order(s *mesh.Snapshot, revisions ...string) []Ranked {
	want := map[string]bool{}
	for _, r := range revisions {
		want[r] = true
	}
	var out []Ranked
	for _, t := range s.Tags {
		if len(want) > 0 && !want[t.Revision] {
			continue
		}
		r, _ := BlastRadius(s, t.Name)
		out = append(out, Ranked{Radius: r})
	}
	key := func(r Radius) [6]int {
		def := 0
		if r.Tag == "default" {
			def = 1
		}
		return [6]int{def, r.StatefulWorkloads, len(r.Gateways) + len(r.Waypoints), r.SidecarPods, len(r.Namespaces), len(r.AmbientNamespaces)}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := key(out[i].Radius), key(out[j].Radius)
		if a != b {
			for k := range a {
				if a[k] != b[k] {
					return a[k] < b[k]
				}
			}
		}
		return out[i].Radius.Tag < out[j].Radius.Tag
	})
	for i := range out {
		r := out[i].Radius
		why := fmt.Sprintf("position %d of %d: %s", i+1, len(out), r.Summary())
		if r.Tag == "default" {
			why += "; default goes last because it also owns everything unlabelled"
		}
		out[i].Reason = why
	}
	return out
}
