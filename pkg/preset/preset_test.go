package preset

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(ns, name string, annotations map[string]string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func TestPresets(t *testing.T) {
	retainNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Annotations: map[string]string{"rds.services.k8s.aws/deletion-policy": "Retain"}}}
	tests := []struct {
		preset, finalizer string
		obj               *unstructured.Unstructured
		ns                *corev1.Namespace
		identity          string
		retained, held    string
	}{
		{"crossplane-managed", "finalizer.managedresource.crossplane.io",
			obj("", "b", map[string]string{"crossplane.io/external-name": "logs"}, map[string]any{"apiVersion": "s3.aws.upbound.io/v1beta1",
				"spec":   map[string]any{"forProvider": map[string]any{"region": "eu-west-1"}, "deletionPolicy": "Orphan"},
				"status": map[string]any{"atProvider": map[string]any{"arn": "arn:aws:s3:::logs"}}}), nil,
			"arn=arn:aws:s3:::logs externalName=logs region=eu-west-1", "spec.deletionPolicy: Orphan", ""},
		{"crossplane-managed", "finalizer.managedresource.crossplane.io",
			obj("", "b", map[string]string{"crossplane.io/paused": "true"}, map[string]any{"spec": map[string]any{"managementPolicies": []any{"Observe", "Create", "Update"}}}), nil,
			"", "spec.managementPolicies: [Observe, Create, Update], without Delete", "annotation crossplane.io/paused: true"},
		{"crossplane-managed", "finalizer.managedresource.crossplane.io",
			obj("", "b", nil, map[string]any{"spec": map[string]any{"managementPolicies": []any{"*"}}}), nil, "", "", ""},
		{"ack", "finalizers.rds.services.k8s.aws/DBInstance",
			obj("prod", "db", nil, map[string]any{"status": map[string]any{"ackResourceMetadata": map[string]any{"arn": "arn:aws:rds:db", "ownerAccountID": "123", "region": "eu-west-1"}}}), retainNS,
			"arn=arn:aws:rds:db ownerAccountID=123 region=eu-west-1 service=rds", "namespace prod annotation rds.services.k8s.aws/deletion-policy: Retain", ""},
		{"ack", "finalizers.s3.services.k8s.aws/Bucket",
			obj("prod", "b", map[string]string{"services.k8s.aws/read-only": "true", "services.k8s.aws/deletion-policy": "retain"}, nil), retainNS,
			"service=s3", "annotation services.k8s.aws/deletion-policy: retain", "annotation services.k8s.aws/read-only: true"},
		{"config-connector", "cnrm.cloud.google.com/finalizer",
			obj("p", "sql-1", map[string]string{"cnrm.cloud.google.com/deletion-policy": "abandon"}, map[string]any{"status": map[string]any{"externalRef": "projects/p/instances/sql-1"}}), nil,
			"externalRef=projects/p/instances/sql-1 resourceID=sql-1", "annotation cnrm.cloud.google.com/deletion-policy: abandon", ""},
		{"aws-load-balancer", "service.k8s.aws/resources",
			obj("shop", "web", nil, map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "k8s-shop-web.elb.amazonaws.com"}}}}}), nil,
			"hostname=k8s-shop-web.elb.amazonaws.com stack=shop/web", "", ""},
		{"aws-load-balancer", "group.ingress.k8s.aws/storefront", obj("shop", "web", nil, nil), nil, "stack=storefront", "", ""},
		{"csi-volume", "external-provisioner.volume.kubernetes.io/finalizer",
			obj("", "pv-1", nil, map[string]any{"spec": map[string]any{"csi": map[string]any{"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}, "persistentVolumeReclaimPolicy": "Retain"}}), nil,
			"driver=ebs.csi.aws.com volumeHandle=vol-1", "spec.persistentVolumeReclaimPolicy: Retain", ""},
	}
	for _, tt := range tests {
		t.Run(tt.preset+" "+tt.finalizer, func(t *testing.T) {
			p, ok := Lookup(tt.preset)
			if !ok || !p.Matches(tt.finalizer) {
				t.Fatalf("preset %s does not handle %s", tt.preset, tt.finalizer)
			}
			if got, _ := ForFinalizer(tt.finalizer); got != p {
				t.Errorf("ForFinalizer(%s) = %v", tt.finalizer, got)
			}
			ids := p.IdentityOf(tt.obj, tt.finalizer)
			var got []string
			for _, name := range p.IdentityNames() {
				if v, ok := ids[name]; ok {
					got = append(got, name+"="+v)
				}
			}
			slices.Sort(got)
			if strings.Join(got, " ") != tt.identity {
				t.Errorf("identity %q, want %q", strings.Join(got, " "), tt.identity)
			}
			if r, _ := p.Retained(tt.obj, tt.ns, tt.finalizer); r != tt.retained {
				t.Errorf("retained %q, want %q", r, tt.retained)
			}
			if h, _ := p.Held(tt.obj, tt.ns, tt.finalizer); h != tt.held {
				t.Errorf("held %q, want %q", h, tt.held)
			}
		})
	}
	if _, ok := ForFinalizer("db.example.com/finalizer"); ok {
		t.Error("no preset handles an unknown finalizer")
	}
}

func TestUntrustedIdentity(t *testing.T) {
	entry := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	const fin = "finalizer.managedresource.crossplane.io"
	const annotationBy = `{"f:metadata":{"f:annotations":{".":{},"f:crossplane.io/external-name":{}}}}`
	const finalizerBy = `{"f:metadata":{"f:finalizers":{".":{},"v:\"finalizer.managedresource.crossplane.io\"":{}}}}`
	const bothBy = `{"f:metadata":{"f:annotations":{".":{},"f:crossplane.io/external-name":{}},"f:finalizers":{".":{},"v:\"finalizer.managedresource.crossplane.io\"":{}}}}`
	const arnBy = `{"f:status":{".":{},"f:atProvider":{".":{},"f:arn":{}}}}`
	const regionBy = `{"f:spec":{"f:forProvider":{"f:region":{}}}}`
	crossplane := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		o := obj("", "b", map[string]string{"crossplane.io/external-name": "logs"}, map[string]any{
			"spec":   map[string]any{"forProvider": map[string]any{"region": "eu-west-1"}},
			"status": map[string]any{"atProvider": map[string]any{"arn": "arn:aws:s3:::logs"}}})
		o.SetAPIVersion("s3.aws.upbound.io/v1beta1") // an upjet provider's
		o.SetManagedFields(entries)
		return o
	}
	// provider is an upjet provider's binary, as its client names itself.
	const provider = "provider"
	const names = "provider, crossplane-*-provider or crossplane-provider-* (as preset crossplane-managed names them; "
	p, _ := Lookup("crossplane-managed")
	renamed, err := NewManagers([]string{"my-provider"}, "rule s3's operatorManagers")
	if err != nil {
		t.Fatal(err)
	}
	unnamed := *p
	unnamed.managers = nil
	tests := []struct {
		name     string
		p        *Preset
		o        *unstructured.Unstructured
		used     func(string) bool
		operator *Managers
		want     []string
	}{
		{name: "all the operator's", o: crossplane(entry(provider, "", bothBy), entry(provider, "status", arnBy), entry("kubectl-client-side-apply", "", regionBy))},
		{name: "the finalizer from a manifest, the identity the operator's",
			o: crossplane(entry("kubectl-client-side-apply", "", finalizerBy), entry(provider, "", annotationBy), entry(provider, "status", arnBy))},
		{name: "another provider's binary name", o: crossplane(entry("crossplane-kubernetes-provider", "", bothBy), entry("crossplane-kubernetes-provider", "status", arnBy))},
		{name: "an annotation kubectl wrote", o: crossplane(entry(provider, "", finalizerBy), entry("kubectl-annotate", "", annotationBy), entry(provider, "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by kubectl-annotate, not by the operator, whose field managers are " + names + "identity externalName)"}},
		// Clients no blocklist knows: every one is someone other than the operator.
		{name: "curl through kubectl proxy", o: crossplane(entry(provider, "", finalizerBy), entry("curl", "", annotationBy), entry(provider, "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by curl, not by the operator, whose field managers are " + names + "identity externalName)"}},
		{name: "the Python client", o: crossplane(entry(provider, "", finalizerBy), entry("OpenAPI-Generator", "", annotationBy), entry(provider, "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by OpenAPI-Generator, not by the operator, whose field managers are " + names + "identity externalName)"}},
		{name: "kubectl annotate --field-manager", o: crossplane(entry(provider, "", finalizerBy), entry("crossplane-helper", "", annotationBy), entry(provider, "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by crossplane-helper, not by the operator, whose field managers are " + names + "identity externalName)"}},
		{name: "shared with another writer", o: crossplane(entry(provider, "", bothBy), entry("my-script", "", annotationBy), entry(provider, "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by my-script, not by the operator, whose field managers are " + names + "identity externalName)"}},
		{name: "status patched by hand", o: crossplane(entry(provider, "", bothBy), entry("kubectl-patch", "status", arnBy)),
			want: []string{"status.atProvider.arn was last written by kubectl-patch, not by the operator, whose field managers are " + names + "identity arn)"}},
		// Whoever wrote status is not the operator for it: a script that wrote the status
		// subresource and the annotation of an object whose finalizer came from a manifest.
		{name: "a script that wrote status", o: crossplane(entry("kubectl-create", "", finalizerBy), entry("ops-script", "", annotationBy), entry("ops-script", "status", arnBy)),
			want: []string{
				"annotation crossplane.io/external-name was last written by ops-script, not by the operator, whose field managers are " + names + "identity externalName)",
				"status.atProvider.arn was last written by ops-script, not by the operator, whose field managers are " + names + "identity arn)"}},
		{name: "a GitOps tool wrote it all", o: crossplane(entry("argocd-controller", "", bothBy), entry("kubectl-patch", "status", arnBy)),
			want: []string{
				"annotation crossplane.io/external-name was last written by argocd-controller, not by the operator, whose field managers are " + names + "identity externalName)",
				"status.atProvider.arn was last written by kubectl-patch, not by the operator, whose field managers are " + names + "identity arn)"}},
		{name: "no managedFields at all", o: crossplane(),
			want: []string{
				"no managedFields entry says who wrote annotation crossplane.io/external-name (identity externalName), so it is not known to be the operator's",
				"no managedFields entry says who wrote status.atProvider.arn (identity arn), so it is not known to be the operator's"}},
		{name: "no entry", o: crossplane(entry(provider, "", finalizerBy), entry(provider, "status", arnBy)),
			want: []string{"no managedFields entry says who wrote annotation crossplane.io/external-name (identity externalName), so it is not known to be the operator's"}},
		{name: "only what the request uses", o: crossplane(entry(provider, "", finalizerBy), entry("kubectl-annotate", "", annotationBy), entry(provider, "status", arnBy)),
			used: func(name string) bool { return name == "arn" }},
		// The rule names the operator's field managers in place of the preset's.
		{name: "the rule's names", o: crossplane(entry("my-provider", "", bothBy), entry("my-provider", "status", arnBy)), operator: renamed},
		{name: "the preset's names, not the rule's", o: crossplane(entry(provider, "", bothBy), entry("my-provider", "status", arnBy)), operator: renamed,
			want: []string{"annotation crossplane.io/external-name was last written by provider, not by the operator, whose field managers are my-provider (as rule s3's operatorManagers names them; identity externalName)"}},
		{name: "no names known", p: &unnamed, o: crossplane(entry(provider, "", bothBy)), used: func(name string) bool { return name == "externalName" },
			want: []string{"annotation crossplane.io/external-name was last written by provider, and the field managers of the operator of preset crossplane-managed are not known: name them in the rule's operatorManagers (identity externalName)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			preset := p
			if tt.p != nil {
				preset = tt.p
			}
			if got := preset.UntrustedIdentity(tt.o, fin, tt.used, tt.operator); !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}

	// A field in a list is owned at the list.
	lb, _ := Lookup("aws-load-balancer")
	svc := obj("web", "front", nil, map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "lb.example.com"}}}}})
	svc.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("controller", "", `{"f:metadata":{"f:finalizers":{".":{},"v:\"service.k8s.aws/resources\"":{}}}}`),
		entry("kubectl-edit", "status", `{"f:status":{"f:loadBalancer":{"f:ingress":{}}}}`)})
	if got := lb.UntrustedIdentity(svc, "service.k8s.aws/resources", nil, nil); len(got) != 1 || !strings.HasPrefix(got[0], "status.loadBalancer.ingress[0].hostname was last written by kubectl-edit, not by the operator, whose field managers are controller") {
		t.Errorf("load balancer: %q", got)
	}
	svc.SetManagedFields([]metav1.ManagedFieldsEntry{entry("controller", "status", `{"f:status":{"f:loadBalancer":{"f:ingress":{}}}}`)})
	if got := lb.UntrustedIdentity(svc, "service.k8s.aws/resources", nil, nil); len(got) != 0 {
		t.Errorf("load balancer, written by the controller: %q", got)
	}
}

// TestAnOperatorIsNoGenericClient: the names of an operator's field managers are names
// or globs, and none may be, or match, a client that writes what people and pipelines
// apply. Every preset's names pass.
func TestAnOperatorIsNoGenericClient(t *testing.T) {
	for _, m := range []string{"provider", "crossplane-*-provider", "controller", "cnrm-controller-manager", "my-operator"} {
		if err := CheckManager(m); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	for m, says := range map[string]string{
		"":               "must not be empty",
		" ":              "must not be empty",
		"*":              "matches kubectl, a generic client",
		"kubectl-*":      "is a generic client",
		"kube*":          "matches kubectl, a generic client",
		"helm":           "is a generic client",
		"Go-http-client": "is a generic client",
		"cur?":           "matches curl, a generic client",
		"*-agent":        "matches fleet-agent, a generic client",
		"*-manager":      "matches gotk-sync-manager, a generic client",
		"pulumi-*":       "matches pulumi-kubernetesx, a generic client",
	} {
		if err := CheckManager(m); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want %q", m, err, says)
		}
	}
	// A glob that no example of a generic client shows still never takes one for the
	// operator when it matches one by name.
	m, err := NewManagers([]string{"*-kubernetes-operator"}, "rule dbs's operatorManagers")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Match("db-kubernetes-operator") || m.Match("pulumi-kubernetes-operator") {
		t.Errorf("*-kubernetes-operator: db-kubernetes-operator %v (want true), pulumi-kubernetes-operator %v (want false)",
			m.Match("db-kubernetes-operator"), m.Match("pulumi-kubernetes-operator"))
	}
	for _, p := range All() {
		if len(p.Managers) == 0 || p.managers == nil {
			t.Errorf("preset %s names no field manager of its operator", p.Name)
		}
	}
}

// TestTheIdentityIsTheOneTheOperatorUses: crossplane-managed reads an object's identity
// where its provider reads it, told apart by API group (#38): provider-kubernetes names
// its resource by its manifest's object (the name defaulting to the Object's), never by
// the external-name the runtime sets to the Object's own name; upjet providers by the
// external name; a provider the preset does not know, or does not know the identity of,
// is not verified.
func TestTheIdentityIsTheOneTheOperatorUses(t *testing.T) {
	p, _ := Lookup("crossplane-managed")
	const fin = "finalizer.managedresource.crossplane.io"
	object := func(apiVersion, name string, manifest map[string]any) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Object",
			"metadata": map[string]any{"name": name, "annotations": map[string]any{"crossplane.io/external-name": name}},
			"spec":     map[string]any{"forProvider": map[string]any{"manifest": manifest}}}}
		return o
	}
	uses := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	// An Object whose manifest names another object.
	other := object("kubernetes.crossplane.io/v1alpha2", "held1", map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "target", "namespace": "team-a"}})
	if got := p.IdentityOf(other, fin); got["manifestName"] != "target" || got["manifestNamespace"] != "team-a" || got["manifestKind"] != "ConfigMap" ||
		got["manifestAPIVersion"] != "v1" || got["externalName"] != "" {
		t.Errorf("identity of an Object naming another object: %v", got)
	}
	if why := p.IdentityUnusable(other, uses("externalName")); !strings.Contains(why, "{identity.externalName} does not name the external resource of objects of provider-kubernetes") ||
		!strings.Contains(why, "{identity.manifestName}") {
		t.Errorf("a rule asking by externalName about an Object: %q", why)
	}
	if why := p.IdentityUnusable(other, uses("manifestName", "manifestNamespace")); why != "" {
		t.Errorf("a rule asking by the manifest: %q", why)
	}
	// A manifest without a name: the provider names it after the Object; v2's
	// namespaced Objects are the same family.
	unnamed := object("kubernetes.m.crossplane.io/v1alpha1", "held2", map[string]any{"apiVersion": "v1", "kind": "ConfigMap"})
	if got := p.IdentityOf(unnamed, fin); got["manifestName"] != "held2" {
		t.Errorf("identity of an Object whose manifest has no name: %v", got)
	}
	upjet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
		"metadata": map[string]any{"name": "b", "annotations": map[string]any{"crossplane.io/external-name": "logs-bucket"}}}}
	if got := p.IdentityOf(upjet, fin); got["externalName"] != "logs-bucket" || p.IdentityUnusable(upjet, uses("externalName")) != "" {
		t.Errorf("an upjet resource: %v, %q", got, p.IdentityUnusable(upjet, uses("externalName")))
	}
	for _, tc := range []struct{ apiVersion, want string }{
		{"helm.crossplane.io/v1beta1", "preset crossplane-managed does not verify provider-helm objects (API group helm.crossplane.io)"},
		{"database.example.org/v1", "preset crossplane-managed does not know where the operator of API group database.example.org takes the identity of its external resource"},
		// upbound's provider-terraform is not upjet's: its external name is a workspace's.
		{"tf.upbound.io/v1beta1", "preset crossplane-managed does not know where the operator of API group tf.upbound.io takes the identity of its external resource"},
	} {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tc.apiVersion, "kind": "X",
			"metadata": map[string]any{"name": "x", "annotations": map[string]any{"crossplane.io/external-name": "x"}}}}
		if got := p.IdentityOf(o, fin); len(got) != 0 {
			t.Errorf("%s: identity %v, want none", tc.apiVersion, got)
		}
		for _, used := range []func(string) bool{nil, uses("externalName")} {
			if why := p.IdentityUnusable(o, used); !strings.HasPrefix(why, tc.want) {
				t.Errorf("%s: %q, want it to start %q", tc.apiVersion, why, tc.want)
			}
		}
	}
}

// TestTheOperatorsRecordMustHoldTheIdentity: provider-kubernetes deletes the object its
// Object's manifest names now, but the object it made is the one it recorded in
// status.atProvider.manifest. A manifest changed after the provider stopped, or never
// acted on, names an object that may not exist while the one it made remains: Unknown.
// The record counts only when the provider wrote it.
func TestTheOperatorsRecordMustHoldTheIdentity(t *testing.T) {
	p, _ := Lookup("crossplane-managed")
	const fin = "finalizer.managedresource.crossplane.io"
	const provider = "crossplane-kubernetes-provider"
	object := func(specName string, recorded map[string]any, statusWriter string) *unstructured.Unstructured {
		manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "team-a"}}
		if specName != "" {
			manifest["metadata"].(map[string]any)["name"] = specName
		}
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": map[string]any{"name": "held"},
			"spec":     map[string]any{"forProvider": map[string]any{"manifest": manifest}}}}
		if recorded != nil {
			o.Object["status"] = map[string]any{"atProvider": map[string]any{"manifest": recorded}}
		}
		o.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:forProvider":{"f:manifest":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:name":{},"f:namespace":{}}}}}}`)},
			{Manager: statusWriter, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:atProvider":{"f:manifest":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:name":{},"f:namespace":{},"f:uid":{}}}}}}`)},
		})
		return o
	}
	observed := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "team-a", "uid": "u-1"}}
	}
	for _, tc := range []struct {
		name           string
		o              *unstructured.Unstructured
		unrecorded     string
		untrusted      string
		wantIdentified bool
	}{
		{name: "the record holds the manifest's object", o: object("target", observed("target"), provider), wantIdentified: true},
		{name: "a manifest without a name: the provider's default, recorded", o: object("", observed("held"), provider), wantIdentified: true},
		{name: "the manifest was renamed after the provider stopped", o: object("renamed", observed("target"), provider),
			unrecorded: `spec.forProvider.manifest.metadata.name, else the Object's name is "renamed", but the operator last acted on "target" (status.atProvider.manifest.metadata.name)`},
		{name: "the provider never observed it", o: object("target", nil, provider),
			unrecorded: "the operator has not recorded the resource it acted on (identity manifestAPIVersion (status.atProvider.manifest.apiVersion), manifestKind (status.atProvider.manifest.kind), manifestNamespace (status.atProvider.manifest.metadata.namespace), manifestName (status.atProvider.manifest.metadata.name)): it never observed one"},
		{name: "a record someone else wrote", o: object("target", observed("target"), "kubectl-patch"),
			untrusted: "status.atProvider.manifest.metadata.name was last written by kubectl-patch, not by the operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uses := func(n string) bool { return n == "manifestName" || n == "manifestNamespace" }
			got := strings.Join(p.UnrecordedIdentity(tc.o, fin), "; ")
			if tc.unrecorded == "" && got != "" || !strings.Contains(got, tc.unrecorded) {
				t.Errorf("UnrecordedIdentity: %q, want %q", got, tc.unrecorded)
			}
			untrusted := strings.Join(p.UntrustedIdentity(tc.o, fin, uses, nil), "; ")
			if tc.untrusted == "" && untrusted != "" || !strings.Contains(untrusted, tc.untrusted) {
				t.Errorf("UntrustedIdentity: %q, want %q", untrusted, tc.untrusted)
			}
			// The spec's writer (a person's kubectl) is never what decides.
			if strings.Contains(untrusted, "kubectl-client-side-apply") {
				t.Errorf("the spec's writer was checked: %q", untrusted)
			}
			if ok := got == "" && untrusted == ""; ok != tc.wantIdentified {
				t.Errorf("identified %v, want %v", ok, tc.wantIdentified)
			}
		})
	}
}

// TestEveryValueOfTheRecordIsTheOperators: the writer of each value of the operator's
// record is checked, whichever values a rule's templates read: a rule's resource stands
// for the kind, which no template names, and a kind patched into both the spec and the
// record would have the rule ask for another type. A record that names no object (its
// kind and apiVersion blanked with the spec's) is no record.
func TestEveryValueOfTheRecordIsTheOperators(t *testing.T) {
	p, _ := Lookup("crossplane-managed")
	const fin = "finalizer.managedresource.crossplane.io"
	object := func(kind string, kindWriter string) *unstructured.Unstructured {
		manifest := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "x", "namespace": "app"}}
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": map[string]any{"name": "held"},
			"spec":     map[string]any{"forProvider": map[string]any{"manifest": manifest}},
			"status":   map[string]any{"atProvider": map[string]any{"manifest": manifest}}}}
		if kind == "" {
			unstructured.RemoveNestedField(o.Object, "spec", "forProvider", "manifest", "apiVersion")
			unstructured.RemoveNestedField(o.Object, "status", "atProvider", "manifest", "apiVersion")
		}
		o.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "crossplane-kubernetes-provider", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:atProvider":{"f:manifest":{"f:apiVersion":{},"f:metadata":{"f:name":{},"f:namespace":{}}}}}}`)},
			{Manager: kindWriter, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:atProvider":{"f:manifest":{"f:kind":{}}}}}`)},
		})
		return o
	}
	uses := func(n string) bool { return n == "manifestName" || n == "manifestNamespace" }
	if why := strings.Join(p.UntrustedIdentity(object("ConfigMap", "kubectl-patch"), fin, uses, nil), "; "); !strings.Contains(why, "status.atProvider.manifest.kind was last written by kubectl-patch") {
		t.Errorf("a kind patched into the record: %q", why)
	}
	if why := p.UntrustedIdentity(object("ConfigMap", "crossplane-kubernetes-provider"), fin, uses, nil); len(why) > 0 {
		t.Errorf("the provider's own record: %q", why)
	}
	if why := strings.Join(p.UnrecordedIdentity(object("", "crossplane-kubernetes-provider"), fin), "; "); !strings.Contains(why, "the operator has not recorded the resource it acted on") {
		t.Errorf("a record that names no type: %q", why)
	}
}
