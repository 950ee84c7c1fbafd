package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var (
	seedOnce sync.Once
	seedErr  error
)

// seedStuck seeds a few scenarios with fixed names, once.
func seedStuck(t *testing.T) {
	t.Helper()
	seedOnce.Do(func() {
		s, err := seed.New(cp.Config, "e2e")
		if err != nil {
			seedErr = err
			return
		}
		ctx := t.Context()
		// Healthy first: its database makes database-operator write, which must happen
		// before the orphaned database's deletion, or that operator looks alive.
		for _, step := range []func() (seed.Scenario, error){
			func() (seed.Scenario, error) { return s.Healthy(ctx) },
			func() (seed.Scenario, error) { return s.OrphanedOperator(ctx) },
			func() (seed.Scenario, error) { return s.PVCInUse(ctx) },
			func() (seed.Scenario, error) { return s.ClusterScoped(ctx) },
		} {
			if _, err := step(); err != nil {
				seedErr = err
				return
			}
		}
	})
	if seedErr != nil {
		t.Fatal(seedErr)
	}
}

// cells cuts a kubectl-style table into cells at the offsets where its header's columns
// start, so a misaligned row shows up as garbled cells. Cells of the columns in volatile
// are replaced by a placeholder. Only the header and the rows about objects this file
// seeded ("e2e-") are kept: other tests of the package leave stuck objects too.
func cells(t *testing.T, table string, volatile ...string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	header := lines[0]
	var starts []int
	var names []string
	for _, m := range regexp.MustCompile(`\S+`).FindAllStringIndex(header, -1) {
		starts = append(starts, m[0])
		names = append(names, header[m[0]:m[1]])
	}
	var out strings.Builder
	for _, line := range lines {
		if line != header && !strings.Contains(line, "e2e-") {
			continue
		}
		var row []string
		for i, start := range starts {
			end := len(line)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			cell := ""
			if start < len(line) {
				cell = strings.TrimSpace(line[start:end])
				if i+1 < len(starts) && end < len(line) && line[end-1] != ' ' {
					t.Errorf("column %s is not aligned in %q", names[i], line)
				}
			}
			if line != header && contains(volatile, names[i]) {
				cell = "<" + strings.ToLower(names[i]) + ">"
			}
			row = append(row, cell)
		}
		out.WriteString(strings.Join(row, " | ") + "\n")
	}
	return out.String()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./test/e2e -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./test/e2e -update if intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestScanTable(t *testing.T) {
	seedStuck(t)
	r := kubectl(t, "finalize", "scan")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("kubectl finalize scan: code %d, stderr %q", r.Code, r.Stderr)
	}
	golden(t, "scan.golden", cells(t, r.Stdout, "AGE"))

	r = kubectl(t, "finalize", "scan", "-o", "wide")
	if r.Code != 0 {
		t.Fatalf("kubectl finalize scan -o wide: code %d, stderr %q", r.Code, r.Stderr)
	}
	golden(t, "scan-wide.golden", cells(t, r.Stdout, "AGE", "DELETED", "UID"))
}

// TestScanProgress shows a progress line on a terminal only; through a pipe, stderr stays
// empty.
func TestScanProgress(t *testing.T) {
	seedStuck(t)
	if r := plugin(t, "scan"); r.Stderr != "" {
		t.Errorf("not a terminal: stderr must be empty, got %q", r.Stderr)
	}
	r := cli.Cmd{Path: filepath.Join(binDir, "kubectl-finalize"), Args: []string{"scan", "--kubeconfig", cp.AdminKubeconfig}, Terminal: true}.Run(t)
	if r.Code != 0 {
		t.Fatalf("scan on a terminal: exit %d\n%s", r.Code, r.Stdout)
	}
	if !regexp.MustCompile(`\r\x1b\[Kscanning: \d+/\d+ resource types, \d+ objects, \d+ stuck`).MatchString(r.Stdout) {
		t.Errorf("no progress line on a terminal: %q", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "databases.db.e2e.demo.kubectl-finalize.io/orders-db") {
		t.Errorf("no table after the progress line: %q", r.Stdout)
	}
}

func TestScanWithTheAPIServerDown(t *testing.T) {
	r := plugin(t, "scan", "--server", "https://127.0.0.1:1")
	if r.Code != 1 || r.Stdout != "" {
		t.Fatalf("code %d, stdout %q; want 1 and nothing on stdout", r.Code, r.Stdout)
	}
	want := "error: the connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n"
	if r.Stderr != want {
		t.Errorf("stderr %q, want %q", r.Stderr, want)
	}
}
