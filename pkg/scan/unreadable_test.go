package scan

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// storeLister lists like the API server reads etcd: names in key order, pages of Limit
// from a continue token's start, and a page that reaches an unreadable name fails,
// without naming it (no AllowUnsafeMalformedObjectDeletion gate).
type storeLister struct {
	metadata.ResourceInterface
	names []string
	bad   map[string]bool
	calls int
	// encrypted: the bad keys were encrypted with a key rotated away, and the API
	// server's error names the first one a list reaches.
	encrypted bool
}

func (s *storeLister) failure(name string) error {
	if s.encrypted {
		return apierrors.NewInternalError(fmt.Errorf("unable to transform key %q: no matching key was found for the provided AES transformer", "/registry/configmaps/a/"+name))
	}
	return apierrors.NewInternalError(errors.New("proto: wrong wireType = 7 for field TypeMeta"))
}

func (s *storeLister) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	s.calls++
	start := ""
	if opts.Continue != "" {
		var err error
		if start, _, err = tokenStart(opts.Continue); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		// As the API server's DecodeContinue: a start that path.Clean changes is refused.
		if key := "/" + start; path.Clean(key) != key {
			return nil, apierrors.NewBadRequest("continue key is not valid: " + start)
		}
	}
	i := sort.SearchStrings(s.names, start)
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for ; i < len(s.names); i++ {
		if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
			out.Continue, _ = continueToken(42, out.Items[len(out.Items)-1].Name+"\x00")
			break
		}
		if s.bad[s.names[i]] {
			return nil, s.failure(s.names[i])
		}
		out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: s.names[i]}})
	}
	return out, nil
}

func (s *storeLister) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*metav1.PartialObjectMetadata, error) {
	s.calls++
	switch {
	case s.bad[name]:
		return nil, s.failure(name)
	case slices.Contains(s.names, name):
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

// TestTheWalkFindsAnUnreadableObjectWithoutTheGate: the API server names no key; the
// walk reads every readable object, pinpoints each unreadable one by where lists fail,
// proves it by a GET, and goes on after it.
func TestTheWalkFindsAnUnreadableObjectWithoutTheGate(t *testing.T) {
	configmaps := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	for _, tt := range []struct {
		name  string
		names []string
		bad   []string
	}{
		{"in the middle", []string{"a", "b-fine", "c-bad", "d", "e"}, []string{"c-bad"}},
		{"first", []string{"aaa-bad", "b", "c"}, []string{"aaa-bad"}},
		{"last, a long name", []string{"a", "kube-root-ca.crt", "zz-9.0_Z-very-long-name-of-a-config"}, []string{"zz-9.0_Z-very-long-name-of-a-config"}},
		{"a prefix of the next", []string{"a", "web", "web-config", "x"}, []string{"web"}},
		{"two apart", []string{"a-bad", "b", "c", "d-bad", "e"}, []string{"a-bad", "d-bad"}},
		{"the only one", []string{"only-bad"}, []string{"only-bad"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sort.Strings(tt.names)
			store := &storeLister{names: tt.names, bad: map[string]bool{}}
			for _, b := range tt.bad {
				store.bad[b] = true
			}
			w := &walker{lister: store, r: configmaps, namespace: "a", rv: 42}
			var tr typeResult
			tr.activity = map[string]time.Time{}
			err := (&Scanner{}).listPagesOf(context.Background(), store, configmaps, Options{}, metav1.ListOptions{Limit: 2}, now, &tr, w)
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, u := range tr.unreadable {
				found = append(found, u.Name)
				if u.Uncertain == "" || u.Message == "" {
					t.Errorf("%s: %+v", u.Name, u)
				}
			}
			if !slices.Equal(found, tt.bad) {
				t.Errorf("found %q, want %q", found, tt.bad)
			}
			if want := int64(len(tt.names) - len(tt.bad)); tr.seen != want {
				t.Errorf("read %d objects, want %d", tr.seen, want)
			}
			t.Logf("%d requests", store.calls)
		})
	}
}

// TestAWalkThatCannotTellReportsWhatItDidNotRead: two unreadable keys with a readable one
// between them whose name the search cannot tell apart from theirs ("b1", "b5-stuck",
// "c"): the search finds the later one, and what lies between is reported not read, not
// silently skipped.
func TestAWalkThatCannotTellReportsWhatItDidNotRead(t *testing.T) {
	configmaps := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	store := &storeLister{names: []string{"a", "b1", "b5-stuck", "c", "d"}, bad: map[string]bool{"b1": true, "c": true}}
	w := &walker{lister: store, r: configmaps, namespace: "ns", rv: 42}
	tr := typeResult{activity: map[string]time.Time{}}
	if err := (&Scanner{}).listPagesOf(context.Background(), store, configmaps, Options{}, metav1.ListOptions{Limit: 2}, now, &tr, w); err != nil {
		t.Fatal(err)
	}
	if tr.seen == 3 {
		return // every readable object was read: nothing to report
	}
	if len(tr.incomplete) == 0 {
		t.Fatalf("read %d of 3 readable objects, and reported nothing incomplete: %+v", tr.seen, tr.unreadable)
	}
	for _, in := range tr.incomplete {
		if in.Namespace != "ns" || !strings.Contains(in.Message, "were not read, and stuck objects may be among them") {
			t.Errorf("incomplete %+v", in)
		}
	}
}

func TestStorageFailure(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewInternalError(errors.New("proto: wrong wireType = 7 for field TypeMeta")), true},
		{apierrors.NewInternalError(errors.New("unable to transform key \"/registry/secrets/a/s\": no matching prefix found")), true},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: "StorageReadError", Message: "failed to read one or more secrets from the storage"}}, true},
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), false},
		{apierrors.NewInternalError(errors.New(`failed to decrypt: rpc error: code = Unavailable desc = connection error: dial unix /var/run/kms.sock`)), false},
		{apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1 failed")), false},
		{apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: failed to decode the response: proto: wrong wireType`)), false},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("decrypt")), false},
	} {
		if got := storageFailure(tt.err); got != tt.want {
			t.Errorf("storageFailure(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestCorruptObject: only the storage layer's "corrupt object", which the API server gives
// with the AllowUnsafeMalformedObjectDeletion gate, counts, with the key it names.
func TestCorruptObject(t *testing.T) {
	for _, tt := range []struct {
		err     error
		key     string
		corrupt bool
	}{
		{apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/a/bad, ResourceVersion: 0, AdditionalErrorMsg: object not decodable")),
			"/registry/configmaps/a/bad", true},
		{apierrors.NewInternalError(errors.New("proto: wrong wireType = 7 for field TypeMeta")), "", false},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "bad", errors.New("StorageError: corrupt object, Code: 7, Key: /x")), "", false},
		{nil, "", false},
	} {
		key, ok := CorruptObject(tt.err)
		if key != tt.key || ok != tt.corrupt {
			t.Errorf("CorruptObject(%v) = %q, %v; want %q, %v", tt.err, key, ok, tt.key, tt.corrupt)
		}
	}
}

// TestAKeyTheTransformerNamesIsNotSearchedFor: without the gate, the error of a list that
// reaches an object encrypted with a key rotated away names its key: the walk proves it
// with a GET and goes on, with no search and nothing left uncertain.
func TestAKeyTheTransformerNamesIsNotSearchedFor(t *testing.T) {
	configmaps := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	store := &storeLister{names: []string{"a", "b-lost", "c", "d-lost", "e"}, bad: map[string]bool{"b-lost": true, "d-lost": true}, encrypted: true}
	w := &walker{lister: store, r: configmaps, namespace: "a", rv: 42}
	tr := typeResult{activity: map[string]time.Time{}}
	if err := (&Scanner{}).listPagesOf(context.Background(), store, configmaps, Options{}, metav1.ListOptions{Limit: 2}, now, &tr, w); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, u := range tr.unreadable {
		found = append(found, u.Name)
		if u.Key != "/registry/configmaps/a/"+u.Name || u.Uncertain != "" || !strings.Contains(u.Message, "unable to transform key") {
			t.Errorf("%+v", u)
		}
	}
	if !slices.Equal(found, []string{"b-lost", "d-lost"}) || tr.seen != 3 {
		t.Errorf("found %q and read %d; want b-lost, d-lost and 3", found, tr.seen)
	}
	if store.calls > 12 {
		t.Errorf("%d requests for 5 objects: the named keys were searched for", store.calls)
	}
}

// TestASearchHasATimeBudget: a search that would take longer than maxSearchTime gives up,
// and the namespace's objects of the type are reported not read, saying how long it took.
func TestASearchHasATimeBudget(t *testing.T) {
	defer func(d time.Duration) { maxSearchTime = d }(maxSearchTime)
	maxSearchTime = 0
	configmaps := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	store := &storeLister{names: []string{"a", "b-bad", "c"}, bad: map[string]bool{"b-bad": true}}
	w := &walker{lister: store, r: configmaps, namespace: "a", rv: 42}
	tr := typeResult{activity: map[string]time.Time{}}
	err := (&Scanner{}).listPagesOf(context.Background(), store, configmaps, Options{}, metav1.ListOptions{Limit: 2}, now, &tr, w)
	if err == nil || !strings.Contains(err.Error(), "gave up after 1 lists in") {
		t.Errorf("listPagesOf: %v, unreadable %+v; want the search given up", err, tr.unreadable)
	}
}

// TestCorruptObjectIsTheWholeAnswer: the words inside another answer, a message with no
// key, or a key that is not one, are no proof.
func TestCorruptObjectIsTheWholeAnswer(t *testing.T) {
	for _, msg := range []string{
		`an error on the server ("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/a/bad, ResourceVersion: 0, AdditionalErrorMsg: x") has prevented the request from succeeding`,
		"StorageError: corrupt object, Code: 7, AdditionalErrorMsg: x",
		"StorageError: corrupt object, Code: 7, Key: , ResourceVersion: 0, AdditionalErrorMsg: x",
		"admission webhook said: StorageError: corrupt object, Code: 7, Key: /registry/configmaps/a/bad, ResourceVersion: 0",
	} {
		if key, ok := CorruptObject(apierrors.NewInternalError(errors.New(msg))); ok {
			t.Errorf("%q: proof of the gate (key %q)", msg, key)
		}
	}
}

// TestAKeyIsNotAWordOfTheError: an unreadable object whose name or namespace holds a word
// of a failure of the moment is still an object's storage failure.
func TestAKeyIsNotAWordOfTheError(t *testing.T) {
	for _, msg := range []string{
		`unable to transform key "/registry/secrets/timeout-tests/req-timeout": no matching key was found for the provided AES transformer`,
		"StorageError: corrupt object, Code: 7, Key: /registry/configmaps/timeout-tests/req-timeout, ResourceVersion: 0, AdditionalErrorMsg: object not decodable: proto: wrong wireType",
	} {
		if !storageFailure(apierrors.NewInternalError(errors.New(msg))) {
			t.Errorf("%q is not a storage failure", msg)
		}
	}
	for _, msg := range []string{
		`unable to transform key "/registry/secrets/a/s": rpc error: code = DeadlineExceeded`,
		// A word quoted elsewhere than the key still counts.
		`StorageError: corrupt object, Code: 7, Key: /registry/secrets/a/s, ResourceVersion: 0, AdditionalErrorMsg: failed to decrypt DEK, error: rpc error: code = Unknown desc = kms: "dial tcp 10.0.0.1:443: i/o timeout"`,
		// A "Key: " without the field's end is not cut to the end of the message.
		`failed to decrypt DEK: the plugin said Key: arn:aws:kms:eu-west-1:1:key/x is unavailable: deadline exceeded`,
	} {
		if storageFailure(apierrors.NewInternalError(errors.New(msg))) {
			t.Errorf("%q: a failure of the moment is an object's failure", msg)
		}
	}
}
