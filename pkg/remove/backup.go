package remove

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// Backup writes the whole object as YAML into dir before a removal, and returns the
// file's path. The file is complete on disk before the removal begins, or the removal
// does not happen.
func Backup(ctx context.Context, dyn dynamic.Interface, dir string, t Target) (string, error) {
	var r dynamic.ResourceInterface = dyn.Resource(t.Resource.GroupVersionResource)
	if t.Namespace != "" {
		r = dyn.Resource(t.Resource.GroupVersionResource).Namespace(t.Namespace)
	}
	u, err := r.Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading %s for its backup: %w", t.Ref(), err)
	}
	if u.GetUID() != t.UID {
		return "", fmt.Errorf("backing up %s: %w", t.String(), ErrUIDChanged)
	}
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the backup folder: %w", err)
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
