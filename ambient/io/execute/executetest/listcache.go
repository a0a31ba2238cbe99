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
// client (the recording client wraps it, the controllers call it), so no copy outlives a change.
// Only LISTs narrowed by nothing but a namespace are served from the copy; the rest pass through.
type listCache struct {
	client.WithWatch

	mu    sync.Mutex
	gen   uint64 // bumped by every write
	pods  cachedList[*corev1.PodList]
	nodes cachedList[*corev1.NodeList]
}

type cachedList[L client.ObjectList] struct {
	gen  uint64
	read bool // list holds the objects as of gen
	list L
}

func newListCache(c client.WithWatch) *listCache { return &listCache{WithWatch: c} }

func (c *listCache) wrote() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
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
		l.ListMeta = all.ListMeta
		l.Items = l.Items[:0]
		for i := range all.Items {
			if lo.Namespace == "" || all.Items[i].Namespace == lo.Namespace {
				l.Items = append(l.Items, *all.Items[i].DeepCopy())
			}
		}
		return nil
	case *corev1.NodeList:
		all, err := cached(ctx, c, &c.nodes, func() *corev1.NodeList { return &corev1.NodeList{} })
		if err != nil {
			return err
		}
		l.ListMeta = all.ListMeta
		l.Items = l.Items[:0]
		for i := range all.Items {
			l.Items = append(l.Items, *all.Items[i].DeepCopy())
		}
		return nil
	}
	return c.WithWatch.List(ctx, list, opts...)
}

// cached returns the copy of the whole list, reading it again when a write came since.
func cached[L client.ObjectList](ctx context.Context, c *listCache, e *cachedList[L], fresh func() L) (L, error) {
	c.mu.Lock()
	gen, have := c.gen, e.list
	if e.read && e.gen == gen {
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
	if c.gen == gen { // no write while it was read
		e.gen, e.list, e.read = gen, l, true
	}
	c.mu.Unlock()
	return l, nil
}

// Create, Update, Patch, Delete, DeleteAllOf and Apply invalidate the copies.
func (c *listCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	defer c.wrote()
	return c.WithWatch.Create(ctx, obj, opts...)
}

func (c *listCache) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	defer c.wrote()
	return c.WithWatch.Update(ctx, obj, opts...)
}

func (c *listCache) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	defer c.wrote()
	return c.WithWatch.Patch(ctx, obj, patch, opts...)
}

func (c *listCache) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	defer c.wrote()
	return c.WithWatch.Delete(ctx, obj, opts...)
}

func (c *listCache) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	defer c.wrote()
	return c.WithWatch.DeleteAllOf(ctx, obj, opts...)
}

func (c *listCache) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	defer c.wrote()
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
	defer w.c.wrote()
	return w.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (w *subResourceWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	defer w.c.wrote()
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *subResourceWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	defer w.c.wrote()
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *subResourceWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	defer w.c.wrote()
	return w.SubResourceWriter.Apply(ctx, obj, opts...)
}

// subResourceClient reads as the fake does and writes through subResourceWriter.
type subResourceClient struct {
	client.SubResourceReader
	*subResourceWriter
}
