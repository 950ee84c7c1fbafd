package gateoff

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// The aescbc keys: current is the one main_test.go's encryption configuration holds; old
// is one it no longer holds (rotated away).
var (
	currentKey = []byte("secret is secure, or is it? 1234")
	oldKey     = []byte("an old key, rotated away in 2025")
)

// reencrypt is a Secret as etcd holds it, encrypted with the aescbc key current, as it
// would be had it been written with the key old: decrypted with current, encrypted with
// old under old's prefix, the format of k8s.io/apiserver's aescbc transformer (a random
// IV, then AES-CBC with PKCS#7 padding).
func reencrypt(t *testing.T, stored []byte) []byte {
	t.Helper()
	const prefix = "k8s:enc:aescbc:v1:current:"
	if !bytes.HasPrefix(stored, []byte(prefix)) {
		t.Fatalf("the Secret is not encrypted with the key current: %q", stored)
	}
	data := stored[len(prefix):]
	block, err := aes.NewCipher(currentKey)
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, len(data)-aes.BlockSize)
	cipher.NewCBCDecrypter(block, data[:aes.BlockSize]).CryptBlocks(plain, data[aes.BlockSize:])
	plain = plain[:len(plain)-int(plain[len(plain)-1])] // PKCS#7
	if !bytes.HasPrefix(plain, []byte("k8s\x00")) {
		t.Fatalf("decrypted with the key current, the Secret is not the API server's protobuf: %q", plain)
	}
	block, err = aes.NewCipher(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	out := make([]byte, aes.BlockSize+len(plain)+pad)
	if _, err := rand.Read(out[:aes.BlockSize]); err != nil {
		t.Fatal(err)
	}
	copy(out[aes.BlockSize:], plain)
	copy(out[aes.BlockSize+len(plain):], bytes.Repeat([]byte{byte(pad)}, pad))
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], out[aes.BlockSize:])
	return append([]byte("k8s:enc:aescbc:v1:old:"), out...)
}

// TestASecretWhoseKeyWasRotatedAway: a Secret encrypted at rest with a key the API
// server's encryption configuration no longer has (its bytes are the Secret's, encrypted
// with that key) fails every list of Secrets that reaches
// it. Without the AllowUnsafeMalformedObjectDeletion gate, the API server's error names
// the key it could not decrypt: the scan proves it with a GET, walks past it and finds the
// stuck Secrets on both sides; the doctor says
// the encryption key is the likely cause; remove --unsafe-delete refuses, naming the gate.
func TestASecretWhoseKeyWasRotatedAway(t *testing.T) {
	ctx, kube := t.Context(), cp.Kube(t)
	ns := cp.Namespace(t)
	for _, name := range []string{"a-stuck", "b-lost", "c-stuck"} {
		stuck := strings.HasSuffix(name, "stuck")
		fixture.Create(t, kube.CoreV1().Secrets(ns), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"example.com/hold"}}}, stuck)
	}
	key := controlplane.EtcdPrefix + "/secrets/" + ns + "/b-lost"
	good, err := cp.EtcdGet(ctx, key)
	if err != nil {
		t.Fatalf("etcd key %s: %v", key, err)
	}
	rotatedAway := reencrypt(t, good)
	if err := cp.EtcdPut(ctx, key, rotatedAway); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.EtcdPut(context.Background(), key, good) })
	_, err = kube.CoreV1().Secrets(ns).Get(ctx, "b-lost", metav1.GetOptions{})
	if err == nil || strings.Contains(err.Error(), "corrupt object") {
		t.Fatalf("a GET of the Secret: %v; want the transformer's error, without the gate's", err)
	}
	t.Logf("GET: %v", err)
	r := cli.Run(t, cp.AdminKubeconfig, "scan", "secrets", "-n", ns, "-o", "json")
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("scan: %v (exit %d)\n%s", err, r.Code, r.Stderr)
	}
	got := map[string]*finalizev1alpha1.StuckObject{}
	for i, it := range list.Items {
		got[it.Target.Name] = &list.Items[i]
	}
	for _, want := range []string{"a-stuck", "c-stuck"} {
		if got[want] == nil || got[want].Unreadable != nil {
			t.Errorf("%s is not found stuck: %+v", want, got[want])
		}
	}
	lost := got["b-lost"]
	if lost == nil || lost.Unreadable == nil || lost.Unreadable.Key != key || lost.Unreadable.Uncertain != "" || !strings.Contains(lost.Unreadable.Message, err.Error()) || lost.Target.Kind != "Secret" {
		t.Errorf("the Secret the API server cannot read: %+v\n%s", lost, r.Stdout)
	}
	if r.Code != 0 || len(list.Incomplete) != 0 {
		t.Errorf("exit %d, incomplete %+v\n%s", r.Code, list.Incomplete, r.Stderr)
	}

	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "secrets/b-lost", "-n", ns, "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor: %v (exit %d)\n%s", err, r.Code, r.Stderr)
	}
	var cause *finalizev1alpha1.Cause
	for _, it := range d.Items {
		if it.Unreadable != nil && it.Target.Name == "b-lost" {
			cause = it.Cause
		}
	}
	if cause == nil || cause.Reason != finalizev1alpha1.ReasonUnreadable ||
		!strings.Contains(cause.Message, "it was encrypted at rest with a key the API server's encryption configuration no longer has") ||
		!strings.HasPrefix(cause.NextStep, "restore it first: put the removed key back") {
		t.Errorf("doctor: %+v\n%s", cause, r.Stderr)
	}

	if d.Target == nil || d.Target.Name != "b-lost" || len(d.Items) != 1 || len(d.RootCauses) != 1 || d.RootCauses[0].Reason != finalizev1alpha1.ReasonUnreadable {
		t.Errorf("doctor secrets/b-lost: target %+v, %d items, root causes %+v", d.Target, len(d.Items), d.RootCauses)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "secrets/b-lost", "-n", ns)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "secrets/b-lost -n "+ns+"  (the API server cannot read it") || !strings.Contains(r.Stdout, "\nRoot causes:\n  Unreadable: Secret "+ns+"/b-lost") {
		t.Errorf("doctor secrets/b-lost: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	r = cli.RunWithInput(t, cp.AdminKubeconfig, "b-lost\n", "remove", "secrets/b-lost", "-n", ns, "--unsafe-delete", "--force-unverified", "--reason", "INC-9")
	if r.Code != 1 || !strings.HasPrefix(r.Stderr, "Nothing was removed.") ||
		!strings.Contains(r.Stderr, "secrets/b-lost -n "+ns+": unsafe deletion: the API server cannot read it") ||
		!strings.Contains(r.Stderr, "start every kube-apiserver with --feature-gates=AllowUnsafeMalformedObjectDeletion=true") {
		t.Errorf("remove --unsafe-delete without the gate: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if v, err := cp.EtcdGet(ctx, key); err != nil || !bytes.Equal(v, rotatedAway) {
		t.Errorf("the key %s holds %q (%v) after the refusal", key, v, err)
	}
}
