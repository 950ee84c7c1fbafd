package provider

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// examples are a valid specification of each kind, each declared in its kind's own test
// file (func init() { examples["http"] = ... }).
var examples = map[string]*finalizev1alpha1.Verify{}

// recorder is the policy compiler's Checks as a test sees them: what a kind's check
// reports, and which templates it checks.
type recorder struct {
	errs      field.ErrorList
	warnings  []string
	templates []string
}

func (r *recorder) Add(err *field.Error)                     { r.errs = append(r.errs, err) }
func (r *recorder) Warn(warning string)                      { r.warnings = append(r.warnings, warning) }
func (r *recorder) Template(_ *field.Path, s string)         { r.templates = append(r.templates, s) }
func (r *recorder) URL(_ *field.Path, s string, _ *Template) { r.templates = append(r.templates, s) }

// TestEveryKindIsComplete: every field of verify is a registered kind, under its JSON
// name and in its order, with everything a kind must say; a verify that sets the field
// names that kind and no other; and its check, on a valid example, finds nothing wrong
// and checks every template the kind declares, and only those.
func TestEveryKindIsComplete(t *testing.T) {
	typ := reflect.TypeFor[finalizev1alpha1.Verify]()
	if len(kinds) != typ.NumField() {
		t.Fatalf("%d kinds registered for the %d fields of verify", len(kinds), typ.NumField())
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		t.Run(name, func(t *testing.T) {
			if got := kinds[i].kindName(); got != name {
				t.Fatalf("kind %d is %s, verify's field %d is %s", i, got, i, name)
			}
			k := reflect.ValueOf(kinds[i]).Elem()
			for j := range k.NumField() {
				if fn := k.Field(j); fn.Kind() == reflect.Func && fn.IsNil() && k.Type().Field(j).Name != "reads" {
					t.Errorf("kind %s has no %s", name, k.Type().Field(j).Name)
				}
			}
			var v finalizev1alpha1.Verify
			reflect.ValueOf(&v).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
			if named := Named(&v); len(named) != 1 || named[0].Kind() != name || Of(&v) == nil || Of(&v).Kind() != name {
				t.Errorf("a verify that sets only %s names %v", name, named)
			}

			ex, ok := examples[name]
			if !ok {
				t.Fatalf("kind %s has no example: declare a valid one in its test file: examples[%q] = ...", name, name)
			}
			spec := Of(ex)
			if spec == nil || spec.Kind() != name {
				t.Fatalf("the example of %s names %v", name, spec)
			}
			var r recorder
			spec.Check(&r, field.NewPath("verify"))
			if len(r.errs) > 0 {
				t.Errorf("the example of %s is invalid: %v", name, r.errs.ToAggregate())
			}
			declared := slices.DeleteFunc(spec.(interface{ templateValues() []string }).templateValues(), func(s string) bool { return s == "" })
			slices.Sort(declared)
			slices.Sort(r.templates)
			if len(declared) == 0 || !slices.Equal(declared, r.templates) {
				t.Errorf("kind %s declares the templates %q, and its check checks %q", name, declared, r.templates)
			}
		})
	}
}

// TestTheOneOfOfVerify: Of is the first kind a verify names, Named every one, in the
// order of verify's fields, which is the order of the messages that list them.
func TestTheOneOfOfVerify(t *testing.T) {
	if got := Names(); got != "http, exec or kubernetes" {
		t.Errorf("Names() = %q", got)
	}
	if Of(&finalizev1alpha1.Verify{}) != nil || len(Named(&finalizev1alpha1.Verify{})) != 0 {
		t.Error("an empty verify names a provider")
	}
	v := &finalizev1alpha1.Verify{Kubernetes: &finalizev1alpha1.KubernetesProvider{}, HTTP: &finalizev1alpha1.HTTPProvider{}}
	var got []string
	for _, s := range Named(v) {
		got = append(got, s.Kind())
	}
	if !slices.Equal(got, []string{"http", "kubernetes"}) || Of(v).Kind() != "http" {
		t.Errorf("Named = %v, Of = %s", got, Of(v).Kind())
	}
	if _, err := New(&finalizev1alpha1.Verify{}, Options{}); err == nil || err.Error() != "no provider: verify needs one of http, exec or kubernetes" {
		t.Errorf("New of an empty verify: %v", err)
	}
}

// TestWhichIdentityValuesAProviderSends: those its templates name, or every one for
// exec, which sends them all on stdin.
func TestWhichIdentityValuesAProviderSends(t *testing.T) {
	v := &finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{URL: "https://api.example.com/v1/{identity.id}",
		Headers: []finalizev1alpha1.Header{{Name: "X-Region", Value: "{identity.region}"}}}}
	used := Of(v).IdentityUsed()
	if used == nil || !used("id") || !used("region") || used("account") {
		t.Error("the http provider sends the identity values its URL and headers name, and only those")
	}
	if Of(&finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{"x", "{identity.id}"}}}).IdentityUsed() != nil {
		t.Error("the exec provider sends every identity value")
	}
}

// TestWhatAKubernetesProviderReadsOfTheCluster: one object by name or a list by
// selector, where the rule says; nothing of the cluster being reconciled when it has a
// kubeconfig or a context of its own.
func TestWhatAKubernetesProviderReadsOfTheCluster(t *testing.T) {
	for _, tt := range []struct {
		spec finalizev1alpha1.KubernetesProvider
		want []Read
	}{
		{finalizev1alpha1.KubernetesProvider{Resource: "secrets", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}"},
			[]Read{{Field: "verify.kubernetes.resource", Resource: "secrets", Namespace: "{.metadata.namespace}", Verb: "get", Purpose: "reads one by name"}}},
		{finalizev1alpha1.KubernetesProvider{Resource: "instances.compute.example.com", Selector: "app={.metadata.name}"},
			[]Read{{Field: "verify.kubernetes.resource", Resource: "instances.compute.example.com", Verb: "list", Purpose: "lists them by selector"}}},
		{finalizev1alpha1.KubernetesProvider{Resource: "secrets", Name: "x", Context: "workload"}, nil},
		{finalizev1alpha1.KubernetesProvider{Resource: "secrets", Name: "x", Kubeconfig: "/etc/workload"}, nil},
	} {
		if got := Of(&finalizev1alpha1.Verify{Kubernetes: &tt.spec}).Reads(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v reads %+v, want %+v", tt.spec, got, tt.want)
		}
	}
	if got := Of(&finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{URL: "https://x/y"}}).Reads(); got != nil {
		t.Errorf("an http provider reads %v of the cluster", got)
	}
}
