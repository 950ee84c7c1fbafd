package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

const header = "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\n"

const valid = header + `maxRemovals: 5
minAge: 30m
exclude:
  namespaces: ["kube-system"]
  selectors: ["keep=true"]
rules:
- name: managed-databases
  finalizers: ["db.example.com/finalizer"]
  resources: ["databases.db.example.com"]
  namespaces: ["prod-*"]
  selector: "team=data"
  minAge: 1h
  verify:
    http:
      url: "https://dbapi.internal/v1/instances/{.status.instanceID}"
      headers:
      - name: Authorization
        valueFrom: {env: DBAPI_TOKEN, prefix: "Bearer "}
      gone: [404, 410]
  controls: {count: 2, requireLive: false}
- name: buckets
  finalizers: ["*.example.com/*"]
  verify:
    exec:
      command: ["/usr/local/bin/check-bucket", "{.spec.bucketName}"]
- name: cluster-api
  finalizers: ["cluster.x-k8s.io"]
  resources: ["clusters.cluster.x-k8s.io"]
  verify:
    kubernetes:
      resource: machines.cluster.x-k8s.io
      namespace: "{.metadata.namespace}"
      selector: "cluster.x-k8s.io/cluster-name={.metadata.name}"
`

func compile(t *testing.T, doc string) (*Policy, []string) {
	t.Helper()
	spec, errs := Decode([]byte(doc))
	if len(errs) > 0 {
		t.Fatalf("decoding: %v", errs)
	}
	p, errs, warnings := Compile(spec)
	if len(errs) > 0 {
		t.Fatalf("validating: %v", errs)
	}
	return p, warnings
}

func TestAValidPolicy(t *testing.T) {
	p, warnings := compile(t, valid)
	if p.MaxRemovals != 5 || p.MinAge.String() != "30m0s" || len(p.Rules) != 3 {
		t.Fatalf("policy %+v", p)
	}
	db := p.Rules[0]
	if db.MinAge.String() != "1h0m0s" || db.Controls != 2 || db.RequireLive || db.QPS != defaultQPS {
		t.Errorf("rule %+v", db)
	}
	if p.Rules[1].MinAge.String() != "30m0s" || p.Rules[1].Controls != defaultControls || !p.Rules[1].RequireLive {
		t.Errorf("defaults of a rule: %+v", p.Rules[1])
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "rule buckets names no resources: a pass lists every type of the cluster to match it, secrets included") {
		t.Errorf("warnings %q", warnings)
	}
	defaults, _ := compile(t, header+"rules:\n- name: x\n  finalizers: [a.example.com/x]\n  resources: [configmaps]\n  verify: {exec: {command: [x]}}\n")
	if defaults.MaxRemovals != 20 || defaults.MaxForceDeletions != 5 || defaults.MinAge.String() != "15m0s" {
		t.Errorf("default maxRemovals %d, maxForceDeletions %d, minAge %s", defaults.MaxRemovals, defaults.MaxForceDeletions, defaults.MinAge)
	}
}

func TestInvalidPolicies(t *testing.T) {
	rule := func(verify string) string {
		return header + "rules:\n- name: r\n  finalizers: [a.example.com/x]\n  resources: [configmaps]\n  verify:\n" + verify
	}
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"empty", "", []string{"<document>: Required value: the policy is empty"}},
		{"not yaml", "rules: [", []string{"<document>: Invalid value: not YAML"}},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\nrules: []", []string{`apiVersion: Unsupported value: "v1"`, `kind: Unsupported value: "ConfigMap"`}},
		{"unknown field", rule("    exec: {command: [x], comand: [y]}\n"), []string{"rules[0].verify.exec.comand: Invalid value: unknown field"}},
		{"duplicate key", rule("    exec: {command: [x]}\n    exec: {command: [y]}\n"), []string{"not YAML"}},
		{"wrong type", header + "maxRemovals: many\nrules: []", []string{"<document>: Invalid value"}},
		{"no force deletions", header + "maxForceDeletions: 0\nrules:\n- {name: r, finalizers: [a.example.com/x], resources: [configmaps], verify: {exec: {command: [x]}}}\n",
			[]string{"maxForceDeletions: Invalid value: 0: must be at least 1; to force-delete no pod, give no waitsForNode rule"}},
		{"no rules", header + "rules: []", []string{"rules: Required value: a policy needs at least one rule"}},
		{"no name, no finalizers", header + "rules:\n- verify: {exec: {command: [x]}}\n", []string{"rules[0].name: Required value", "rules[0].finalizers: Required value"}},
		{"duplicate names", header + "rules:\n- {name: a, finalizers: [x], resources: [configmaps], verify: {exec: {command: [x]}}}\n- {name: a, finalizers: [yy.example.com], resources: [configmaps], verify: {exec: {command: [x]}}}\n",
			[]string{`rules[1].name: Duplicate value: "a (also rules[0])"`}},
		{"bad glob and selector", header + "rules:\n- {name: a, finalizers: [\"\"], resources: [configmaps], selector: \"a in (\", verify: {exec: {command: [x]}}}\n",
			[]string{`rules[0].finalizers[0]: Invalid value: "": must not be empty (rule a)`, `rules[0].selector: Invalid value: "a in ("`}},
		{"names no object can have", header + "exclude: {namespaces: [Kube-System]}\nrules:\n- {name: a, finalizers: [DB.example.com/x, \"db.example.com/*:x\"], resources: [configmaps], namespaces: [team_a, \"Team-*\"], verify: {exec: {command: [x]}}}\n",
			[]string{`exclude.namespaces[0]: Invalid value: "Kube-System": can never match, so it excludes nothing: a namespace's name is a DNS label`,
				`rules[0].finalizers[0]: Invalid value: "DB.example.com/x": can never match: a finalizer is a qualified name`,
				`rules[0].finalizers[1]: Invalid value: "db.example.com/*:x": can never match: a finalizer is a qualified name, which never holds ':'`,
				`rules[0].namespaces[0]: Invalid value: "team_a": can never match: a namespace's name is a DNS label`,
				`rules[0].namespaces[1]: Invalid value: "Team-*": can never match: a namespace's name is a DNS label, which never holds 'T'`}},
		{"bad durations", header + "minAge: -1m\nrules:\n- {name: a, finalizers: [x], resources: [configmaps], minAge: -2m, verify: {exec: {command: [x], timeout: 10m}}}\n",
			[]string{`minAge: Invalid value: "-1m0s": must not be negative`, `rules[0].minAge: Invalid value: "-2m0s"`, `rules[0].verify.exec.timeout: Invalid value: "10m0s": must be more than 0 and at most 5m0s (rule a)`}},
		{"bad duration text", header + "minAge: soon\nrules: []", []string{"<document>: Invalid value"}},
		{"no provider", rule("    {}\n"), []string{"rules[0].verify: Required value: name one provider: http, exec or kubernetes (rule r)"}},
		{"two providers", rule("    exec: {command: [x]}\n    kubernetes: {resource: pods, name: x}\n"), []string{`rules[0].verify: Invalid value: "exec, kubernetes": name exactly one provider (rule r)`}},
		{"unknown provider kind", rule("    ssh: {host: x}\n"), []string{"rules[0].verify.ssh: Invalid value: unknown field"}},
		{"bad template", rule("    exec: {command: [x, \"{.status.id\"]}\n"), []string{"rules[0].verify.exec.command[1]: Invalid value"}},
		{"templated program", rule("    exec: {command: [\"{.spec.program}\"]}\n"), []string{"the program is fixed: only its arguments may be templated"}},
		{"templated host", rule("    http: {url: \"https://{.spec.host}/x\"}\n"), []string{"the scheme, host and port are fixed"}},
		{"a preset's identity read around the preset", header + "rules:\n- name: p\n  preset: crossplane-managed\n  resources: [buckets.s3.aws.upbound.io]\n  verify:\n" +
			"    http: {url: \"https://x/v1/{.status.atProvider.arn}\"}\n" +
			"    exec: {command: [x, \"--name={.metadata.annotations.crossplane\\\\.io/external-name}\"]}\n",
			[]string{"rules[0].verify.http.url: Invalid value: \"https://x/v1/{.status.atProvider.arn}\": {.status.atProvider.arn} reads status.atProvider.arn, which preset crossplane-managed reads identity arn from and trusts only when its operator wrote it: write {identity.arn}",
				"rules[0].verify.exec.command[1]: Invalid value", "write {identity.externalName}"}},
		// A parent of the identity's field, reached into by a wildcard or a recursive
		// descent, reads it around the preset too (#38's review).
		{"a preset's identity read through its parent", header + "rules:\n- name: p\n  preset: crossplane-managed\n  resources: [buckets.s3.aws.upbound.io]\n  verify:\n" +
			"    http: {url: \"https://x/v1/{.metadata.annotations.*}\"}\n" +
			"    exec: {command: [x, \"{..arn}\"]}\n",
			[]string{"rules[0].verify.http.url: Invalid value", "write {identity.externalName}", "rules[0].verify.exec.command[1]: Invalid value"}},
		{"an identity value in a URL that no preset gives", rule("    http: {url: \"https://x/v1/{identity.externalName}\"}\n") +
			"- name: p\n  preset: crossplane-managed\n  resources: [buckets.s3.aws.upbound.io]\n  verify:\n    http: {url: \"https://x/v1/{identity.nope}?a=b\"}\n",
			[]string{`rules[0].verify.http.url: Invalid value: "https://x/v1/{identity.externalName}": {identity.externalName} needs a preset: identity values come from one`,
				`rules[1].verify.http.url: Invalid value: "https://x/v1/{identity.nope}?...": preset crossplane-managed has no identity value nope; it has`}},
		{"credentials in the policy", rule("    http: {url: \"https://x/y\", headers: [{name: X-Api-Key, value: abc}]}\n"), []string{"rules[0].verify.http.headers[0].value: Forbidden: header X-Api-Key carries credentials"}},
		{"an Azure API Management key", rule("    http: {url: \"https://x/y\", headers: [{name: Ocp-Apim-Subscription-Key, value: abc}]}\n"), []string{"headers[0].value: Forbidden: header Ocp-Apim-Subscription-Key carries credentials"}},
		{"more credential headers", rule("    http: {url: \"https://x/y\", headers: [{name: X-Auth-Token, value: a}, {name: Private-Token, value: b}, {name: X-Functions-Key, value: c}, {name: DD-Application-Key, value: d}, {name: X-Session-Id, value: e}, {name: X-Goog-Iap-Jwt-Assertion, value: f}, {name: X-Hub-Signature, value: g}]}\n"),
			[]string{"headers[0].value: Forbidden", "headers[1].value: Forbidden", "headers[2].value: Forbidden", "headers[3].value: Forbidden", "headers[4].value: Forbidden", "headers[5].value: Forbidden", "headers[6].value: Forbidden"}},
		{"a credential in the URL's query", rule("    http: {url: \"https://x/v1/{.status.id}?region=eu&api_key=abc123\"}\n"),
			[]string{"rules[0].verify.http.url: Forbidden: query parameter api_key carries credentials", "add it under query with valueFrom"}},
		{"credential query parameters of every kind", rule("    http: {url: \"https://x/y?apikey=1&key=2&token=3&access_token=4&sig=5&signature=6&X-Amz-Signature=7&X-Goog-Signature=8&password=9&secret=10&client_secret=11&X-Amz-Security-Token=12&subscription-key=13\"}\n"),
			[]string{"parameter apikey ", "parameter key ", "parameter token ", "parameter access_token ", "parameter sig ", "parameter signature ", "parameter X-Amz-Signature ", "parameter X-Goog-Signature ", "parameter password ", "parameter secret ", "parameter client_secret ", "parameter X-Amz-Security-Token ", "parameter subscription-key "}},
		{"a credential in query with a value", rule("    http: {url: \"https://x/y\", query: [{name: api_key, value: abc}]}\n"), []string{"query[0].value: Forbidden: query parameter api_key carries credentials"}},
		{"query without a value", rule("    http: {url: \"https://x/y\", query: [{name: region}, {name: \"\", value: a}, {name: \"a&b\", value: c}, {name: t, value: a, valueFrom: {env: T}}, {name: t, valueFrom: {}}]}\n"),
			[]string{"query[0].value: Required value: set value or valueFrom", "query[1].name: Required value", `query[2].name: Invalid value: "a&b"`, "query[3]: Invalid value: \"t\": set value or valueFrom, not both", "query[4].valueFrom: Invalid value: set exactly one of env and file"}},
		{"credentials in an exec env", rule("    exec: {command: [x], env: [{name: API_TOKEN, value: s3cr3t}, {name: AWS_SECRET_ACCESS_KEY, value: a}, {name: PGPASSWORD, value: b}, {name: GITHUB_TOKEN, value: c}]}\n"),
			[]string{"rules[0].verify.exec.env[0].value: Forbidden: environment variable API_TOKEN carries credentials: credentials come from valueFrom (an environment variable or a file), never from the policy text",
				"env[1].value: Forbidden", "env[2].value: Forbidden", "env[3].value: Forbidden"}},
		{"an exec env's value and valueFrom", rule("    exec: {command: [x], env: [{name: A, value: a, valueFrom: {env: B}}, {name: C, valueFrom: {env: D, file: /e}}]}\n"),
			[]string{`exec.env[0]: Invalid value: "A": set value or valueFrom, not both`, "exec.env[1].valueFrom: Invalid value: set exactly one of env and file"}},
		{"redirects", rule("    http: {url: \"https://x/y\", redirects: Follow}\n"), []string{`verify.http.redirects: Unsupported value: "Follow": supported values: "Refuse", "SameHost"`}},
		{"a redirect as a verdict", rule("    http: {url: \"https://x/y\", gone: [404, 302], present: [301]}\n"), []string{"gone[1]: Invalid value: 302: a 3xx is a redirect, which is never a verdict", "present[0]: Invalid value: 301: a 3xx is a redirect"}},
		{"value and valueFrom", rule("    http: {url: \"https://x/y\", headers: [{name: X-A, value: a, valueFrom: {env: B}}]}\n"), []string{"set value or valueFrom, not both"}},
		{"both env and file", rule("    http: {url: \"https://x/y\", headers: [{name: X-A, valueFrom: {env: B, file: /c}}]}\n"), []string{"set exactly one of env and file"}},
		{"statuses", rule("    http: {url: \"https://x/y\", gone: [404, 999, 503], present: [404]}\n"), []string{"gone[1]: Invalid value: 999: not an HTTP status", "gone[2]: Invalid value: 503: 429 and 5xx are retried", "present: Invalid value: 404: a status cannot mean both gone and present"}},
		{"a method that changes things", rule("    http: {url: \"https://x/y\", method: DELETE}\n"), []string{`method: Unsupported value: "DELETE"`}},
		{"a response without gone values", rule("    http: {url: \"https://x/y\", response: {jsonPath: \"{.state\"}}\n"), []string{"response.jsonPath: Invalid value", "response.gone: Required value"}},
		{"name and selector", rule("    kubernetes: {resource: pods, name: a, selector: b=c}\n"), []string{"set exactly one of name and selector"}},
		{"bad selector", rule("    kubernetes: {resource: pods, selector: \"a in ({.metadata.name}\"}\n"), []string{"verify.kubernetes.selector: Invalid value"}},
		{"controls", header + "rules:\n- {name: a, finalizers: [x], resources: [configmaps], verify: {exec: {command: [x]}}, controls: {count: 21}}\n", []string{"rules[0].controls.count: Invalid value: 21: must be between 0 and 20"}},
		{"operatorManagers without a preset", header + "rules:\n- {name: a, finalizers: [x], resources: [configmaps], operatorManagers: [my-operator], verify: {exec: {command: [x]}}}\n",
			[]string{`rules[0].operatorManagers: Invalid value: ["my-operator"]: names the field managers of the operator of a preset, and the rule names none (rule a)`}},
		{"operatorManagers naming generic clients", header + "rules:\n- {name: a, preset: ack, resources: [buckets.s3.services.k8s.aws], operatorManagers: [controller, \"\", kubectl-edit, \"*\", helm], verify: {exec: {command: [x]}}}\n",
			[]string{`rules[0].operatorManagers[1]: Invalid value: "": must not be empty`, `rules[0].operatorManagers[2]: Invalid value: "kubectl-edit": is a generic client`,
				`rules[0].operatorManagers[3]: Invalid value: "*": matches kubectl, a generic client`, `rules[0].operatorManagers[4]: Invalid value: "helm": is a generic client`}},
		{"operatorManagers with any writer trusted", header + "rules:\n- {name: a, preset: ack, resources: [buckets.s3.services.k8s.aws], operatorManagers: [controller], trustIdentityFromAnyWriter: true, verify: {exec: {command: [x]}}}\n",
			[]string{"rules[0].operatorManagers: Forbidden: has no effect with trustIdentityFromAnyWriter"}},
		{"operatorManagers of pods", header + "rules:\n- {name: a, waitsForNode: true, operatorManagers: [controller], verify: {exec: {command: [x]}}}\n",
			[]string{"rules[0].operatorManagers: Forbidden: does not apply to a rule with waitsForNode"}},
		{"never matches", header + "rules:\n- {name: all, finalizers: [\"*\"], verify: {exec: {command: [x]}}}\n- {name: db, finalizers: [db.example.com/x], resources: [databases.db.example.com], verify: {exec: {command: [x]}}}\n",
			[]string{`rules[1]: Invalid value: "db": can never match: rule all before it matches every finalizer of every object it would`}},
		{"excluded entirely", header + "exclude: {namespaces: [\"prod-*\"]}\nrules:\n- {name: a, finalizers: [x], resources: [configmaps], namespaces: [prod-a], verify: {exec: {command: [x]}}}\n",
			[]string{"rules[0].namespaces: Invalid value", "can never match: exclude.namespaces excludes them all"}},
		{"a selector that contradicts itself", header + "rules:\n- {name: a, finalizers: [x], resources: [configmaps], selector: \"team=data,team=web\", verify: {exec: {command: [x]}}}\n",
			[]string{`rules[0].selector: Invalid value: "team=data,team=web": can never match: no value of label team meets team=data and team=web at once (rule a)`}},
		{"an empty exclude selector", header + "exclude: {selectors: [\"\", \"  \"]}\nrules:\n- {name: a, finalizers: [x], resources: [configmaps], verify: {exec: {command: [x]}}}\n",
			[]string{`exclude.selectors[0]: Invalid value: "": selects every object, so no rule could ever match (a)`, `exclude.selectors[1]: Invalid value: "  ": selects every object`}},
		{"an exclude selector that can never match", header + "exclude: {selectors: [\"keep,!keep\"]}\nrules:\n- {name: a, finalizers: [x], resources: [configmaps], verify: {exec: {command: [x]}}}\n",
			[]string{`exclude.selectors[0]: Invalid value: "keep,!keep": can never match, so it excludes nothing: no value of label keep meets keep and !keep at once`}},
		{"an exclude selector that excludes every object a rule selects", header + "exclude: {selectors: [\"tier=db\"]}\nrules:\n- {name: a, finalizers: [x], resources: [configmaps], selector: \"team=data,tier=db\", verify: {exec: {command: [x]}}}\n",
			[]string{`rules[0].selector: Invalid value: "team=data,tier=db": can never match: the exclude selector "tier=db" excludes every object it selects`}},
		{"an exclude of every type", header + "exclude: {resources: [\"*\"]}\nrules:\n- {name: a, finalizers: [x], verify: {exec: {command: [x]}}}\n- {name: b, finalizers: [yy.example.com], resources: [configmaps], verify: {exec: {command: [x]}}}\n",
			[]string{`rules[0]: Invalid value: "a": can never match: exclude.resources excludes every type`, `rules[1].resources: Invalid value: ["configmaps"]: can never match: exclude.resources excludes them all`}},
		{"an exclude of every namespace, and a rule of pods", header + "exclude: {namespaces: [\"*\"]}\nrules:\n- {name: a, waitsForNode: true}\n",
			[]string{`rules[0]: Invalid value: "a": can never match: exclude.namespaces excludes every namespace, and the rule matches pods`}},
		{"an exclude of pods, and a rule of pods", header + "exclude: {resources: [pods]}\nrules:\n- {name: a, waitsForNode: true}\n",
			[]string{`rules[0].resources: Invalid value: ["pods"]: can never match: exclude.resources excludes them all`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs := Decode([]byte(tt.doc))
			if spec != nil {
				_, more, _ := Compile(spec)
				errs = append(errs, more...)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			joined := strings.Join(got, "\n")
			for _, w := range tt.want {
				if !strings.Contains(joined, w) {
					t.Errorf("errors:\n%s\nwant one with %q", joined, w)
				}
			}
		})
	}
}

// TestWhatIsNotACredential: names that only look like a credential's are allowed in the
// policy text.
func TestWhatIsNotACredential(t *testing.T) {
	p, warnings := compile(t, header+`rules:
- name: r
  finalizers: [a.example.com/x]
  resources: [secrets]
  verify:
    http:
      url: "https://x/v1/{.status.id}?region=eu&code=EU&monkey=1&keyword=a&sort_order=asc"
      query: [{name: name, value: "{.metadata.name}"}, {name: api_key, valueFrom: {env: KEY}}]
      headers: [{name: X-Request-Id, value: "{.metadata.uid}"}, {name: Accept-Language, value: en}]
      redirects: SameHost
- name: e
  finalizers: [b.example.com/x]
  resources: [secrets]
  verify:
    exec: {command: [x], secretData: true, env: [{name: REGION, value: eu}, {name: API_TOKEN, valueFrom: {env: T}}, {name: TOKEN_TTL, value: ""}]}
`)
	if len(p.Rules) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "rules[1].verify.exec.secretData: secretData is true: the program reads the values of every Secret the rule matches") {
		t.Errorf("warnings %q", warnings)
	}
}

func TestMatching(t *testing.T) {
	p, _ := compile(t, valid)
	databases := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}, Namespaced: true}
	buckets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "storage.example.com", Version: "v1", Resource: "buckets"}}
	namespaces := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}
	tests := []struct {
		name      string
		r         kube.Resource
		ns, obj   string
		labels    map[string]string
		finalizer string
		want      string
	}{
		{"the first rule", databases, "prod-eu", "orders", map[string]string{"team": "data"}, "db.example.com/finalizer", "managed-databases"},
		{"the selector does not match: the next rule", databases, "prod-eu", "orders", map[string]string{"team": "web"}, "db.example.com/finalizer", "buckets"},
		{"another namespace: the next rule", databases, "dev", "orders", map[string]string{"team": "data"}, "db.example.com/finalizer", "buckets"},
		{"a cluster-scoped object", buckets, "", "logs", nil, "storage.example.com/cleanup", "buckets"},
		{"no rule", databases, "prod-eu", "orders", nil, "other.io/x", ""},
		{"an excluded namespace", databases, "kube-system", "orders", map[string]string{"team": "data"}, "db.example.com/finalizer", ""},
		{"the namespace object itself is excluded", namespaces, "", "kube-system", nil, "a.example.com/x", ""},
		{"an excluded label", databases, "prod-eu", "orders", map[string]string{"team": "data", "keep": "true"}, "db.example.com/finalizer", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if r := p.Match(SubjectOf(tt.r, tt.ns, tt.obj, tt.labels), tt.finalizer); r != nil {
				got = r.Name
			}
			if got != tt.want {
				t.Errorf("matched %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScope(t *testing.T) {
	p, _ := compile(t, valid)
	if sc := p.Scope(); sc.Resources != nil || sc.Namespaces != nil {
		t.Errorf("a rule without resources needs every type: %+v", sc)
	}
	p, _ = compile(t, header+`rules:
- {name: a, finalizers: [x], resources: [databases.db.example.com], namespaces: [prod], verify: {exec: {command: [x]}}}
- {name: b, finalizers: [yy.example.com], resources: [configmaps], namespaces: [prod, stage], verify: {exec: {command: [x]}}}
`)
	if sc := p.Scope(); strings.Join(sc.Resources, ",") != "configmaps,databases.db.example.com" || strings.Join(sc.Namespaces, ",") != "prod,stage" {
		t.Errorf("scope %+v", sc)
	}
}

// TestAValueAnyoneMayEditIsWarnedAbout: a template that reads an annotation or a label
// is allowed, with a warning that names it; one that reads status is not warned about.
func TestAValueAnyoneMayEditIsWarnedAbout(t *testing.T) {
	rule := func(url string) string {
		return header + "rules:\n- name: dbs\n  finalizers: [db.example.com/finalizer]\n  resources: [databases.db.example.com]\n  verify:\n    http:\n      url: \"" + url + "\"\n"
	}
	for _, url := range []string{
		`https://db.example.com/v1/instances/{.metadata.annotations.instance}`,
		`https://db.example.com/v1/instances/{ .metadata.labels['db\\.example\\.com/id']}`,
	} {
		_, warnings := compile(t, rule(url))
		if len(warnings) != 1 || !strings.Contains(warnings[0], "rules[0].verify.http.url") || !strings.Contains(warnings[0], "which anyone who may edit the object can change") {
			t.Errorf("%s: warnings %q", url, warnings)
		}
	}
	if _, warnings := compile(t, rule(`https://db.example.com/v1/instances/{.status.instanceID}`)); len(warnings) != 0 {
		t.Errorf("status: warnings %q", warnings)
	}
}

// TestAURLMessageShowsNoCredential: what policy check says about a URL (an error, the
// plain-http warning) never repeats a credential written in it.
func TestAURLMessageShowsNoCredential(t *testing.T) {
	for _, url := range []string{"ftp://db.example.com/x?token=S3CR3T-VALUE", "http://db.example.com/x?access_token=S3CR3T-VALUE"} {
		spec, errs := Decode([]byte(header + "rules:\n- name: r\n  finalizers: [a.example.com/x]\n  resources: [configmaps]\n  verify:\n    http: {url: \"" + url + "\"}\n"))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		_, errs, warnings := Compile(spec)
		said := errs.ToAggregate().Error() + strings.Join(warnings, "\n")
		if strings.Contains(said, "S3CR3T") || len(errs) == 0 {
			t.Errorf("%s: %s", url, said)
		}
	}
}
