package plan

import (
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

var configMaps = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// The API server's answers to a GET of an object it cannot read, as kube-apiserver v1.36
// words them: with the AllowUnsafeMalformedObjectDeletion gate, and without it.
var (
	corruptAnswer = apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/team-a/bad, ResourceVersion: 0, " +
		"AdditionalErrorMsg: object not decodable revision=42: proto: wrong wireType = 7 for field TypeMeta"))
	undecodableAnswer = apierrors.NewInternalError(errors.New("proto: wrong wireType = 7 for field TypeMeta"))
)

// planUnsafeOne plans the unsafe deletion of configmaps/bad -n team-a: a GET of it answers
// get, and a SelfSubjectAccessReview allows the verbs in allowed.
func planUnsafeOne(t *testing.T, get error, allowed map[string]bool, opts Options) (*Plan, []authorizationv1.ResourceAttributes) {
	t.Helper()
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	md.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if get == nil {
			return true, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "bad", UID: "uid-bad"}}, nil
		}
		return true, nil, get
	})
	kc := fake.NewClientset()
	var asked []authorizationv1.ResourceAttributes
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		asked = append(asked, *r.Spec.ResourceAttributes)
		r.Status.Allowed = allowed[r.Spec.ResourceAttributes.Verb]
		return true, r, nil
	})
	planner := &Planner{Kube: kc, Metadata: md}
	u := Unreadable{Resource: configMaps, Namespace: "team-a", Name: "bad"}
	return planner.Plan(t.Context(), []Request{{Unreadable: &u, Cause: &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonUnreadable}}}, opts), asked
}

// TestAnUnsafeDeletionIsOnlyForAnObjectProvenUnreadable: nothing but a GET made now that
// fails with the gate's "corrupt object", naming the object's own key, with both verbs
// granted on it by name and a person's reason, plans an unsafe deletion; every other
// answer refuses it, and only the missing reason is a flag away.
func TestAnUnsafeDeletionIsOnlyForAnObjectProvenUnreadable(t *testing.T) {
	forced := Options{UnsafeDelete: true, ForceUnverified: true, Reason: "INC-77"}
	both := map[string]bool{"delete": true, VerbUnsafeDelete: true}
	tests := []struct {
		name     string
		get      error
		allowed  map[string]bool
		opts     Options
		wantKind finalizev1alpha1.RefusalKind
		wantWhy  string
	}{
		{"read", nil, both, forced, finalizev1alpha1.RefusalReadable, "the API server reads it"},
		{"gone", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "bad"), both, forced, finalizev1alpha1.RefusalReadable, "it is gone"},
		{"timeout", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), both, forced, finalizev1alpha1.RefusalReadable, "not on its stored bytes"},
		{"forbidden read", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "bad", errors.New("no")), both, forced, finalizev1alpha1.RefusalReadable, "not on its stored bytes"},
		{"conversion webhook", apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: failed to decode response`)), both, forced,
			finalizev1alpha1.RefusalReadable, "not on its stored bytes"},
		{"gate off", undecodableAnswer, both, forced, finalizev1alpha1.RefusalGateOff, "--feature-gates=AllowUnsafeMalformedObjectDeletion=true"},
		{"another key", apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/team-b/bad, ResourceVersion: 0, AdditionalErrorMsg: x")),
			both, forced, finalizev1alpha1.RefusalReadable, "is not the key of configmaps/bad -n team-a"},
		{"no unsafe verb", corruptAnswer, map[string]bool{"delete": true}, forced, finalizev1alpha1.RefusalForbidden, "you may not unsafe-delete-ignore-read-errors configmaps in namespace team-a (name bad)"},
		{"no delete", corruptAnswer, map[string]bool{VerbUnsafeDelete: true}, forced, finalizev1alpha1.RefusalForbidden, "you may not delete configmaps"},
		{"no reason", corruptAnswer, both, Options{UnsafeDelete: true}, finalizev1alpha1.RefusalUnverified, "only deleted with a person's reason"},
		{"not asked for", corruptAnswer, both, Options{ForceUnverified: true, Reason: "x"}, finalizev1alpha1.RefusalUnverified, "only made when a person asks for it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := planUnsafeOne(t, tt.get, tt.allowed, tt.opts)
			if len(p.Actions) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("got %d actions, %d refusals; want one refusal", len(p.Actions), len(p.Refusals))
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || !strings.Contains(r.Message, tt.wantWhy) || r.Action != finalizev1alpha1.ActionUnsafeDelete || r.Cause != finalizev1alpha1.ReasonUnreadable {
				t.Errorf("got %s %s (cause %s): %s; want %s: ...%s...", r.Action, r.Kind, r.Cause, r.Message, tt.wantKind, tt.wantWhy)
			}
		})
	}

	p, asked := planUnsafeOne(t, corruptAnswer, both, forced)
	if len(p.Actions) != 1 {
		t.Fatalf("the proven case was refused: %+v", p.Refusals)
	}
	a := p.Actions[0]
	if a.WriteKind() != UnsafeDelete || a.Key != "/registry/configmaps/team-a/bad" || a.UID != "" || a.Reason != "INC-77" || a.Verified ||
		!strings.Contains(a.Verification.Evidence, "AllowUnsafeMalformedObjectDeletion") || !strings.Contains(a.Unreadable, "corrupt object") {
		t.Errorf("action %+v", a)
	}
	api := a.API()
	if api.Action != finalizev1alpha1.ActionUnsafeDelete || api.Finalizer != "" || api.Reason != "INC-77" || api.Evidence == "" {
		t.Errorf("row %+v", api)
	}
	for _, r := range asked {
		if r.Name != "bad" || r.Namespace != "team-a" || r.Resource != "configmaps" {
			t.Errorf("asked about %+v, not the object by name", r)
		}
	}
}

func TestKeyNames(t *testing.T) {
	u := Unreadable{Resource: configMaps, Namespace: "a", Name: "x"}
	for key, want := range map[string]bool{"/registry/configmaps/a/x": true, "/registry/configmaps/b/x": false, "/registry/configmaps/a/xy": false, "x": false} {
		if got := keyNames(key, u); got != want {
			t.Errorf("keyNames(%q) = %v", key, got)
		}
	}
	if !keyNames("/registry/minions/n1", Unreadable{Name: "n1"}) {
		t.Error("a cluster-scoped key")
	}
}
