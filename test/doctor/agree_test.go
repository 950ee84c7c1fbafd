package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// One answer per object: the cluster-wide doctor, the doctor of the object alone and
// scan -o json give it the same cause at the same moment. wantCause holds them
// together on every object of every scenario of this suite.

// view is what one command says of one object: the reason and the message of its cause,
// and its finalizers' owners. "" means the command did not list the object as stuck.
type view struct {
	command string
	answer  string
}

// digits are the ages and counts of a message, which move between two commands run a
// second apart.
var digits = regexp.MustCompile(`\d+`)

// answerOf is what a command says of the object named by ref: its cause and the owners
// of its finalizers, ages and counts left out.
func answerOf(items []finalizev1alpha1.StuckObject, o seed.Object) string {
	for _, it := range items {
		ref := it.Target
		group := ""
		if i := strings.LastIndex(ref.APIVersion, "/"); i >= 0 {
			group = ref.APIVersion[:i]
		}
		if group != o.Resource.Group || ref.Resource != o.Resource.Resource || ref.Namespace != o.Namespace || ref.Name != o.Name {
			continue
		}
		var owners []string
		for _, f := range it.Finalizers {
			owners = append(owners, f.Name+"="+f.Owner+"("+string(f.OwnerSource)+")")
		}
		if it.Cause == nil {
			return "no cause; owners " + strings.Join(owners, ", ")
		}
		return fmt.Sprintf("%s: %s; next: %s; owners %s", it.Cause.Reason,
			digits.ReplaceAllString(it.Cause.Message, "#"), digits.ReplaceAllString(it.Cause.NextStep, "#"), strings.Join(owners, ", "))
	}
	return ""
}

// views runs the three commands at once and returns what each says of o.
func views(t *testing.T, o seed.Object) []view {
	t.Helper()
	single := []string{"doctor", o.Resource.GroupResource().String() + "/" + o.Name, "-o", "json"}
	if o.Namespace != "" {
		single = append(single, "-n", o.Namespace)
	}
	commands := [][]string{{"doctor", "-o", "json"}, single, {"scan", "-o", "json"}}
	vs := []view{{command: "doctor"}, {command: "doctor " + single[1]}, {command: "scan -o json"}}
	errs := make([]error, len(commands))
	var wg sync.WaitGroup
	for i, args := range commands {
		wg.Go(func() {
			vs[i].answer, errs[i] = answer(t, o, args)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return vs
}

// answer runs one command and returns what it says of o.
func answer(t *testing.T, o seed.Object, args []string) (string, error) {
	r := cli.Run(t, cp.AdminKubeconfig, args...)
	if !strings.HasPrefix(strings.TrimSpace(r.Stdout), "{") {
		// doctor TYPE/NAME of an object that is not stuck, or gone, says so in a sentence.
		if args[0] == "doctor" && len(args) > 3 && (r.Code == 0 || strings.Contains(r.Stderr, "(NotFound)")) {
			return "", nil
		}
		return "", fmt.Errorf("kubectl finalize %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	var out struct {
		Items []finalizev1alpha1.StuckObject `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		return "", fmt.Errorf("kubectl finalize %s: %w\n%s", strings.Join(args, " "), err, r.Stdout)
	}
	return answerOf(out.Items, o), nil
}

// agree fails t unless the three commands say the same of o. A cause may change between
// two commands (a progress window ends, a controller writes): a disagreement counts
// when it is seen twice in a row.
func agree(t *testing.T, o seed.Object) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		vs := views(t, o)
		same := true
		for _, v := range vs[1:] {
			same = same && v.answer == vs[0].answer
		}
		switch {
		case same:
			return
		case attempt == 1:
			t.Logf("%s: the commands disagree, asking again:\n%s", o, describe(vs))
		default:
			t.Errorf("%s: not one answer:\n%s", o, describe(vs))
			return
		}
	}
}

func describe(vs []view) string {
	var b strings.Builder
	for _, v := range vs {
		answer := v.answer
		if answer == "" {
			answer = "(not stuck)"
		}
		fmt.Fprintf(&b, "  %-22s %s\n", v.command+":", answer)
	}
	return b.String()
}
