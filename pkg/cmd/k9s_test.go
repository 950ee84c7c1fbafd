package cmd

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

// TestTheK9sPluginsRunTheCommands: docs/k9s/plugins.yaml has what k9s requires of a
// plugin, one shortcut per plugin, and each plugin's command line, with the values k9s
// fills in, is a kubectl finalize command line that this plugin accepts: the
// subcommand exists and takes every flag given.
func TestTheK9sPluginsRunTheCommands(t *testing.T) {
	b, err := os.ReadFile("../../docs/k9s/plugins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Plugins map[string]struct {
			ShortCut    string   `json:"shortCut"`
			Description string   `json:"description"`
			Scopes      []string `json:"scopes"`
			Command     string   `json:"command"`
			Background  bool     `json:"background"`
			Confirm     bool     `json:"confirm"`
			Args        []string `json:"args"`
		} `json:"plugins"`
	}
	if err := yaml.UnmarshalStrict(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Plugins) == 0 {
		t.Fatal("no plugins")
	}
	keys := map[string]string{}
	vars := strings.NewReplacer("$RESOURCE_NAME", "configmaps", "$RESOURCE_GROUP", "", "$NAME", "cfg", "$NAMESPACE", "team-a", "$CONTEXT", "prod")
	invocation := regexp.MustCompile(`^kubectl finalize (.*?) 2>&1 \| less -KR$`)
	for name, p := range file.Plugins {
		if p.ShortCut == "" || p.Description == "" || len(p.Scopes) == 0 || p.Command != "sh" || len(p.Args) != 2 || p.Args[0] != "-c" {
			t.Errorf("plugin %s: %+v: want a shortcut, a description, scopes, and sh -c LINE", name, p)
			continue
		}
		if other, ok := keys[p.ShortCut]; ok {
			t.Errorf("plugins %s and %s share %s", name, other, p.ShortCut)
		}
		keys[p.ShortCut] = name
		m := invocation.FindStringSubmatch(vars.Replace(p.Args[1]))
		if m == nil {
			t.Errorf("plugin %s runs %q, want kubectl finalize ... 2>&1 | less -KR", name, p.Args[1])
			continue
		}
		args := strings.Fields(strings.ReplaceAll(m[1], `"`, ""))
		root := NewCmdFinalize(genericiooptions.NewTestIOStreamsDiscard())
		sub, rest, err := root.Find(args)
		if err != nil || sub == root {
			t.Errorf("plugin %s: kubectl finalize %s: no such command (%v)", name, m[1], err)
			continue
		}
		if err := sub.ParseFlags(rest); err != nil {
			t.Errorf("plugin %s: kubectl finalize %s: %v", name, m[1], err)
		}
		if sub.Name() == "doctor" && !strings.Contains(m[1], "configmaps./cfg") {
			t.Errorf("plugin %s: doctor of %s, want configmaps./cfg", name, m[1])
		}
	}
}
