package observe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// scheme converts built-in kinds from offline input into the Go types Live receives.
var scheme = Scheme()

// YAML observes the objects in one stream of `kubectl get -o yaml` (or -o json) output. name labels
// the stream in errors and in Observation.Source ("offline:<name>").
//
// The stream may hold several documents separated by "---", `kind: List` documents and typed lists
// (PodList, ...), and the output of `kubectl version -o yaml` (or -o json), whose serverVersion gives
// the Kubernetes version (see Options.ServerVersion); such output without serverVersion is an error.
// Objects of kinds the observer does not read are counted in Observation.Ignored.
// Malformed YAML, a document that is not a Kubernetes object, or a field of the wrong type is an error
// wrapping ErrInvalidInput that names the stream and the document.
func YAML(ctx context.Context, name string, r io.Reader, opts Options) (*mesh.Snapshot, error) {
	o := newOffline()
	if err := readStream(ctx, name, r, o.visitor()); err != nil {
		return nil, err
	}
	return o.finish("offline:"+name, opts)
}

// Dir observes the *.yaml, *.yml and *.json files under path (walked in lexical order, including
// subdirectories), or path itself when it is a file. Observation.Source is "offline:<path>".
func Dir(ctx context.Context, path string, opts Options) (*mesh.Snapshot, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read offline snapshot input: %w; give a directory or a file of kubectl get -o yaml output", err)
	}
	if !st.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read offline snapshot input: %w", err)
		}
		defer f.Close()
		return YAML(ctx, path, f, opts)
	}
	o := newOffline()
	fsys := os.DirFS(path)
	if err := readFS(ctx, fsys, path, o.visitor()); err != nil {
		return nil, err
	}
	o.noteDumpFiles(fsys)
	return o.finish("offline:"+path, opts)
}

// FS observes the *.yaml, *.yml and *.json files of fsys, walked from its root in lexical order.
// name labels fsys in errors and in Observation.Source ("offline:<name>").
func FS(ctx context.Context, name string, fsys fs.FS, opts Options) (*mesh.Snapshot, error) {
	o := newOffline()
	if err := readFS(ctx, fsys, name, o.visitor()); err != nil {
		return nil, err
	}
	o.noteDumpFiles(fsys)
	return o.finish("offline:"+name, opts)
}

// Decode returns every object in a stream of YAML or JSON documents (lists expanded): typed for the
// kinds Scheme knows, *unstructured.Unstructured for others. The objects can seed a fake client.
func Decode(name string, r io.Reader) ([]client.Object, error) {
	var out []client.Object
	err := readStream(context.Background(), name, r, visitor{object: func(u *unstructured.Unstructured, where string) error {
		o, err := decodeObject(u, where)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	}})
	return out, err
}

// DecodeFS is Decode over every *.yaml, *.yml and *.json file of fsys, in lexical order.
func DecodeFS(fsys fs.FS) ([]client.Object, error) {
	var out []client.Object
	err := readFS(context.Background(), fsys, "", visitor{object: func(u *unstructured.Unstructured, where string) error {
		o, err := decodeObject(u, where)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	}})
	return out, err
}

func decodeObject(u *unstructured.Unstructured, where string) (client.Object, error) {
	gvk := u.GroupVersionKind()
	if !scheme.Recognizes(gvk) {
		return u, nil
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidInput, where, err)
	}
	if err := fromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%w: %s: %s %s: %v; fix the field or remove the object", ErrInvalidInput, where, gvk.Kind, objectName(u), err)
	}
	co, ok := obj.(client.Object)
	if !ok {
		return u, nil
	}
	return co, nil
}

// offline feeds decoded documents to a builder and counts the ones it does not read.
type offline struct {
	b       *builder
	ignored map[string]int
}

func newOffline() *offline { return &offline{b: newBuilder(), ignored: map[string]int{}} }

func (o *offline) visitor() visitor { return visitor{object: o.add, version: o.b.addKubectlVersion} }

func (o *offline) add(u *unstructured.Unstructured, where string) error {
	gvk := u.GroupVersionKind()
	k := kindFor(gvk)
	if k == nil && mesh.IsConfigGroup(gvk.Group) {
		return configKind(gvk).add(o.b, u) // a kind newer than the code: kept, and judged not assessed
	}
	if k == nil {
		o.ignored[groupKindLabel(gvk.GroupKind())]++
		return nil
	}
	var obj runtime.Object
	switch k.form {
	case untyped:
		obj = u
	case metadataOnly:
		m := &metav1.PartialObjectMetadata{}
		head := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"]}
		if err := fromUnstructured(head, m); err != nil {
			return fmt.Errorf("%w: %s: %s %s: metadata: %v; fix the field or remove the object", ErrInvalidInput, where, gvk.Kind, objectName(u), err)
		}
		obj = m
	default:
		t, err := scheme.New(gvk)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidInput, where, err)
		}
		if err := fromUnstructured(u.Object, t); err != nil {
			return fmt.Errorf("%w: %s: %s %s: %v; fix the field or remove the object", ErrInvalidInput, where, gvk.Kind, objectName(u), err)
		}
		obj = t
	}
	if k.perRelease {
		o.b.addHelmRecord(u, where) // kept whole and undecoded until the release keys are known
		return nil
	}
	if err := o.b.addObject(k, obj); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// dumpMainFile is the file DumpCommands saves its one all-kinds command in: a folder holding it is a
// dump, whose file names say which kinds were read.
const dumpMainFile = "cluster.yaml"

// noteDumpFiles marks the input complete when fsys is a dump DumpCommands wrote, and each resource
// with a file of its own ("envoyfilters.networking.istio.io.yaml", ".2.yaml" for a second list)
// as read, even when the file lists nothing. (A second list of one kind, "configmaps.2.yaml", is
// only ever of a core kind.)
func (o *offline) noteDumpFiles(fsys fs.FS) {
	if _, err := fs.Stat(fsys, dumpMainFile); err != nil {
		return
	}
	o.b.complete = true
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok {
			continue
		}
		o.b.read[name] = true
	}
}

func (o *offline) finish(source string, opts Options) (*mesh.Snapshot, error) {
	s, err := o.b.finish(source, opts)
	if err != nil {
		return nil, err
	}
	if len(o.ignored) > 0 {
		s.Observation.Ignored = o.ignored
	}
	return s, nil
}

// fromUnstructured converts with the apimachinery converter and turns a panic on odd input into an
// error, so that no input can crash the caller.
func fromUnstructured(m map[string]any, into runtime.Object) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot convert: %v", r)
		}
	}()
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	if n := u.GetName(); n != "" {
		return n
	}
	return "(unnamed)"
}

// isInputFile tells which files hold objects.
func isInputFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readFS walks fsys in lexical order and reads every input file. label prefixes file names in errors.
func readFS(ctx context.Context, fsys fs.FS, label string, visit visitor) error {
	files := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(label, p), err)
		}
		if d.IsDir() || !isInputFile(p) {
			return nil
		}
		files++
		f, err := fsys.Open(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(label, p), err)
		}
		defer f.Close()
		return readStream(ctx, filepath.Join(label, p), f, visit)
	})
	if err != nil {
		return err
	}
	if files == 0 {
		if label == "" {
			label = "the input"
		}
		return fmt.Errorf("%w: no *.yaml, *.yml or *.json files in %s; save kubectl get -o yaml output there", ErrInvalidInput, label)
	}
	return nil
}

// visitor receives what readStream finds. object gets every Kubernetes object (lists expanded);
// version, when set, gets the serverVersion of `kubectl version -o yaml|json` output (documents
// without apiVersion and kind whose keys are clientVersion, serverVersion, kustomizeVersion). When
// version is nil such documents are skipped: they are not objects.
type visitor struct {
	object  func(u *unstructured.Unstructured, where string) error
	version func(server *version.Info, where string) error
}

// readStream splits a stream into documents and hands every object to visit, expanding lists.
func readStream(ctx context.Context, name string, r io.Reader, visit visitor) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for index := 1; ; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %s: document %d: %v", ErrInvalidInput, name, index, err)
		}
		if blankDocument(doc) {
			continue
		}
		where := fmt.Sprintf("%s: document %d", name, index)
		index++
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return fmt.Errorf("%w: %s: malformed YAML: %v; fix the syntax (kubectl get -o yaml output parses as is)", ErrInvalidInput, where, err)
		}
		var v any
		if err := utiljson.Unmarshal(j, &v); err != nil {
			return fmt.Errorf("%w: %s: malformed document: %v", ErrInvalidInput, where, err)
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: %s: not a Kubernetes object: want a mapping with apiVersion and kind, found a %s", ErrInvalidInput, where, describe(v))
		}
		if isKubectlVersion(m) {
			if visit.version == nil {
				continue
			}
			info, err := serverVersionOf(m, where)
			if err != nil {
				return err
			}
			if err := visit.version(info, where); err != nil {
				return err
			}
			continue
		}
		if err := visitObject(m, where, "", visit.object); err != nil {
			return err
		}
	}
}

// blankDocument is true for documents holding only whitespace and comments.
func blankDocument(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

func describe(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		return "number"
	}
}

// visitObject checks that m is an object (or a list of them) and visits it. inherit is the
// apiVersion/kind a typed list (PodList) gives items that do not state their own.
func visitObject(m map[string]any, where string, inheritKind string, visit func(*unstructured.Unstructured, string) error) error {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if inheritKind != "" && apiVersion == "" && kind == "" {
		apiVersion, kind, _ = strings.Cut(inheritKind, "|")
		m["apiVersion"], m["kind"] = apiVersion, kind
	}
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if kind == "" {
		missing = append(missing, "kind")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s: not a Kubernetes object: no %s; give kubectl get -o yaml output (a values file or kustomization does not belong here)",
			ErrInvalidInput, where, strings.Join(missing, " or "))
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return fmt.Errorf("%w: %s: apiVersion %q is not <group>/<version> or <version>", ErrInvalidInput, where, apiVersion)
	}
	if items, ok := m["items"]; ok && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok && items != nil {
			return fmt.Errorf("%w: %s: %s items is a %s, not a list of objects", ErrInvalidInput, where, kind, describe(items))
		}
		inherit := ""
		if kind != "List" {
			inherit = gv.String() + "|" + strings.TrimSuffix(kind, "List")
		}
		for i, it := range list {
			im, ok := it.(map[string]any)
			itemWhere := fmt.Sprintf("%s: %s item %d", where, kind, i)
			if !ok {
				return fmt.Errorf("%w: %s: not a Kubernetes object: want a mapping, found a %s", ErrInvalidInput, itemWhere, describe(it))
			}
			if err := visitObject(im, itemWhere, inherit, visit); err != nil {
				return err
			}
		}
		return nil
	}
	if md, ok := m["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return fmt.Errorf("%w: %s: %s metadata is a %s, not a mapping", ErrInvalidInput, where, kind, describe(md))
		}
	}
	return visit(&unstructured.Unstructured{Object: m}, where)
}
