// Package derive derives from .goreleaser.yaml the configurations the project builds
// where a release cannot run: one platform only (hostconfig, for `make verify`), and the
// release image pushed to a registry on loopback from a base built here (image).
package derive

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// perPlatform are the build keys that multiply or filter the goos × goarch targets; a
// build that uses one cannot be cut to one platform by its goos and goarch alone.
var perPlatform = []string{"targets", "ignore", "goarm", "goarm64", "goamd64", "go386", "gomips", "goppc64", "goriscv64"}

// Host returns src with every build's goos and goarch cut to [goos] and [goarch].
func Host(src []byte, goos, goarch string) ([]byte, error) {
	doc, err := parse(src)
	if err != nil {
		return nil, err
	}
	if err := cutBuilds(doc, goos, goarch); err != nil {
		return nil, err
	}
	return encode(doc)
}

func parse(src []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	return &doc, nil
}

// cutBuilds cuts every build's goos and goarch lists of doc to one platform.
func cutBuilds(doc *yaml.Node, goos, goarch string) error {
	builds := value(doc.Content[0], "builds")
	if builds == nil || builds.Kind != yaml.SequenceNode || len(builds.Content) == 0 {
		return errors.New("no builds list")
	}
	for i, b := range builds.Content {
		if b.Kind != yaml.MappingNode {
			return fmt.Errorf("builds[%d] is not a mapping", i)
		}
		for _, k := range perPlatform {
			if value(b, k) != nil {
				return fmt.Errorf("builds[%d] sets %s: cutting goos and goarch would not make it one platform; update hack/release/internal/derive", i, k)
			}
		}
		for key, want := range map[string]string{"goos": goos, "goarch": goarch} {
			list := value(b, key)
			if list == nil || list.Kind != yaml.SequenceNode {
				return fmt.Errorf("builds[%d] has no %s list; update hack/release/internal/derive", i, key)
			}
			var have []string
			for _, n := range list.Content {
				have = append(have, n.Value)
			}
			if !slices.Contains(have, want) {
				return fmt.Errorf("builds[%d] does not build %s %s (it builds %v)", i, key, want, have)
			}
			list.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: want}}
		}
	}
	return nil
}

func encode(doc *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// value returns the value of key in the mapping m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
