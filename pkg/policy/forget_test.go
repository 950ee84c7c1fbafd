package policy

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// TestAnAnswerForgottenIsAskedAgain: requests alike are asked once while the answers are
// kept; once a plan let them go (#36), the same question goes to the provider again, and
// is answered as before. Forgetting costs requests, never a verification.
func TestAnAnswerForgottenIsAskedAgain(t *testing.T) {
	var asked atomic.Int32
	doc := codeAPI(t, func(id string) int {
		if id == "i-gone" {
			asked.Add(1)
			return http.StatusNotFound
		}
		return http.StatusOK
	})
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour), database("orders-again", "i-gone", time.Hour),
		database("live", "i-live", 0), database("live-too", "i-live-too", 0))
	ask := func(name string) plan.Verification {
		return v.Verify(context.Background(), plan.VerifyRequest{Object: objs[name], Finalizer: dbFin})
	}
	for _, name := range []string{"orders", "orders-again"} {
		if got := ask(name); !got.Gone() {
			t.Fatalf("%s: %+v", name, got)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("two requests alike were sent %d times, want once", n)
	}
	v.ForgetAnswers()
	if got := ask("orders"); !got.Gone() {
		t.Fatalf("orders, asked again: %+v", got)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("a forgotten answer was not asked again: %d requests, want 2", n)
	}
}
