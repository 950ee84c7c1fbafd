package util

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// NoArgs rejects positional arguments as an invalid invocation (exit code 2).
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return UsageErrorf(cmd, "unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return UsageErrorf(cmd, "unexpected argument %q", args[0])
}

// ObjectArg is one object that a command's arguments name: its type as given, and its
// name.
type ObjectArg struct {
	Type, Name string
}

// ParseObjectArgs reads kubectl's two ways of naming objects: TYPE/NAME..., or TYPE
// NAME.... At least one object must be named.
func ParseObjectArgs(args []string) ([]ObjectArg, error) {
	if len(args) == 0 {
		return nil, UsageErrorf(nil, "you must name at least one object: TYPE/NAME or TYPE NAME")
	}
	objs, err := objectArgs(args)
	if err == nil && len(objs) == 0 {
		return nil, UsageErrorf(nil, "you must name at least one %s", args[0])
	}
	return objs, err
}

// objectArgs reads TYPE/NAME... or TYPE NAME...; a TYPE alone names no object yet.
func objectArgs(args []string) ([]ObjectArg, error) {
	if len(args) == 0 {
		return nil, nil
	}
	var objs []ObjectArg
	if strings.Contains(args[0], "/") {
		for _, a := range args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || typ == "" || name == "" {
				return nil, UsageErrorf(nil, "%q is not TYPE/NAME: name every object as TYPE/NAME, or give TYPE NAME...", a)
			}
			objs = append(objs, ObjectArg{Type: typ, Name: name})
		}
		return objs, nil
	}
	for _, name := range args[1:] {
		if strings.Contains(name, "/") {
			return nil, UsageErrorf(nil, "there is no need to give a type in %q when the type is already %q", name, args[0])
		}
		objs = append(objs, ObjectArg{Type: args[0], Name: name})
	}
	return objs, nil
}

// ResolveObjects resolves the type of each object against mapper; an object of a
// namespaced type is in namespace. A type the cluster does not serve is an invalid
// invocation.
func ResolveObjects(mapper meta.RESTMapper, namespace string, args []ObjectArg) ([]kube.Ref, error) {
	out := make([]kube.Ref, 0, len(args))
	for _, a := range args {
		r, err := kube.ResolveResource(mapper, a.Type)
		if err != nil {
			return nil, UsageError(err)
		}
		obj := kube.Ref{Resource: r, Name: a.Name}
		if r.Namespaced {
			obj.Namespace = namespace
		}
		out = append(out, obj)
	}
	return out, nil
}
