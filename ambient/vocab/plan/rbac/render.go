package rbac

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// RenderOptions shape the RBAC objects Render writes. The zero value names them "ambientkit" and
// binds them to nobody.
type RenderOptions struct {
	// Name of the ClusterRole, of the Role in each namespace and of their bindings; empty means
	// "ambientkit".
	Name string
	// ServiceAccountNamespace and ServiceAccountName, when the name is set, name the ServiceAccount
	// the roles are bound to (a ClusterRoleBinding and one RoleBinding per namespace).
	ServiceAccountNamespace, ServiceAccountName string
	// Labels are set on every object.
	Labels map[string]string
	// CreateNamespaces are namespaces that hold rules but do not exist yet (those the plan's Helm
	// installs create, such as a blue-green's green namespace): a Role cannot exist before its
	// namespace, so Render writes a Namespace document for each ahead of the Roles. Creating one
	// changes the cluster a saved plan was made from: plan again after applying the RBAC.
	CreateNamespaces []string
}

// Render writes the rules that grant ps (Permissions.Rules) as rbac.authorization.k8s.io/v1 YAML
// documents: one ClusterRole with the cluster-wide rules, one Role per namespace with that
// namespace's rules, and, with a ServiceAccount, their bindings. Above each rule a comment names
// the steps that need it and the upstream facts it rests on. The output is deterministic.
func Render(ps *Permissions, o RenderOptions) []byte {
	name := o.Name
	if name == "" {
		name = "ambientkit"
	}
	rules := ps.Rules()
	var namespaces []string
	byNS := map[string][]Rule{}
	for _, r := range rules {
		if _, ok := byNS[r.Namespace]; !ok && r.Namespace != "" {
			namespaces = append(namespaces, r.Namespace)
		}
		byNS[r.Namespace] = append(byNS[r.Namespace], r)
	}
	var docs []string
	for _, ns := range o.CreateNamespaces {
		if _, ok := byNS[ns]; !ok {
			continue
		}
		var b bytes.Buffer
		b.WriteString("# created ahead of its Role: the plan installs into it, and a Role cannot exist before its namespace\n")
		b.WriteString("apiVersion: v1\nkind: Namespace\n")
		metadataYAML(&b, ns, "", o.Labels)
		docs = append(docs, b.String())
	}
	if len(byNS[""]) > 0 {
		docs = append(docs, roleDoc("ClusterRole", name, "", o.Labels, byNS[""]))
	}
	for _, ns := range namespaces {
		docs = append(docs, roleDoc("Role", name, ns, o.Labels, byNS[ns]))
	}
	if o.ServiceAccountName != "" {
		if len(byNS[""]) > 0 {
			docs = append(docs, bindingDoc("ClusterRoleBinding", "ClusterRole", name, "", o))
		}
		for _, ns := range namespaces {
			docs = append(docs, bindingDoc("RoleBinding", "Role", name, ns, o))
		}
	}
	for _, u := range ps.Unknown() {
		docs = append(docs, "# not covered: "+oneLine(u)+"\n")
	}
	return []byte(strings.Join(docs, "---\n"))
}

func metadataYAML(b *bytes.Buffer, name, ns string, labels map[string]string) {
	b.WriteString("metadata:\n  name: " + q(name) + "\n")
	if ns != "" {
		b.WriteString("  namespace: " + q(ns) + "\n")
	}
	if len(labels) > 0 {
		b.WriteString("  labels:\n")
		for _, k := range sortedKeys(labels) {
			b.WriteString("    " + q(k) + ": " + q(labels[k]) + "\n")
		}
	}
}

func roleDoc(kind, name, ns string, labels map[string]string, rules []Rule) string {
	var b bytes.Buffer
	b.WriteString("apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\n")
	metadataYAML(&b, name, ns, labels)
	b.WriteString("rules:\n")
	for _, r := range rules {
		b.WriteString("# for " + oneLine(limitNames(r.By, 4)) + "\n")
		for _, s := range r.Sources {
			b.WriteString("#   per " + oneLine(s) + "\n")
		}
		b.WriteString("- apiGroups: " + qList(r.APIGroups) + "\n")
		b.WriteString("  resources: " + qList(r.Resources) + "\n")
		if len(r.ResourceNames) > 0 {
			b.WriteString("  resourceNames: " + qList(r.ResourceNames) + "\n")
		}
		b.WriteString("  verbs: " + qList(r.Verbs) + "\n")
	}
	return b.String()
}

func bindingDoc(kind, roleKind, name, ns string, o RenderOptions) string {
	var b bytes.Buffer
	b.WriteString("apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\n")
	metadataYAML(&b, name, ns, o.Labels)
	b.WriteString("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: " + roleKind + "\n  name: " + q(name) + "\n")
	b.WriteString("subjects:\n- kind: ServiceAccount\n  name: " + q(o.ServiceAccountName) + "\n  namespace: " + q(o.ServiceAccountNamespace) + "\n")
	return b.String()
}

// q quotes a string as JSON, which YAML reads as the same string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func qList(list []string) string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = q(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// limitNames lists up to n names and says how many more there are.
func limitNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
