package main

import (
	"slices"
	"strings"
	"testing"
)

// The dump's shape, as go1.26's linker writes it: the tags after either side, and a
// marked function reached from the entry through a chain of calls.
func TestTheChainToAMarkedFunction(t *testing.T) {
	dump := `# example.com/cmd
_ -> _rt0_amd64_linux
_ -> runtime.main
runtime.main -> main.main
main.main -> example.com/cmd.NewCmd
main.main -> fmt.Println
example.com/cmd.NewCmd -> example.com/cmd.NewCmd.(*Command).SetVersionTemplate.tmpl.func5
example.com/cmd.NewCmd.(*Command).SetVersionTemplate.tmpl.func5 -> text/template.(*Template).Execute
text/template.(*Template).Execute -> text/template.(*state).evalFieldChain
text/template.(*state).evalFieldChain -> text/template.(*state).evalField <ReflectMethod>
text/template.(*state).evalField <ReflectMethod> -> reflect.Value.MethodByName
type:reflect.Value <UsedInIface> -> reflect.Value.Methods
reflect.Value.Methods -> reflect.Value.Methods.func1 <ReflectMethod>
`
	g, err := parse(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"reflect.Value.Methods.func1", "text/template.(*state).evalField"}; !slices.Equal(g.marked, want) {
		t.Errorf("marked %q, want %q", g.marked, want)
	}
	want := []string{"_", "runtime.main", "main.main", "example.com/cmd.NewCmd",
		"example.com/cmd.NewCmd.(*Command).SetVersionTemplate.tmpl.func5", "text/template.(*Template).Execute",
		"text/template.(*state).evalFieldChain", "text/template.(*state).evalField"}
	if got := g.path("text/template.(*state).evalField"); !slices.Equal(got, want) {
		t.Errorf("path %q, want %q", got, want)
	}
	if got := g.path("reflect.Value.Methods.func1"); len(got) != 1 || !strings.HasPrefix(got[0], "(no chain") {
		t.Errorf("path through an interface %q, want none", got)
	}
}

// A marked method kept only because its type reaches an interface follows from the
// call that turned the elimination off: the report names that call alone.
func TestTheCauseIsTheCallNotTheMethodsItKeeps(t *testing.T) {
	dump := `_ -> main.main
main.main -> fmt.Println
fmt.Println -> type:reflect.Value
type:reflect.Value <UsedInIface> -> reflect.Value.Methods
reflect.Value.Methods -> reflect.Value.Methods.func1 <ReflectMethod>
main.main -> text/template.(*Template).Execute
text/template.(*Template).Execute -> text/template.(*state).evalField <ReflectMethod>
`
	g, err := parse(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	causes := g.causes()
	if len(causes) != 1 || causes[0][len(causes[0])-1] != "text/template.(*state).evalField" {
		t.Errorf("causes %q, want the chain to evalField alone", causes)
	}
}

func TestADumpWithoutMarksMarksNothing(t *testing.T) {
	g, err := parse(strings.NewReader("_ -> runtime.main\nruntime.main -> main.main\n"))
	if err != nil || len(g.marked) != 0 {
		t.Errorf("marked %q, error %v", g.marked, err)
	}
}
