package write

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// TestTheUnsafeDeletionReadsTheObjectOnceMore: the DELETE is sent, with the option and
// nothing the API server refuses with it, only when a GET made just before still fails
// with the "corrupt object" of the key it was planned with; a dry run sends nothing.
func TestTheUnsafeDeletionReadsTheObjectOnceMore(t *testing.T) {
	cms := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	corrupt := func(key string) error {
		return apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: " + key + ", ResourceVersion: 0, AdditionalErrorMsg: object not decodable"))
	}
	target := plan.Target{Ref: kube.Ref{Resource: cms, Namespace: "a", Name: "bad"}, Kind: plan.UnsafeDelete, Key: "/registry/configmaps/a/bad"}
	for _, tt := range []struct {
		name    string
		get     error
		dry     DryRun
		deletes bool
		result  Result
		wantErr string
	}{
		{"proven", corrupt("/registry/configmaps/a/bad"), DryRunNone, true, Removed, ""},
		{"dry run", corrupt("/registry/configmaps/a/bad"), DryRunServer, false, WouldRemove, ""},
		{"restored", nil, DryRunNone, false, "", "not deleted: the API server reads it"},
		{"another key", corrupt("/registry/configmaps/a/bad2"), DryRunNone, false, "", "is not the key of configmaps/bad -n a"},
		{"gate gone", apierrors.NewInternalError(errors.New("proto: wrong wireType = 7")), DryRunNone, false, "", "AllowUnsafeMalformedObjectDeletion"},
		{"gone", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "bad"), DryRunNone, false, ObjectGone, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			var sent *metav1.DeleteOptions
			md.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if sent != nil {
					return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "bad")
				}
				if tt.get == nil {
					return true, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bad", UID: "uid-bad"}}, nil
				}
				return true, nil, tt.get
			})
			md.PrependReactor("delete", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				opts := a.(k8stesting.DeleteAction).GetDeleteOptions()
				sent = &opts
				return true, nil, nil
			})
			r := &Remover{Metadata: md}
			out, err := r.Remove(t.Context(), target, tt.dry)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v; want %q", err, tt.wantErr)
			}
			if out.Result != tt.result {
				t.Errorf("result %q, want %q", out.Result, tt.result)
			}
			if (sent != nil) != tt.deletes {
				t.Fatalf("DELETE sent: %v, want %v", sent != nil, tt.deletes)
			}
			if sent != nil && (sent.IgnoreStoreReadErrorWithClusterBreakingPotential == nil || !*sent.IgnoreStoreReadErrorWithClusterBreakingPotential ||
				sent.DryRun != nil || sent.Preconditions != nil || sent.GracePeriodSeconds != nil || sent.PropagationPolicy != nil) {
				t.Errorf("DELETE options %+v", sent)
			}
		})
	}
}

// TestAnUnsafeDeletionIsGoneOnlyWhenNothingIsLeftToRead: after the DELETE's answer, an
// object read (an API server without the gate made an ordinary deletion), one still
// unreadable, or a type the API server cannot delete so, is an error, never "gone".
func TestAnUnsafeDeletionIsGoneOnlyWhenNothingIsLeftToRead(t *testing.T) {
	cms := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	corrupt := apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /configmaps/a/bad, ResourceVersion: 0, AdditionalErrorMsg: object not decodable"))
	target := plan.Target{Ref: kube.Ref{Resource: cms, Namespace: "a", Name: "bad"}, Kind: plan.UnsafeDelete, Key: "/configmaps/a/bad"}
	for _, tt := range []struct {
		name      string
		after     error // the GET after the DELETE; nil reads the object
		deleteErr error
		want      string
	}{
		{"read afterwards", nil, nil, "took the DELETE for an ordinary one"},
		{"still unreadable", corrupt, nil, "still cannot read the object"},
		{"no unsafe deleter", nil, apierrors.NewInternalError(errors.New("no unsafe deleter provided, can not honor ignoreStoreReadErrorWithClusterBreakingPotential")), "not deleted: the API server has no unsafe deletion of configmaps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			deleted := false
			md.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if !deleted {
					return true, nil, corrupt
				}
				if tt.after == nil {
					return true, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bad", UID: "uid-new", Finalizers: []string{"x"}}}, nil
				}
				return true, nil, tt.after
			})
			md.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				deleted = true
				return true, nil, tt.deleteErr
			})
			out, err := (&Remover{Metadata: md}).Remove(t.Context(), target, DryRunNone)
			if err == nil || !strings.Contains(err.Error(), tt.want) || out.Deleted || out.Result == Removed {
				t.Errorf("%+v, %v; want not deleted: %s", out, err, tt.want)
			}
		})
	}
}

// TestTheAnswerToTheDeleteTellsAnUnsafeDeletionFromAnOrdinaryOne: the unsafe deleter
// answers with a bare Status; an API server without the gate drops the option and answers
// with the object it deletes the ordinary way. Only the first is reported deleted without
// reading it.
func TestTheAnswerToTheDeleteTellsAnUnsafeDeletionFromAnOrdinaryOne(t *testing.T) {
	cms := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	target := plan.Target{Ref: kube.Ref{Resource: cms, Namespace: "a", Name: "bad"}, Kind: plan.UnsafeDelete, Key: "/configmaps/a/bad"}
	for _, tt := range []struct {
		name, answer, want string
	}{
		{"the unsafe deleter's Status", `{"kind":"Status","apiVersion":"v1","status":"Success","code":200,"details":{"name":"bad","kind":"configmaps"}}`, ""},
		{"an ordinary deletion's object", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bad","namespace":"a","uid":"u1"}}`, "answered the DELETE with the object, as an ordinary deletion does"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sent map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.Method != http.MethodDelete || req.URL.Path != "/api/v1/namespaces/a/configmaps/bad" {
					http.Error(w, "unexpected "+req.Method+" "+req.URL.Path, http.StatusBadRequest)
					return
				}
				_ = json.NewDecoder(req.Body).Decode(&sent)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.answer))
			}))
			defer srv.Close()
			raw, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: clientscheme.Codecs.WithoutConversion()}})
			if err != nil {
				t.Fatal(err)
			}
			md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			deleted := false
			md.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if deleted {
					return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "bad")
				}
				return true, nil, apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /configmaps/a/bad, ResourceVersion: 0, AdditionalErrorMsg: x"))
			})
			r := &Remover{Metadata: md, Raw: &deleting{Interface: raw, deleted: &deleted}}
			out, err := r.Remove(t.Context(), target, DryRunNone)
			if sent["ignoreStoreReadErrorWithClusterBreakingPotential"] != true {
				t.Errorf("DELETE body %v", sent)
			}
			switch {
			case tt.want == "" && (err != nil || out.Result != Removed || !out.Deleted):
				t.Errorf("%+v, %v; want deleted", out, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || out.Result == Removed):
				t.Errorf("%+v, %v; want %q", out, err, tt.want)
			}
		})
	}
}

// deleting is a REST client that marks the object deleted once a DELETE is made.
type deleting struct {
	rest.Interface
	deleted *bool
}

func (d *deleting) Delete() *rest.Request {
	*d.deleted = true
	return d.Interface.Delete()
}
