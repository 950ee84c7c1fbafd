package write

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// RedactedAnnotation names, on the backup of a Secret, the keys whose values were left out.
const RedactedAnnotation = "kubectl-finalize.github.io/redacted-keys"

// Backup writes the whole object as YAML into dir before a removal, and returns the
// file's path. The file is complete on disk before the removal begins, or the removal
// does not happen. The folder is created 0700, and one that others may read is refused;
// the file is 0600. A Secret's values are left out of its backup: its keys are listed in
// the RedactedAnnotation, so no credential is copied to disk.
func Backup(ctx context.Context, dyn dynamic.Interface, dir string, t plan.Target) (string, error) {
	var r dynamic.ResourceInterface = dyn.Resource(t.Resource.GroupVersionResource)
	if t.Namespace != "" {
		r = dyn.Resource(t.Resource.GroupVersionResource).Namespace(t.Namespace)
	}
	u, err := r.Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading %s for its backup: %w", t.Ref, err)
	}
	if u.GetUID() != t.UID {
		return "", fmt.Errorf("backing up %s: %w", t.String(), ErrUIDChanged)
	}
	if t.Resource.Group == "" && t.Resource.Resource == "secrets" {
		leaveOutValues(u.Object)
	}
	// Any other object may hold a value registered with the redactor (a token in a
	// ConfigMap): it is REDACTED before the object is written.
	redact.Object(u.Object)
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the backup folder: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("creating the backup folder: %w", err)
	} else if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return "", fmt.Errorf("the backup folder %s may be read by others (mode %04o), and backups hold whole objects: chmod 700 it, or choose another --backup-dir", dir, mode)
	}
	ns := t.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	name := fmt.Sprintf("%s_%s_%s_%s.yaml", time.Now().UTC().Format("20060102T150405.000Z"), t.Resource.String(), ns, t.Name)
	name = strings.ReplaceAll(name, "/", "_")
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, ".backup-*")
	if err != nil {
		return "", fmt.Errorf("writing the backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing the backup: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing the backup: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing the backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("writing the backup: %w", err)
	}
	return path, nil
}

// leaveOutValues leaves a Secret's values out of obj, and lists its keys in
// RedactedAnnotation.
func leaveOutValues(obj map[string]any) {
	var keys []string
	for _, field := range []string{"data", "stringData"} {
		if m, ok := obj[field].(map[string]any); ok {
			for k := range m {
				keys = append(keys, k)
			}
			delete(obj, field)
		}
	}
	slices.Sort(keys)
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[RedactedAnnotation] = strings.Join(keys, ",")
	// kubectl's last-applied configuration holds the values too.
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
}
