package observe

import (
	"errors"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// DefaultPageSize is the page size Live uses when Options.PageSize is zero.
const DefaultPageSize int64 = 500

// secretPageSize caps pages of Helm release Secrets: each one can hold up to 1 MiB of release data.
const secretPageSize int64 = 50

// ErrInvalidInput is wrapped by every error about offline input that cannot be read: malformed YAML,
// documents that are not Kubernetes objects, fields of the wrong type, undecodable Helm release data.
var ErrInvalidInput = errors.New("invalid input")

// VersionGetter reports the Kubernetes API server's version. A client-go discovery client is one.
type VersionGetter interface {
	ServerVersion() (*version.Info, error)
}

// Options tune an observation. The zero value is ready to use.
type Options struct {
	// PageSize is the number of objects asked for per LIST request; 0 means DefaultPageSize. Helm
	// release Secrets are listed in pages of at most 50 whatever it says, because each can be large.
	PageSize int64
	// ServerVersion, when set, gives the Kubernetes version (Cluster.KubernetesVersionSource
	// "server"). When nil, offline input's `kubectl version -o yaml` (or -o json) output gives the
	// server version ("kubectl-version"), and without it the version is the oldest kubelet among
	// the nodes ("nodes").
	ServerVersion VersionGetter
	// Parallel is how many kinds Live reads at once; 0 means DefaultParallel, 1 reads one kind after
	// the other. Pods, the largest kind, start first, and the other kinds are read while they arrive.
	// The reader must be safe for concurrent use, as controller-runtime's clients are (its fake client
	// too, but not an interceptor around it that reads the fake client's scheme while it lists).
	Parallel int
	// WatchList makes Live read each kind with a watch-list instead of paged LISTs, when the reader
	// also watches (a client.WithWatch, from client.NewWithWatch): one request per kind, which
	// streams every object from the API server's watch cache and then a bookmark; the objects are
	// summarised as they arrive. A server that refuses the watch is listed in pages instead. It needs
	// watch besides list (RequiredPermissionsFor). Leave it off with fake clients: controller-runtime's
	// fake client ignores sendInitialEvents, and its watch would wait until the context ends.
	WatchList bool
}

// DefaultParallel is the number of kinds Live reads at once when Options.Parallel is zero.
const DefaultParallel = 4

func (o Options) parallel() int {
	if o.Parallel <= 0 {
		return DefaultParallel
	}
	return o.Parallel
}

func (o Options) pageSize() int64 {
	if o.PageSize <= 0 {
		return DefaultPageSize
	}
	return o.PageSize
}

// Scheme returns a new scheme with client-go's built-in kinds and apiextensions.k8s.io/v1, the kinds
// Decode returns as typed objects. Use it for a fake client seeded with decoded objects.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// Both AddToScheme functions only register Go types; they cannot fail.
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}
