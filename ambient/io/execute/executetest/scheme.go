package executetest

import (
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Scheme holds the API groups a world serves typed: those the executor writes and observe.Live
// reads (Istio's and the other custom resources are served unstructured). It is smaller than
// observe.Scheme on purpose: client-go's field-managed object tracker, under the fake client,
// rebuilds a REST mapper of the whole scheme on every write, which with client-go's full scheme was
// a fifth of the executor tests' time.
var Scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		coordinationv1.AddToScheme, eventsv1.AddToScheme, admissionregistrationv1.AddToScheme,
		authorizationv1.AddToScheme, networkingv1.AddToScheme, apiextensionsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // AddToScheme only registers Go types
		}
	}
	return s
})
