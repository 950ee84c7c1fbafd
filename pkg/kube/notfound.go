package kube

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// IsNotFoundOf reports whether err is the API server's NotFound of the object name of
// gr: a Status whose details name that object, its resource and its group, as the
// registry answers ("nodes \"n1\" not found"). A 404 that names no object is no proof of
// an absence: the path of a type that is not served, a CRD deleted since discovery, an
// aggregated API without its server, or a proxy in front of the API server that answers
// "404 page not found" for a path it does not pass on (client-go makes a NotFound of any
// 404, filling in the name it asked for, and marks a body that is not a Status as an
// unexpected server response).
func IsNotFoundOf(err error, gr schema.GroupResource, name string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	d := s.Details
	if s.Code != http.StatusNotFound || s.Reason != metav1.StatusReasonNotFound || d == nil {
		return false
	}
	for _, cause := range d.Causes {
		if cause.Type == metav1.CauseTypeUnexpectedServerResponse {
			return false
		}
	}
	return d.Name == name && d.Kind == gr.Resource && d.Group == gr.Group
}
