package write

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

var secrets = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}

// TestTheBackupOfASecretHoldsNoValue: the values of a Secret, and kubectl's copy of them
// in last-applied-configuration, never reach the backup; its keys are named. The folder
// is 0700 and the file 0600.
func TestTheBackupOfASecretHoldsNoValue(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db-credentials", UID: "uid-s",
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"hunter2"}}`, "team": "data"}},
		Data:       map[string][]byte{"password": []byte("hunter2"), "user": []byte("admin")},
		StringData: map[string]string{"token": "s3cr3t"},
	}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme, sec)
	dir := filepath.Join(t.TempDir(), "backups")
	path, err := Backup(context.Background(), dyn, dir, plan.Target{Ref: kube.Ref{Resource: secrets, Namespace: "a", Name: "db-credentials", UID: "uid-s"}, Finalizer: "x.example.com/y"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "aHVudGVyMg==", "admin", "YWRtaW4=", "s3cr3t", "last-applied-configuration"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the backup holds %q:\n%s", secret, b)
		}
	}
	if !strings.Contains(string(b), RedactedAnnotation+": password,token,user") || !strings.Contains(string(b), "team: data") {
		t.Errorf("the backup does not name the redacted keys, or lost the rest:\n%s", b)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %04o", p, fi.Mode().Perm(), err, want)
		}
	}
}

// TestABackupFolderOthersMayReadIsRefused: backups hold whole objects, so a folder that
// is group- or world-readable is refused, and nothing is written to it.
func TestABackupFolderOthersMayReadIsRefused(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg", UID: "uid-1"}}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme, cm)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Backup(context.Background(), dyn, dir, plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: "x.example.com/y"})
	if err == nil || !strings.Contains(err.Error(), "may be read by others (mode 0755)") {
		t.Fatalf("err %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written to a refused folder: %v", entries)
	}
}

func TestTheAuditLogIsTheOwnersOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	f, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a new audit log: mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	// An existing log others may read keeps its mode; one others may write is refused.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := openLog(path); err != nil {
		t.Errorf("a log others may read: %v", err)
	} else {
		f.Close()
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := openLog(path); err == nil || !strings.Contains(err.Error(), "may be written by others (mode 0666): chmod go-w it") {
		t.Errorf("a log others may write: %v", err)
	}
}
