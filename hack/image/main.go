// Command image packages files into a single-layer OCI image and writes it as an image
// archive that `ctr images import` (and `docker load`) reads. Nothing is pulled: the image
// starts empty, so it builds where no registry can be reached.
//
// It makes the test node's pause image and the images the node tests run, and is meant
// for the release image's base as well (a nonroot user, CA certificates, tzdata):
//
//	go -C hack/image run . -tag kubectl-finalize.test/pause:1 -out pause.tar \
//	    -add /tmp/pause:/pause -entrypoint /pause -user 65535:65535
//
// -add SRC:DST copies a file or a folder (recursively) to DST in the image; -passwd
// NAME:UID:GID adds /etc/passwd and /etc/group entries for a user; -dir PATH:MODE:UID:GID
// adds an empty folder (a home, /tmp). Files keep their mode; owners are root unless
// -chown UID:GID is given for the added files. Links inside added folders are followed
// unless -symlinks keeps them as links (tzdata's aliases, as Debian's package ships them).
// hack/release/base.sh builds the release image's base with it.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	tag, out, layoutDir, user, workdir, platform, chown string
	adds, entrypoint, cmd, env, passwd, labels, dirs    list
	symlinks                                            bool
}

func main() {
	var o options
	flag.StringVar(&o.tag, "tag", "", "the image's name, e.g. kubectl-finalize.test/pause:1 (required)")
	flag.StringVar(&o.out, "out", "", "write an image archive here (docker save format, which ctr imports)")
	flag.StringVar(&o.layoutDir, "layout", "", "also (or instead) write the image into this OCI layout folder")
	flag.StringVar(&o.user, "user", "", "the user the image runs as, e.g. 65532:65532")
	flag.StringVar(&o.workdir, "workdir", "", "the working directory")
	flag.StringVar(&o.platform, "platform", "linux/amd64", "os/arch[/variant] of the image")
	flag.StringVar(&o.chown, "chown", "0:0", "UID:GID owning the added files")
	flag.Var(&o.adds, "add", "SRC:DST: copy a file or folder into the image (repeatable)")
	flag.Var(&o.entrypoint, "entrypoint", "an entrypoint argument (repeatable)")
	flag.Var(&o.cmd, "cmd", "a cmd argument (repeatable)")
	flag.Var(&o.env, "env", "KEY=VALUE (repeatable)")
	flag.Var(&o.passwd, "passwd", "NAME:UID:GID: a user and group in /etc/passwd and /etc/group (repeatable)")
	flag.Var(&o.labels, "label", "KEY=VALUE (repeatable)")
	flag.Var(&o.dirs, "dir", "PATH:MODE:UID:GID: an empty folder, e.g. /tmp:1777:0:0 (repeatable)")
	flag.BoolVar(&o.symlinks, "symlinks", false, "keep symbolic links inside added folders as links instead of copying what they point at")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.tag == "" || (o.out == "" && o.layoutDir == "") {
		return errors.New("-tag and one of -out or -layout are required")
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return err
	}
	platform, err := v1.ParsePlatform(o.platform)
	if err != nil {
		return err
	}
	owner, err := parseOwner(o.chown)
	if err != nil {
		return err
	}
	layerTar, err := buildLayer(o, owner)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = o.entrypoint
	cf.Config.Cmd = o.cmd
	cf.Config.Env = o.env
	if !slices.ContainsFunc(o.env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		cf.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, o.env...)
	}
	cf.Config.User = o.user
	cf.Config.WorkingDir = o.workdir
	if len(o.labels) > 0 {
		cf.Config.Labels = map[string]string{}
		for _, l := range o.labels {
			k, v, _ := strings.Cut(l, "=")
			cf.Config.Labels[k] = v
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if o.out != "" {
		if err := tarball.WriteToFile(o.out, ref, img); err != nil {
			return fmt.Errorf("writing %s: %w", o.out, err)
		}
	}
	if o.layoutDir != "" {
		p, err := layout.FromPath(o.layoutDir)
		if err != nil {
			if p, err = layout.Write(o.layoutDir, empty.Index); err != nil {
				return err
			}
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()}), layout.WithPlatform(*platform)); err != nil {
			return err
		}
	}
	return nil
}

type ownerIDs struct{ uid, gid int }

func parseOwner(s string) (ownerIDs, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil {
		return ownerIDs{}, fmt.Errorf("-chown %q: want UID:GID", s)
	}
	return ownerIDs{uid, gid}, nil
}

// buildLayer writes one tar layer with the added files, the folders above them and the
// passwd entries, in a stable order with fixed times, so the same input gives the same
// digest.
func buildLayer(o options, owner ownerIDs) ([]byte, error) {
	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	epoch := time.Unix(0, 0).UTC()
	addDirs := func(p string) {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := files[d]; !ok {
				files[d] = &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}
			}
		}
	}
	put := func(dst string, mode int64, body []byte) {
		addDirs(dst)
		files[dst] = &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Mode: mode, Size: int64(len(body)), ModTime: epoch, Uid: owner.uid, Gid: owner.gid}
		contents[dst] = body
	}
	for _, d := range o.dirs {
		parts := strings.Split(d, ":")
		if len(parts) != 4 || !path.IsAbs(parts[0]) {
			return nil, fmt.Errorf("-dir %q: want /PATH:MODE:UID:GID", d)
		}
		mode, err := strconv.ParseInt(parts[1], 8, 64)
		if err != nil {
			return nil, fmt.Errorf("-dir %q: mode: %w", d, err)
		}
		ids, err := parseOwner(parts[2] + ":" + parts[3])
		if err != nil {
			return nil, fmt.Errorf("-dir %q: %w", d, err)
		}
		p := path.Clean(parts[0])
		addDirs(p)
		// The sticky bit of /tmp is a tar mode bit (c_ISVTX), not part of fs.FileMode's perm.
		files[p] = &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: mode, ModTime: epoch, Uid: ids.uid, Gid: ids.gid}
	}
	for _, a := range o.adds {
		src, dst, ok := strings.Cut(a, ":")
		if !ok || !path.IsAbs(dst) {
			return nil, fmt.Errorf("-add %q: want SRC:/absolute/DST", a)
		}
		dst = path.Clean(dst)
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			target := path.Join(dst, filepath.ToSlash(rel))
			if o.symlinks && rel != "." && d.Type()&fs.ModeSymlink != 0 {
				link, err := os.Readlink(p)
				if err != nil {
					return err
				}
				addDirs(target)
				files[target] = &tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(target, "/"), Linkname: link, Mode: 0o777, ModTime: epoch}
				return nil
			}
			info, err := os.Stat(p) // follows links: the image gets what they point at
			if err != nil {
				return err
			}
			if info.IsDir() {
				addDirs(target + "/x")
				return nil
			}
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			put(target, int64(info.Mode().Perm()), body)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("-add %q: %w", a, err)
		}
	}
	if len(o.passwd) > 0 {
		var pw, gr strings.Builder
		pw.WriteString("root:x:0:0:root:/root:/sbin/nologin\n")
		gr.WriteString("root:x:0:\n")
		for _, e := range o.passwd {
			parts := strings.Split(e, ":")
			if len(parts) != 3 {
				return nil, fmt.Errorf("-passwd %q: want NAME:UID:GID", e)
			}
			fmt.Fprintf(&pw, "%s:x:%s:%s:%s:/home/%s:/sbin/nologin\n", parts[0], parts[1], parts[2], parts[0], parts[0])
			fmt.Fprintf(&gr, "%s:x:%s:\n", parts[0], parts[2])
		}
		saved := owner
		owner = ownerIDs{}
		put("/etc/passwd", 0o644, []byte(pw.String()))
		put("/etc/group", 0o644, []byte(gr.String()))
		owner = saved
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(files[n]); err != nil {
			return nil, err
		}
		if body, ok := contents[n]; ok {
			if _, err := tw.Write(body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
