package derive

import (
	"errors"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// ImageOptions say where the derived release image is built from and pushed to.
type ImageOptions struct {
	GOARCH     string // the one platform built: linux/GOARCH
	Base       string // the base's reference, replacing every kos[].base_image
	Repository string // the repository pushed to, replacing every kos[].repositories
	Dist       string // goreleaser's dist folder
}

// releaseKeys are the top-level keys the image's release keeps: what decides how the
// image is built. Anything else (archives, SBOMs of archives, checksums, the changelog,
// the GitHub release, any publisher added later) is dropped, so the derived release can
// publish nowhere but the registry it is given.
var releaseKeys = []string{"version", "project_name", "env", "before", "gomod", "git", "builds", "kos"}

// Image returns src cut to what builds and publishes the release image for linux/GOARCH
// alone, from o.Base to o.Repository: every build cut to that platform (as Host does)
// and skipped,
// every kos entry's base_image, repositories and platforms replaced, the other keys of
// releaseKeys unchanged, the GitHub release and the changelog disabled. It fails rather
// than build something else when a kos entry does not build linux/GOARCH, or names its
// repository in a way it does not replace.
func Image(src []byte, o ImageOptions) ([]byte, error) {
	if o.GOARCH == "" || o.Base == "" || o.Repository == "" || o.Dist == "" {
		return nil, errors.New("GOARCH, Base, Repository and Dist are required")
	}
	doc, err := parse(src)
	if err != nil {
		return nil, err
	}
	if err := cutBuilds(doc, "linux", o.GOARCH); err != nil {
		return nil, err
	}
	top := doc.Content[0]
	// The builds are not built (the archives are not made), but they stay: ko takes its
	// defaults from the build it names (flags, env, dir), as in the release.
	for _, b := range value(top, "builds").Content {
		set(b, "skip", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	kos := value(top, "kos")
	if kos == nil || kos.Kind != yaml.SequenceNode || len(kos.Content) == 0 {
		return nil, errors.New("no kos list: the release builds no image")
	}
	platform := "linux/" + o.GOARCH
	for i, k := range kos.Content {
		if k.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("kos[%d] is not a mapping", i)
		}
		if value(k, "repository") != nil {
			return nil, fmt.Errorf("kos[%d] sets the deprecated repository; use repositories or update hack/release/internal/derive", i)
		}
		platforms := value(k, "platforms")
		if platforms == nil || platforms.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("kos[%d] has no platforms list; update hack/release/internal/derive", i)
		}
		var have []string
		for _, n := range platforms.Content {
			have = append(have, n.Value)
		}
		if !slices.Contains(have, platform) {
			return nil, fmt.Errorf("kos[%d] does not build %s (it builds %v)", i, platform, have)
		}
		set(k, "platforms", strs(platform))
		set(k, "base_image", str(o.Base))
		set(k, "repositories", strs(o.Repository))
	}
	kept := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if slices.Contains(releaseKeys, top.Content[i].Value) {
			kept.Content = append(kept.Content, top.Content[i], top.Content[i+1])
		}
	}
	set(kept, "dist", str(o.Dist))
	set(kept, "release", mapping("disable", "true"))
	set(kept, "changelog", mapping("disable", "true"))
	doc.Content[0] = kept
	return encode(doc)
}

// set sets key in the mapping m to v, adding it when absent.
func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, str(key), v)
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func strs(s ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range s {
		n.Content = append(n.Content, str(v))
	}
	return n
}

func mapping(key, boolean string) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str(key), {Kind: yaml.ScalarNode, Tag: "!!bool", Value: boolean}}}
}
