package scan

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Objects the API server cannot read (#35): bytes in etcd it cannot decode (a partial
// write, a bug) or decrypt (a Secret written with an encryption key rotated away). One
// such object fails every list that reaches it. The scan keeps going around it:
//
//   - a cluster-wide list of a namespaced type that fails so is made again namespace by
//     namespace (listEachNamespace): only the namespaces that hold such an object are
//     affected;
//   - in such a namespace (or a cluster-scoped type), the list is walked past each
//     unreadable object (walk): the API server reads etcd in key order, so the page that
//     fails starts at the unreadable key. The key is the one the API server names (with
//     the AllowUnsafeMalformedObjectDeletion gate, its error names every such key), or
//     else found by asking where lists that start at chosen names fail, and then proven
//     by a GET of that name that fails the same way. The list goes on after it.
//
// The cost is paid only when a list fails.

// Unreadable is an object the API server cannot read.
type Unreadable struct {
	Resource  kube.Resource
	Namespace string
	// Name is the object's name; Key its key in etcd, when the API server named it.
	Name, Key string
	// Message is the API server's error on a GET of the object.
	Message string
	// Uncertain says what the scan could not tell about the keys before this one (the
	// API server does not say how many keys a list failed on without the gate).
	Uncertain string
}

// storageFailure reports whether err is the API server failing to read what etcd holds:
// the gate's StorageReadError, or an internal error (500) that says it could not decode,
// transform or decrypt what it read. Any other error (etcd timing out, a conversion
// webhook failing) is no reason to look for an unreadable object: the list fails as
// before.
func storageFailure(err error) bool {
	if apierrors.ReasonForError(err) == "StorageReadError" {
		return true
	}
	if !apierrors.IsInternalError(err) {
		return false
	}
	// Keys and names are not words of the error: an object called "req-timeout" is no
	// timeout.
	msg := strings.ToLower(withoutKeys(err.Error()))
	if strings.Contains(msg, "conversion webhook") {
		// A conversion webhook that fails on what it was sent fails every object of the
		// type it converts, however its error words it ("failed to decode"): the type is
		// broken, not an object's bytes.
		return false
	}
	for _, s := range append(configurationWords, transientWords...) {
		if strings.Contains(msg, s) {
			// A KMS plugin or etcd that does not answer fails every object alike: no
			// object is unreadable, the type is.
			return false
		}
	}
	for _, s := range storageFailureWords {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// withoutKeys is msg without the keys that name objects in it: the storage error's
// "Key: ..., ResourceVersion: " field, and the transformer's "unable to transform key
// \"...\"". Nothing else is taken out: a word of the error quoted elsewhere (a KMS
// plugin's "i/o timeout") still counts.
func withoutKeys(msg string) string {
	if i := strings.Index(msg, "Key: "); i >= 0 {
		if j := strings.Index(msg[i:], ", ResourceVersion: "); j >= 0 {
			msg = msg[:i] + msg[i+j+2:]
		}
	}
	const transform = `unable to transform key "`
	var b strings.Builder
	for {
		i := strings.Index(msg, transform)
		if i < 0 {
			break
		}
		rest := msg[i+len(transform):]
		j := strings.IndexByte(rest, '"')
		if j < 0 {
			break
		}
		b.WriteString(msg[:i+len(transform)])
		msg = rest[j:]
	}
	b.WriteString(msg)
	return b.String()
}

// ErrorWords is err's message, lower-cased, without the keys that name objects in it
// (withoutKeys): what its words can be matched against, whatever an object is called.
func ErrorWords(err error) string { return strings.ToLower(withoutKeys(err.Error())) }

// StorageFailure reports whether err, the answer to a read of one object, is the API
// server failing to read what etcd holds for it (its bytes cannot be decoded or
// decrypted), not a failure of the moment, a permission or a conversion webhook.
func StorageFailure(err error) bool { return storageFailure(err) }

// CorruptObject reports whether err, the answer to a GET, is the storage layer's "corrupt
// object" error, and returns the etcd key it names. The API server gives that error only
// with the AllowUnsafeMalformedObjectDeletion feature gate on (k8s.io/apiserver,
// etcd3.NewStoreWithUnsafeCorruptObjectDeletion): without it, an object it cannot read
// fails with the decoder's or transformer's own error. So it is how a client learns that
// the API server which answered has the gate, for the object's own resource: the proof
// an unsafe deletion needs (pkg/remove/plan, unsafedelete.go).
//
// Only the whole of the API server's message counts: "Internal error occurred:
// StorageError: corrupt object, Code: 7, Key: KEY, ResourceVersion: ..., AdditionalErrorMsg:
// ...", with a key. The same words anywhere else (inside another server's answer that
// client-go wraps, a webhook's message) prove nothing.
func CorruptObject(err error) (key string, ok bool) {
	var st apierrors.APIStatus
	if err == nil || !errors.As(err, &st) || st.Status().Code != 500 || st.Status().Reason != metav1.StatusReasonInternalError {
		return "", false
	}
	const prefix = "Internal error occurred: StorageError: corrupt object, Code: 7, Key: "
	msg := st.Status().Message
	if !strings.HasPrefix(msg, prefix) {
		return "", false
	}
	key = msg[len(prefix):]
	k := strings.Index(key, ", ResourceVersion: ")
	if k <= 0 {
		return "", false
	}
	key = key[:k]
	if !strings.HasPrefix(key, "/") || strings.ContainsAny(key, " ,\"") {
		return "", false
	}
	return key, true
}

// configurationWords are in the errors of an API server whose configuration cannot read
// what it stored, whatever the object: started without the encryption configuration the
// objects were written with.
var configurationWords = []string{"identity transformer tried to read encrypted data"}

// ContinueAfter is a continue token for a list at revision rv that resumes after the key
// of name (in a namespace, or of a cluster-scoped type), in the API server's own format.
func ContinueAfter(rv int64, name string) (string, error) { return continueToken(rv, name+"\x00") }

// transientWords are in the errors of a storage layer that does not answer now (a KMS
// plugin down, etcd timing out): a failure of the moment, not an object's bytes.
var transientWords = []string{"code = unavailable", "code = deadlineexceeded", "deadline exceeded", "connection refused", "timed out", "timeout"}

// storageFailureWords are in the API server's errors when it cannot use what etcd holds:
// decoding (protobuf, JSON), the storage transformers (encryption at rest: "unable to
// transform key", "no matching prefix found", "failed to decrypt"), and the storage
// layer's "corrupt object".
var storageFailureWords = []string{"corrupt object", "decod", "transform", "no matching prefix", "decrypt", "proto:", "wiretype"}

// namedKeys are the etcd keys a list's storage failure names, in the order given: every
// key the gate's StorageReadError names, or, with or without the gate, the key of the
// storage transformer's error ("unable to transform key \"/registry/secrets/a/s\": no
// matching key was found for the provided AES transformer"), which is the first key of the
// list it could not decrypt.
func namedKeys(err error) []string {
	var keys []string
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if strings.HasPrefix(c.Field, "/") {
				keys = append(keys, c.Field)
			}
		}
	}
	if len(keys) > 0 || err == nil {
		return keys
	}
	const transform = `unable to transform key "`
	msg := err.Error()
	for {
		i := strings.Index(msg, transform)
		if i < 0 {
			return keys
		}
		msg = msg[i+len(transform):]
		j := strings.IndexByte(msg, '"')
		if j < 0 {
			return keys
		}
		if key := msg[:j]; strings.HasPrefix(key, "/") {
			keys = append(keys, key)
		}
		msg = msg[j:]
	}
}

// continueToken is the token the API server would give for a list at revision rv that
// resumes at start (a key relative to the list's prefix: "name" in a namespace). Its
// format is the API server's own (k8s.io/apiserver storage: {"v","rv","start"}, base64url).
func continueToken(rv int64, start string) (string, error) {
	b, err := json.Marshal(struct {
		V     string `json:"v"`
		RV    int64  `json:"rv"`
		Start string `json:"start"`
	}{"meta.k8s.io/v1", rv, start})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// tokenStart is where a continue token resumes, and its revision.
func tokenStart(token string) (start string, rv int64, err error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, err
	}
	var t struct {
		V     string `json:"v"`
		RV    int64  `json:"rv"`
		Start string `json:"start"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return "", 0, err
	}
	if t.V != "meta.k8s.io/v1" {
		return "", 0, fmt.Errorf("continue token of version %q", t.V)
	}
	return t.Start, t.RV, nil
}

// nameChars are the characters an object's name may hold, in byte order: the search for
// an unreadable key tries them.
var nameChars = func() []byte {
	var out []byte
	for c := byte('!'); c <= '~'; c++ {
		if c != '/' {
			out = append(out, c)
		}
	}
	return out
}()

// maxNameLength bounds the search: no name is longer.
const maxNameLength = 253

// maxSearchLists bounds the lists one search makes (a name of 30 characters takes a few
// hundred to a couple of thousand); beyond it the search gives up, and the namespace's
// objects of the type are reported incomplete.
const maxSearchLists = 5000

// maxSearchTime bounds the time one search takes: on an API server whose watch cache of
// the type cannot start, every list of it waits seconds before etcd answers, and the
// search's hundreds of lists would take hours. Beyond it the search gives up, as beyond
// maxSearchLists.
var maxSearchTime = 2 * time.Minute

// walker walks one list (a namespace's, or a cluster-scoped type's) past unreadable
// objects.
type walker struct {
	s         *Scanner
	lister    metadata.ResourceInterface
	r         kube.Resource
	namespace string
	// selector is the list's label selector: the search lists with it, as the list did.
	selector string
	// rv is the revision crafted tokens read at.
	rv int64
}

// failsFrom reports whether a list of one object that starts at start fails to read it.
func (w *walker) failsFrom(ctx context.Context, start string) (bool, error) {
	lo := metav1.ListOptions{Limit: 1, LabelSelector: w.selector}
	if start == "." || start == ".." {
		// The API server refuses a start that path.Clean changes; no object is named
		// "." or "..", so the next start after it lists the same keys.
		start += "\x00"
	}
	if start != "" {
		tok, err := continueToken(w.rv, start)
		if err != nil {
			return false, err
		}
		lo.Continue = tok
	}
	_, err := w.lister.List(ctx, lo)
	switch {
	case err == nil:
		return false, nil
	case storageFailure(err):
		return true, nil
	}
	return false, err
}

// search finds the name of the first key after from, where a list that starts at from
// fails: the API server cannot read it. A list of one object that starts at a name S
// fails when the first key at or after S is unreadable, so the name is built character by
// character: at each position, the characters are tried in key order, and the last one
// before a list from there stops failing is the key's. The scan is linear, not binary: a
// list from a later name may fail on another unreadable key further on, and a binary
// search would land there, past readable objects. A run of unreadable keys one after the
// other is found as its last key (the API server does not tell them apart in a list).
func (w *walker) search(ctx context.Context, from string) (string, error) {
	// A list that hangs ends with the budget too.
	ctx, cancel := context.WithTimeout(ctx, maxSearchTime+time.Minute)
	defer cancel()
	lists, started := 0, time.Now()
	fails := func(s string) (bool, error) {
		if s < from {
			s = from
		}
		lists++
		if lists > maxSearchLists {
			return false, fmt.Errorf("gave up after %d lists", maxSearchLists)
		}
		if took := time.Since(started); lists > 1 && took > maxSearchTime {
			return false, fmt.Errorf("gave up after %d lists in %s (the API server took %s a list)", lists-1, took.Round(time.Second), (took / time.Duration(lists-1)).Round(10*time.Millisecond))
		}
		return w.failsFrom(ctx, s)
	}
	prefix := ""
	for len(prefix) < maxNameLength {
		// The first character that can make a name after from with this prefix.
		first := 0
		if strings.HasPrefix(from, prefix) && len(from) > len(prefix) {
			for first < len(nameChars) && nameChars[first] < from[len(prefix)] {
				first++
			}
		}
		c := -1
		for i := first; i < len(nameChars); i++ {
			ok, err := fails(prefix + string(nameChars[i]))
			if err != nil {
				return "", err
			}
			if !ok {
				break
			}
			c = i
		}
		if c < 0 {
			return prefix, nil // no character extends it: the key is prefix itself
		}
		prefix += string(nameChars[c])
	}
	return prefix, nil
}

// prove GETs name and returns the API server's error when it cannot read it, or "" when
// it can (or the object does not exist): then name is not an unreadable object.
func (w *walker) prove(ctx context.Context, name string) (string, error) {
	_, err := w.lister.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return "", nil
	case storageFailure(err):
		return err.Error(), nil
	}
	return "", err
}

// keyName is the name in an etcd key named by the gate's error, if the key is of this
// walker's list: .../<namespace>/<name>, or .../<name> for a cluster-scoped type.
func (w *walker) keyName(key string) (string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return "", false
	}
	name := parts[len(parts)-1]
	// The key's resource part is not checked: the API server stores some types under
	// other names (nodes under minions, ingresses under ingress), and its error names
	// only keys of the list that failed.
	if w.namespace != "" && parts[len(parts)-2] != w.namespace {
		return "", false
	}
	return name, true
}

// locate finds the unreadable objects where a list that resumes at token (from the start
// when empty) failed with err, and returns them with the name to resume after.
func (w *walker) locate(ctx context.Context, token string, after string, err error) ([]Unreadable, string, error) {
	from := ""
	if token != "" {
		start, rv, terr := tokenStart(token)
		if terr != nil {
			return nil, "", fmt.Errorf("%w (and its continue token cannot be read to walk past it: %w)", err, terr)
		}
		from, w.rv = start, rv
	}
	if w.rv == 0 {
		// A revision to read at: the namespaces' list's.
		nss, rerr := w.s.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
		if rerr != nil {
			return nil, "", fmt.Errorf("%w (and the revision to walk past it could not be read: %w)", err, rerr)
		}
		if _, rerr := fmt.Sscan(nss.ResourceVersion, &w.rv); rerr != nil {
			return nil, "", fmt.Errorf("%w (revision %q: %w)", err, nss.ResourceVersion, rerr)
		}
	}
	// The gate's error names the keys.
	var found []Unreadable
	last := ""
	for _, key := range namedKeys(err) {
		name, ok := w.keyName(key)
		if !ok || name < from {
			continue
		}
		msg, perr := w.prove(ctx, name)
		if perr != nil {
			return nil, "", perr
		}
		if msg == "" {
			continue
		}
		found = append(found, Unreadable{Resource: w.r, Namespace: w.namespace, Name: name, Key: key, Message: msg})
		last = max(last, name)
	}
	if len(found) > 0 {
		return found, last, nil
	}
	name, serr := w.search(ctx, from)
	if serr != nil {
		return nil, "", fmt.Errorf("%w (and finding the object it cannot read failed: %w)", err, serr)
	}
	msg, perr := w.prove(ctx, name)
	if perr != nil {
		return nil, "", perr
	}
	if msg == "" {
		return nil, "", fmt.Errorf("%w (an object after %q cannot be read, and its name could not be found)", err, after)
	}
	u := Unreadable{Resource: w.r, Namespace: w.namespace, Name: name, Message: msg}
	u.Uncertain = "the objects between it and the last one read"
	if after != "" {
		u.Uncertain = "the objects between " + after + " and it"
	}
	u.Uncertain += " were not read, and stuck objects may be among them: without the AllowUnsafeMalformedObjectDeletion gate the API server does not say which keys a list failed on"
	klog.V(1).InfoS("Found an object the API server cannot read", "resource", w.r.String(), "namespace", w.namespace, "name", name)
	return []Unreadable{u}, name, nil
}

// Stuck is u as a row of a StuckObjectList: its type, namespace and name, and what the
// API server said; its deletion and finalizers are not known.
func (u Unreadable) Stuck() finalizev1alpha1.StuckObject {
	return finalizev1alpha1.StuckObject{
		Target:     u.Resource.Ref(u.Namespace, u.Name, ""),
		Finalizers: []finalizev1alpha1.Finalizer{},
		Unreadable: &finalizev1alpha1.Unreadable{Key: u.Key, Message: u.Message, Uncertain: u.Uncertain},
	}
}
