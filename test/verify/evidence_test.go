package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// TestAKubernetesNameNoObjectCanHaveIsNotAsked: the backing secret orders-db exists, and
// the stuck objects name it "Orders-DB" and "orders-db " (a case and a space a person or
// a script added). No secret can have either name, so the API server answers 404 for
// both, which read as Gone while the secret they were meant to name exists. Each is
// refused as it is, never normalized, and never asked: kept, naming the rule it fails.
func TestAKubernetesNameNoObjectCanHaveIsNotAsked(t *testing.T) {
	ns, backing := cp.Namespace(t), cp.Namespace(t)
	if _, err := cp.Kube(t).CoreV1().Secrets(backing).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-db"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "control", map[string]string{"backing": "orders-db"})
	policy := writePolicy(t, `- name: backing
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    kubernetes:
      resource: secrets
      namespace: `+backing+`
      name: "{.metadata.annotations.backing}"
`)
	for name, value := range map[string]string{"upper": "Orders-DB", "spaced": "orders-db "} {
		t.Run(name, func(t *testing.T) {
			stuckConfigMap(t, ns, name, map[string]string{"backing": value})
			r := removeWith(t, policy, ns, name)
			kept(t, r, ns, name, `name: "`+value+`" is not a name any secrets object can have: it must be an RFC 1123 subdomain: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters`)
		})
	}
	// The name as the secret has it still verifies: Present.
	stuckConfigMap(t, ns, "exact", map[string]string{"backing": "orders-db"})
	kept(t, removeWith(t, policy, ns, "exact"), ns, "exact", "secrets/orders-db -n "+backing+" exists in this cluster")
}

// TestAPathValueThatNeedsEscapingIsNotAsked: instance live-1 exists; objects that name it
// "live-1 " or "live/1" would reach the API as /instances/live-1%20 and
// /instances/live%2F1, which it answers 404: no instance has those IDs. Such a value is
// refused, not escaped, and nothing is asked about it. A rule that declares a value a
// path (pathValues) may send one that spans segments, as it is, but never one that
// climbs (..) or needs escaping.
func TestAPathValueThatNeedsEscapingIsNotAsked(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1", "path": "instances/live-1"})
	policy := writePolicy(t, c.Rule("dbs", finalizer, ""))
	for name, value := range map[string]string{"spaced": "live-1 ", "slashed": "live/1", "escaped": "live%2D1"} {
		t.Run(name, func(t *testing.T) {
			stuckConfigMap(t, ns, name, map[string]string{"instance": value})
			kept(t, removeWith(t, policy, ns, name), ns, name, `{.metadata.annotations.instance}: "`+value+`" cannot be a URL path segment as it is`)
		})
	}
	for _, p := range c.Asked() {
		if p != "/instances/live-1" {
			t.Errorf("asked %s", p)
		}
	}

	paths := writePolicy(t, `- name: paths
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    http:
      url: "`+c.URL+`/{.metadata.annotations.path}"
      pathValues: ["{.metadata.annotations.path}"]
      tls: {caFile: `+c.CAFile+`}
      timeout: 3s
      response: {jsonPath: "{.state}", gone: [deleted]}
`)
	stuckConfigMap(t, ns, "declared", map[string]string{"path": "instances/deleted-9"})
	removed(t, removeWith(t, paths, ns, "declared"), ns, "declared", "GET "+c.URL+"/instances/deleted-9: 404 Not Found")
	stuckConfigMap(t, ns, "climbing", map[string]string{"path": "instances/../admin"})
	kept(t, removeWith(t, paths, ns, "climbing"), ns, "climbing", `"instances/../admin" cannot be a URL path as it is: segment ".." climbs the path`)
}

// TestAnOptionInAnExecValueIsNotRun: a cloud CLI reads "--rm" as its option to delete
// the record, then answers that it is gone. An object whose ID says "--rm" must not
// become that option: the value is refused, the program never runs with it, and the
// finalizer stays. The same value after a literal "--id=" is only a value.
func TestAnOptionInAnExecValueIsNotRun(t *testing.T) {
	ns := cp.Namespace(t)
	ran := filepath.Join(t.TempDir(), "ran")
	rule := func(arg string) string {
		return `- name: cli
  finalizers: [` + finalizer + `]
  resources: [configmaps]
  verify:
    exec:
      command: [` + os.Args[0] + `, cli, "` + arg + `"]
      env: [{name: KF_TEST_PROVIDER, value: "1"}, {name: KF_TEST_RAN, value: ` + ran + `}]
      timeout: 5s
`
	}
	configMap(t, ns, "control", map[string]string{"id": "db-1"})
	stuckConfigMap(t, ns, "option", map[string]string{"id": "--rm"})
	kept(t, removeWith(t, writePolicy(t, rule("{.metadata.annotations.id}")), ns, "option"), ns, "option",
		`command[2]: {.metadata.annotations.id}: "--rm" starts an argument with "-", which the program would read as an option`)
	b, _ := os.ReadFile(ran)
	if strings.Contains(string(b), "--rm") {
		t.Errorf("the program ran with the value as an option:\n%s", b)
	}

	stuckConfigMap(t, ns, "literal", map[string]string{"id": "-deleted-7"})
	removed(t, removeWith(t, writePolicy(t, rule("--id={.metadata.annotations.id}")), ns, "literal"), ns, "literal", `argv ["cli" "--id=-deleted-7"]`)
}

// noResponse is a Cloud rule that reads no field of the body: only statuses decide.
func noResponse(rule string) string {
	return strings.Replace(rule, "      response: {jsonPath: \"{.state}\", gone: [deleted]}\n", "", 1)
}

// TestAProxysHTMLNotFoundIsNotGone: a proxy in front of the API answers 404 with its own
// HTML page for a route it does not know. It is nobody's answer about the instance: the
// rule reads {.state} from the API's JSON, and its controls' Present answers were JSON
// from Server fakecloud. Kept, with both shapes as evidence; the API's own JSON 404 still
// removes.
func TestAProxysHTMLNotFoundIsNotGone(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	for i, tt := range []struct{ rule, says string }{
		{c.Rule("dbs", finalizer, ""), `not the API's own answer: the rule reads {.state} of a JSON body, and this answer is text/html from Server "nginx"`},
		{noResponse(c.Rule("dbs", finalizer, "")),
			`not the API's own answer: text/html from Server "nginx", while its controls' Present answers were application/json from Server "fakecloud"`},
	} {
		policy := writePolicy(t, tt.rule)
		proxied, deleted := fmt.Sprintf("proxied-%d", i), fmt.Sprintf("deleted-%d", i)
		stuckConfigMap(t, ns, proxied, map[string]string{"instance": proxied})
		kept(t, removeWith(t, policy, ns, proxied), ns, proxied, "GET "+c.URL+"/instances/"+proxied+": 404 Not Found: "+tt.says)
		stuckConfigMap(t, ns, deleted, map[string]string{"instance": deleted})
		removed(t, removeWith(t, policy, ns, deleted), ns, deleted, "GET "+c.URL+"/instances/"+deleted+": 404 Not Found")
	}
}

// TestAnEmptyNotFoundIsNotGoneWhereTheAPIAnswersJSON: the API answers JSON (its
// controls' Present answers were application/json); an empty 404 is not its answer.
// A rule whose API does answer 404 with an empty body says so (goneResponse), and then
// its empty 404 removes.
func TestAnEmptyNotFoundIsNotGoneWhereTheAPIAnswersJSON(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	for i, tt := range []struct{ rule, says string }{
		{c.Rule("dbs", finalizer, ""), "not the API's own answer: the rule reads {.state} of a JSON body, and this answer is an empty body without a Content-Type"},
		{noResponse(c.Rule("dbs", finalizer, "")),
			`not the API's own answer: an empty body without a Content-Type from Server "fakecloud", while its controls' Present answers were application/json from Server "fakecloud"`},
	} {
		empty := fmt.Sprintf("empty-%d", i)
		stuckConfigMap(t, ns, empty, map[string]string{"instance": empty})
		kept(t, removeWith(t, writePolicy(t, tt.rule), ns, empty), ns, empty, "GET "+c.URL+"/instances/"+empty+": 404 Not Found: "+tt.says)
	}
	declared := strings.Replace(c.Rule("dbs", finalizer, ""), "      timeout: 3s\n", "      timeout: 3s\n      goneResponse: {emptyBody: true}\n", 1)
	stuckConfigMap(t, ns, "declared", map[string]string{"instance": "empty-declared"})
	removed(t, removeWith(t, writePolicy(t, declared), ns, "declared"), ns, "declared", "GET "+c.URL+"/instances/empty-declared: 404 Not Found")
	// The declaration is about the API's 404: a proxy's HTML page is still not one.
	stuckConfigMap(t, ns, "proxied", map[string]string{"instance": "proxied-2"})
	kept(t, removeWith(t, writePolicy(t, declared), ns, "proxied"), ns, "proxied", "GET "+c.URL+"/instances/proxied-2: 404 Not Found: not the API's own answer: ")
}

// TestANotFoundFromAnotherServerIsNotGone: a JSON 404 that a gateway (Server envoy)
// answers itself, while the controls' Present answers came from Server fakecloud, is not
// the API's answer about the instance.
func TestANotFoundFromAnotherServerIsNotGone(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	stuckConfigMap(t, ns, "elsewhere", map[string]string{"instance": "elsewhere-1"})
	kept(t, removeWith(t, writePolicy(t, c.Rule("dbs", finalizer, "")), ns, "elsewhere"), ns, "elsewhere",
		`404 Not Found: not the API's own answer: application/json from Server "envoy", while its controls' Present answers were application/json from Server "fakecloud"`)
}

// TestANotFoundWhoseBodySaysLiveIsNotGone: a 404 whose JSON body has the field the rule
// reads, saying the instance is available, contradicts itself: Unknown.
func TestANotFoundWhoseBodySaysLiveIsNotGone(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	stuckConfigMap(t, ns, "undead", map[string]string{"instance": "undead-1"})
	kept(t, removeWith(t, writePolicy(t, c.Rule("dbs", finalizer, "")), ns, "undead"), ns, "undead",
		`GET `+c.URL+`/instances/undead-1: 404 Not Found, but {.state} = "available", which is not one of response.gone: the answer contradicts itself`)
}
