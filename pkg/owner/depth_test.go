package owner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fields nested deeper than the walk goes are the decoder's to read, and the decoder
// refuses more than 10,000 levels: what it refuses holds nothing and proves no controller,
// at any depth the walk might have accepted.
func TestDeepFieldsAreTheDecoders(t *testing.T) {
	for _, depth := range []int{999, 1001, 5000, 10001} {
		deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		raw := `{"f:metadata":{"f:finalizers":{"v:\"x\"":{}},"f:labels":` + deep + `}}`
		entries := []metav1.ManagedFieldsEntry{{Manager: "op", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}}
		_, _, decodable := controllerWritesDecoded([]byte(raw))
		if got := Reconciles(entries, "op"); got != decodable {
			t.Errorf("depth %d: Reconciles %v, the decoder reads it: %v", depth, got, decodable)
		}
		if got := Writers(entries, "metadata.finalizers", "x"); (len(got) == 1) != decodable {
			t.Errorf("depth %d: Writers %v, the decoder reads it: %v", depth, got, decodable)
		}
		if depth == 10001 && decodable {
			t.Fatal("the decoder reads 10,001 levels")
		}
	}
}
