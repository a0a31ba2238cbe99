package executetest

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listCache serves the world's repeated LISTs of every pod and every node from a copy kept until the
// next write of any object. The fake client answers each LIST by encoding and decoding the whole
// list as JSON, and the world's controllers and scheduler list pods and nodes on almost every
// event, which made the LISTs most of the executor tests' time. Every write goes through this
// client (the recording client wraps it, the controllers call it) and ends the copy; while a write
// is under way, LISTs go to the fake.
// Only LISTs narrowed by nothing but a namespace are served from the copy; the rest pass through.
type listCache struct {
	client.WithWatch

	mu  sync.Mutex
	gen uint64 // bumped when a write ends
	// writing counts the writes under way: the fake may have stored one (and sent its watch
	// event) before it returns, so no copy is served or kept while any is.
	writing int
	pods    cachedList[*corev1.PodList]
	nodes   cachedList[*corev1.NodeList]
}

type cachedList[L client.ObjectList] struct {
	gen  uint64
	read bool // list holds the objects as of gen
	list L
}

func newListCache(c client.WithWatch) *listCache { return &listCache{WithWatch: c} }

// write marks a write under way; the returned func ends it.
func (c *listCache) write() func() {
	c.mu.Lock()
	c.writing++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.writing--
		c.gen++
		c.mu.Unlock()
	}
}

// List serves pods and nodes from the copy when the options allow it.
func (c *listCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.LabelSelector != nil || lo.FieldSelector != nil || lo.Limit != 0 || lo.Continue != "" || lo.Raw != nil {
		return c.WithWatch.List(ctx, list, opts...)
	}
	switch l := list.(type) {
	case *corev1.PodList:
		all, err := cached(ctx, c, &c.pods, func() *corev1.PodList { return &corev1.PodList{} })
		if err != nil {
			return err
		}
		*l = corev1.PodList{TypeMeta: all.TypeMeta, ListMeta: *all.ListMeta.DeepCopy(), Items: copyItems(all.Items, lo.Namespace)}
		return nil
	case *corev1.NodeList:
		if lo.Namespace != "" { // nodes have none: the fake answers an empty list
			break
		}
		all, err := cached(ctx, c, &c.nodes, func() *corev1.NodeList { return &corev1.NodeList{} })
		if err != nil {
			return err
		}
		*l = corev1.NodeList{TypeMeta: all.TypeMeta, ListMeta: *all.ListMeta.DeepCopy(), Items: copyItems(all.Items, "")}
		return nil
	}
	return c.WithWatch.List(ctx, list, opts...)
}

// copyItems deep-copies the items of the namespace ("" for all), so that no caller shares the copy.
func copyItems[T any, P interface {
	*T
	GetNamespace() string
	DeepCopyInto(*T)
}](items []T, namespace string) []T {
	out := make([]T, 0, len(items))
	for i := range items {
		if namespace == "" || P(&items[i]).GetNamespace() == namespace {
			var c T
			P(&items[i]).DeepCopyInto(&c)
			out = append(out, c)
		}
	}
	return out
}

// cached returns the copy of the whole list, reading it again when a write came since.
func cached[L client.ObjectList](ctx context.Context, c *listCache, e *cachedList[L], fresh func() L) (L, error) {
	c.mu.Lock()
	gen, have, quiet := c.gen, e.list, c.writing == 0
	if quiet && e.read && e.gen == gen {
		c.mu.Unlock()
		return have, nil
	}
	c.mu.Unlock()
	l := fresh()
	if err := c.WithWatch.List(ctx, l); err != nil {
		var zero L
		return zero, err
	}
	c.mu.Lock()
	if quiet && c.gen == gen && c.writing == 0 { // no write under way before, while or after it was read
		e.gen, e.list, e.read = gen, l, true
	}
	c.mu.Unlock()
	return l, nil
}

// Create, Update, Patch, Delete, DeleteAllOf and Apply invalidate the copies.
func (c *listCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	defer c.write()()
	return c.WithWatch.Create(ctx, obj, opts...)
}

func (c *listCache) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	defer c.write()()
	return c.WithWatch.Update(ctx, obj, opts...)
}

func (c *listCache) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	defer c.write()()
	return c.WithWatch.Patch(ctx, obj, patch, opts...)
}

func (c *listCache) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	defer c.write()()
	return c.WithWatch.Delete(ctx, obj, opts...)
}

func (c *listCache) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	defer c.write()()
	return c.WithWatch.DeleteAllOf(ctx, obj, opts...)
}

func (c *listCache) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	defer c.write()()
	return c.WithWatch.Apply(ctx, obj, opts...)
}

// Status and SubResource writers invalidate the copies too.
func (c *listCache) Status() client.SubResourceWriter {
	return &subResourceWriter{SubResourceWriter: c.WithWatch.Status(), c: c}
}

// SubResource returns the subresource client, whose writes invalidate the copies.
func (c *listCache) SubResource(name string) client.SubResourceClient {
	sub := c.WithWatch.SubResource(name)
	return &subResourceClient{SubResourceReader: sub, subResourceWriter: &subResourceWriter{SubResourceWriter: sub, c: c}}
}

type subResourceWriter struct {
	client.SubResourceWriter
	c *listCache
}

func (w *subResourceWriter) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	defer w.c.write()()
	return w.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (w *subResourceWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	defer w.c.write()()
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *subResourceWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	defer w.c.write()()
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *subResourceWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	defer w.c.write()()
	return w.SubResourceWriter.Apply(ctx, obj, opts...)
}

// subResourceClient reads as the fake does and writes through subResourceWriter.
type subResourceClient struct {
	client.SubResourceReader
	*subResourceWriter
}
