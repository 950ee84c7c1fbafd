package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestASelectorThatCanNeverMatch(t *testing.T) {
	tests := []struct {
		selector string
		never    bool
		why      string
	}{
		// Contradictions, however written.
		{"a=b,a=c", true, "no value of label a meets a=b and a=c at once"},
		{"a==b,a=c", true, "a==b and a=c"},
		{"a=b,a!=b", true, "a=b and a!=b"},
		{"a,!a", true, "a and !a"},
		{"a=b,!a", true, "a=b and !a"},
		{"a in (x),a notin (x)", true, "a in (x) and a notin (x)"},
		{"a in (x,y),a notin (x,y)", true, ""},
		{"a in (x,y),a in (z)", true, ""},
		{"a in (x,y),a=z", true, ""},
		{"a>5,a<6", true, "a>5 and a<6"},
		{"a>5,a<3", true, ""},
		{"a<0", true, "no value of label a meets a<0"},
		{"a>9223372036854775807", true, ""},
		{"a=x,a>1", true, ""},
		{"!a,a>1", true, ""},
		{"b=c,a=b,a=c", true, "label a"},
		// Selectors some labels meet.
		{"", false, ""},
		{"a=b", false, ""},
		{"a=b,a=b", false, ""},
		{"a=b,a!=c", false, ""},
		{"a in (x,y),a notin (x)", false, ""},
		{"a in (x,y),a=y", false, ""},
		{"a!=b,!a", false, ""},
		{"a notin (x),!a", false, ""},
		{"a notin (x,y),a", false, ""},
		{"a=b,b=c", false, ""},
		{"a>5,a<7", false, ""},
		{"a>5,a!=6,a<7", false, ""}, // "06" is 6 too
		{"a>5,a notin (6,06,006),a<7", false, ""},
		{"a>5,a in (6,x)", false, ""},
		{"a<1", false, ""},
		{"a>1,a!=x", false, ""},
		{"a=", false, ""},
		{"a=,a!=b", false, ""},
		{"a=,a", false, ""},
	}
	for _, tt := range tests {
		sel, err := labels.Parse(tt.selector)
		if err != nil {
			t.Fatalf("%q: %v", tt.selector, err)
		}
		why := contradiction(sel)
		if (why != "") != tt.never || !strings.Contains(why, tt.why) {
			t.Errorf("contradiction(%q) = %q, want never %v saying %q", tt.selector, why, tt.never, tt.why)
		}
	}
	if why := contradiction(labels.Nothing()); why == "" {
		t.Error("labels.Nothing() can never match")
	}
}

// TestAnExcludeSelectorThatCoversARule: a rule's selector whose every requirement the
// exclude selector's are among selects nothing the exclude block lets through.
func TestAnExcludeSelectorThatCoversARule(t *testing.T) {
	tests := []struct {
		rule, exclude string
		want          bool
	}{
		{"tier=db", "tier=db", true},
		{"team=data,tier=db", "tier=db", true},
		{"team=data,tier=db", "tier=db,team=data", true},
		{"tier=db", "tier=db,team=data", false},
		{"tier=db", "tier=web", false},
		{"tier=db", "tier!=db", false},
		{"tier=db", "", false},
		// In other words.
		{"tier=db", "tier in (db, cache)", true},
		{"tier=db", "tier!=web", true},
		{"tier=db", "tier", true},
		{"tier=db", "tier notin (web)", true},
		{"tier in (db)", "tier in (db, cache)", true},
		{"tier in (db, web)", "tier in (db, cache)", false},
		{"tier", "tier in (db, cache)", false},
		{"!tier", "tier!=db", true},
		{"!tier", "!tier", true},
		{"tier!=db", "tier", false},
		{"size>5", "size>3", true},
		{"size>5", "size>10", false},
		{"size>5,size<20", "size>7", false},
		{"size>5", "size", true},
		{"tier=db", "team!=web", false}, // tier=db,team=web is not excluded
		{"tier=db", "team=web", false},
	}
	parse := func(s string) labels.Selector {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return sel
	}
	for _, tt := range tests {
		if got := implies(parse(tt.rule), parse(tt.exclude)); got != tt.want {
			t.Errorf("implies(%q, %q) = %v, want %v", tt.rule, tt.exclude, got, tt.want)
		}
	}
}

// TestARuleOfSystemFinalizersOnlyIsWarnedAbout: without allowSystem, reconcile keeps
// every finalizer such a rule matches; policy check says so.
func TestARuleOfSystemFinalizersOnlyIsWarnedAbout(t *testing.T) {
	rule := func(fields string) string {
		return header + "rules:\n- name: r\n  resources: [persistentvolumes]\n  verify: {exec: {command: [x]}}\n" + fields
	}
	tests := []struct {
		name, doc, want string
	}{
		{"a preset's reserved finalizer", rule("  preset: csi-volume\n"),
			"rule r matches only system finalizers, external-provisioner.volume.kubernetes.io/finalizer (its domain external-provisioner.volume.kubernetes.io is under kubernetes.io), and does not set allowSystem"},
		{"a glob of a fixed prefix without a domain", rule("  finalizers: [\"external-attacher/*\"]\n"),
			`external-attacher/* (its prefix "external-attacher" names no domain)`},
		{"a glob of a reserved domain", rule("  finalizers: [\"snapshot.storage.kubernetes.io/*\", kubernetes.io/pv-protection]\n"), "matches only system finalizers"},
		{"allowed", rule("  finalizers: [\"external-attacher/*\"]\n  allowSystem: true\n"), ""},
		{"one that is not system", rule("  finalizers: [\"external-attacher/*\", db.example.com/x]\n"), ""},
		{"a glob whose domain is open", rule("  finalizers: [\"*.k8s.io/x\"]\n"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warnings := compile(t, tt.doc)
			var got string
			for _, w := range warnings {
				if strings.Contains(w, "system finalizers") {
					got = w
				}
			}
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warning %q, want one saying %q", got, tt.want)
			}
		})
	}
}
