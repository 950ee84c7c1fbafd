package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
)

// values are the chart's CI values of each shape (ci/, left out of the package).
func values(shape string) string { return filepath.Join(Chart(), "ci", shape+"-values.yaml") }

// TestTheChartLints: helm lint --strict passes for both shapes.
func TestTheChartLints(t *testing.T) {
	for _, shape := range []string{"cronjob", "deployment"} {
		if r := Run(t, nil, "lint", "--strict", Chart(), "-f", values(shape)); r.Err != nil {
			t.Errorf("helm lint of the %s shape: %v\n%s%s", shape, r.Err, r.Stdout, r.Stderr)
		}
	}
}

// TestWhatTheChartRefuses: values that would install something that cannot work, or
// that would keep a credential in the release, fail the install with the value named.
func TestWhatTheChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no policy", []string{"--set", "policy.content="}, "no policy: pass one with --set-file policy.content=policy.yaml"},
		{"two policies", []string{"--set", "policy.existingConfigMap=mine"}, "set one of policy.content and policy.existingConfigMap, not both"},
		{"no grants", []string{"--set", "rbac.clusterRules=null"}, "rbac.clusterRules is empty: generate the RBAC of your policy with `kubectl finalize rbac --policy policy.yaml -o helm-values"},
		{"a credential written inline", []string{"--set", "credentials.env[0].name=TOKEN,credentials.env[0].value=s3cr3t"}, "at '/credentials/env/0': additional properties 'value' not allowed"},
		{"a shape the chart has not", []string{"--set", "mode=daemonset"}, "at '/mode'"},
		{"a value the chart does not read", []string{"--set", "schedule=@hourly"}, "additional properties 'schedule' not allowed"},
		{"a digest that is not one", []string{"--set", "image.digest=latest"}, "at '/image/digest': 'latest' does not match"},
		{"a textfile without its directory", []string{"--set", "cronjob.metrics.textfile=kubectl-finalize.prom"}, "cronjob.metrics.textfile needs cronjob.metrics.textfileHostPath"},
		{"a ServiceMonitor without its Service", []string{"--set", "deployment.metrics.service.enabled=false"}, "deployment.metrics.serviceMonitor needs deployment.metrics.service.enabled"},
		// What would put a credential in the release, or send the ServiceAccount's token
		// elsewhere, or silence the audit.
		{"a Pushgateway URL with a password", []string{"--set", "cronjob.metrics.pushgateway=https://user:s3cr3t@push.example.com"}, "at '/cronjob/metrics/pushgateway'"},
		{"a token as an argument", []string{"--set", "extraArgs={--token=eyJhbGciOi}"}, "at '/extraArgs/0'"},
		{"another API server", []string{"--set", "extraArgs={--server=https://evil.example.com}"}, "at '/extraArgs/0'"},
		{"the audit silenced", []string{"--set", "extraArgs={--audit-log=/dev/null}"}, "at '/extraArgs/0'"},
		// What would inject arguments, mounts or a privileged pod.
		{"a grouping label with a line break", []string{"--set-json", `cronjob.metrics.pushGrouping=["x\n- --audit-log"]`}, "at '/cronjob/metrics/pushGrouping/0'"},
		{"a mount over the policy", []string{"--set", "credentials.files[0].mountPath=/etc/kubectl-finalize"}, "at '/credentials/files/0/mountPath'"},
		{"a mount path with a line break", []string{"--set-json", `credentials.files[0].mountPath="/x\n  - name: policy"`}, "at '/credentials/files/0/mountPath'"},
		{"root", []string{"--set", "podSecurityContext.runAsUser=0"}, "at '/podSecurityContext/runAsUser'"},
		{"a pod that may run as root", []string{"--set", "podSecurityContext.runAsNonRoot=false"}, "additional properties 'runAsNonRoot' not allowed"},
		{"the node's root as the textfile directory", []string{"--set", "cronjob.metrics.textfile=k.prom,cronjob.metrics.textfileHostPath=/"}, "at '/cronjob/metrics/textfileHostPath'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shape := "cronjob"
			if strings.Contains(tc.name, "ServiceMonitor") {
				shape = "deployment"
			}
			r := Run(t, nil, append([]string{"template", "t", Chart(), "-f", values(shape)}, tc.args...)...)
			if r.Err == nil || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("helm template %v: %v, stderr:\n%s\nwant an error saying %q", tc.args, r.Err, r.Stderr, tc.want)
			}
		})
	}
}

// TestThePodIsTheShippedOne: the chart's pod runs as docs/deploy's manifests run it
// (restricted Pod Security, the same resources), and the image is pinned by digest when
// one is given.
func TestThePodIsTheShippedOne(t *testing.T) {
	shipped, err := os.ReadFile(overlay.RepoPath("docs", "deploy", "cronjob", "cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want batchv1.CronJob
	if err := yaml.Unmarshal(shipped, &want); err != nil {
		t.Fatal(err)
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	r := Run(t, nil, "template", "t", Chart(), "-n", "ops", "-f", values("cronjob"), "--set", "image.digest="+digest, "--show-only", "templates/cronjob.yaml")
	if r.Err != nil {
		t.Fatalf("%v\n%s", r.Err, r.Stderr)
	}
	var got batchv1.CronJob
	if err := yaml.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatal(err)
	}
	gp, wp := got.Spec.JobTemplate.Spec.Template.Spec, want.Spec.JobTemplate.Spec.Template.Spec
	gc, wc := gp.Containers[0], wp.Containers[0]
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"the pod's securityContext", gp.SecurityContext, wp.SecurityContext},
		{"the container's securityContext", gc.SecurityContext, wc.SecurityContext},
		{"the resources", gc.Resources, wc.Resources},
		{"restartPolicy", gp.RestartPolicy, wp.RestartPolicy},
		{"the schedule", got.Spec.Schedule, want.Spec.Schedule},
		{"concurrencyPolicy", got.Spec.ConcurrencyPolicy, want.Spec.ConcurrencyPolicy},
		{"backoffLimit", got.Spec.JobTemplate.Spec.BackoffLimit, want.Spec.JobTemplate.Spec.BackoffLimit},
		{"the arguments", gc.Args, wc.Args},
	} {
		if g, w := toYAML(t, c.got), toYAML(t, c.want); g != w {
			t.Errorf("%s:\n%s\nwant docs/deploy's:\n%s", c.what, g, w)
		}
	}
	if wantImage := "ghcr.io/kubectl-finalize/kubectl-finalize:v0.1.0@" + digest; gc.Image != wantImage {
		t.Errorf("image %s, want %s", gc.Image, wantImage)
	}
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryArgumentIsAString: values reach the container's arguments as YAML strings,
// whatever they hold (a colon, a hash), never as YAML of their own; and a Pushgateway
// URL may come from an environment variable of a Secret ($(VAR)), as docs/reconcile.md
// shows.
func TestEveryArgumentIsAString(t *testing.T) {
	r := Run(t, nil, "template", "t", Chart(), "-f", values("cronjob"), "--show-only", "templates/cronjob.yaml",
		"--set", "cronjob.metrics.pushgateway=$(PUSHGATEWAY_URL)", "--set", "cronjob.metrics.pushJob=kubectl finalize: prod",
		"--set-json", `cronjob.metrics.pushGrouping=["cluster=prod #eu"]`,
		"--set", "credentials.env[0].name=PUSHGATEWAY_URL,credentials.env[0].secretName=pushgateway,credentials.env[0].key=url")
	if r.Err != nil {
		t.Fatalf("%v\n%s", r.Err, r.Stderr)
	}
	var got batchv1.CronJob
	if err := yaml.UnmarshalStrict([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, r.Stdout)
	}
	args := got.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--metrics-push-url=$(PUSHGATEWAY_URL)", "--metrics-push-job=kubectl finalize: prod", "--metrics-push-grouping=cluster=prod #eu"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q, want %q among them", args, want)
		}
	}
}
