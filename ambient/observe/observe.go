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
