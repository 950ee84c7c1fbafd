package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// kubectlFunc runs kubectl with args, the plugin on PATH, against the demo cluster, and
// returns what it printed (both streams) and its exit status.
type kubectlFunc func(args ...string) (string, int, error)

// checkTry runs, in order and as printed, the commands of a printed Try list that use
// the demo's policy, and checks what each did: the dry run removed nothing, remove
// --policy removed the finalizer of the database it names, the pass removed the other
// one the cloud calls gone, the databases the cloud still has kept their finalizer, and
// the audit log records both removals.
func checkTry(printed string, kubectl kubectlFunc) error {
	databases := func() ([]string, error) {
		out, code, err := kubectl("get", "databases", "-A", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`)
		if err != nil {
			return nil, fmt.Errorf("kubectl get databases: %w", err)
		}
		if code != 0 {
			return nil, fmt.Errorf("kubectl get databases: exit %d\n%s", code, out)
		}
		names := strings.Fields(out)
		slices.Sort(names)
		return names, nil
	}
	// The demo's databases: each removal makes its (Terminating) database go away.
	kept := []string{"analytics-db", "billing-db", "live-db", "orders-db"}
	want := append(slices.Clone(kept), "reports-2023-db", "reports-2024-db")
	expect := func(after string) error {
		got, err := databases()
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("after %s: databases %v, want %v", after, got, want)
		}
		return nil
	}
	if err := expect("demo up"); err != nil {
		return err
	}
	var ran []string
	for _, line := range tryCommands(printed) {
		if !strings.Contains(line, "--policy ") {
			continue
		}
		args := strings.Fields(line)
		if args[0] != "kubectl" {
			return fmt.Errorf("not a kubectl command: %s", line)
		}
		out, code, err := kubectl(args[1:]...)
		if err != nil {
			return fmt.Errorf("%s: %w", line, err)
		}
		if code != 0 {
			return fmt.Errorf("%s: exit %d\n%s", line, code, out)
		}
		var wantOut []string
		switch {
		case slices.Contains(args, "reconcile") && slices.Contains(args, "--dry-run"):
			ran = append(ran, "reconcile --dry-run")
			wantOut = []string{"reports-2023-db", "reports-2024-db", "WouldRemove", "404 Not Found", "200 OK"}
		case slices.Contains(args, "remove"):
			ran = append(ran, "remove --policy")
			want = slices.DeleteFunc(want, func(s string) bool { return s == "reports-2023-db" })
			wantOut = []string{"reports-2023-db", "removed"}
		case slices.Contains(args, "reconcile"):
			ran = append(ran, "reconcile")
			want = kept
			wantOut = []string{"reports-2024-db", "Removed", "orders-db", "Kept"}
		}
		for _, w := range wantOut {
			if !strings.Contains(out, w) {
				return fmt.Errorf("%s does not print %q:\n%s", line, w, out)
			}
		}
		if err := expect(line); err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
	}
	if !slices.Equal(ran, []string{"reconcile --dry-run", "remove --policy", "reconcile"}) {
		return fmt.Errorf("the Try list's policy commands are %v, want a dry run, remove --policy and a pass", ran)
	}
	m := regexp.MustCompile(`--audit-log (\S+)`).FindStringSubmatch(printed)
	if m == nil {
		return fmt.Errorf("the Try list names no --audit-log")
	}
	audit, err := os.ReadFile(m[1])
	if err != nil {
		return err
	}
	for _, db := range []string{"reports-2023-db", "reports-2024-db"} {
		if !strings.Contains(string(audit), db) {
			return fmt.Errorf("the audit log %s does not record the removal from %s:\n%s", m[1], db, audit)
		}
	}
	return nil
}

// tryCommands are the commands of a printed Try list, continuation lines joined and
// comments dropped.
func tryCommands(printed string) []string {
	_, list, _ := strings.Cut(printed, "\nTry:\n")
	list, _, _ = strings.Cut(list, "\nStop it with")
	var cmds []string
	var cur string
	for _, l := range strings.Split(list, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") {
			l = ""
		}
		cur = strings.TrimSpace(cur + " " + l)
		if strings.HasSuffix(cur, `\`) {
			cur = strings.TrimSpace(strings.TrimSuffix(cur, `\`))
			continue
		}
		if cur != "" {
			cmds = append(cmds, cur)
		}
		cur = ""
	}
	return cmds
}
