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
			obj("", "b", map[string]string{"crossplane.io/external-name": "logs"}, map[string]any{"spec": map[string]any{"forProvider": map[string]any{"region": "eu-west-1"}, "deletionPolicy": "Orphan"},
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
		o.SetManagedFields(entries)
		return o
	}
	const byFinalizer = "the operator is taken to be provider-aws, who wrote finalizer " + fin
	p, _ := Lookup("crossplane-managed")
	tests := []struct {
		name string
		o    *unstructured.Unstructured
		used func(string) bool
		want []string
	}{
		{name: "all the operator's", o: crossplane(entry("provider-aws", "", bothBy), entry("provider-aws", "status", arnBy), entry("kubectl-client-side-apply", "", regionBy))},
		{name: "the operator known by its status, the finalizer from a manifest",
			o: crossplane(entry("kubectl-client-side-apply", "", finalizerBy), entry("provider-aws", "", annotationBy), entry("provider-aws", "status", arnBy))},
		{name: "an annotation kubectl wrote", o: crossplane(entry("provider-aws", "", finalizerBy), entry("kubectl-annotate", "", annotationBy), entry("provider-aws", "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by kubectl-annotate, not by the operator (identity externalName; " + byFinalizer + ")"}},
		// Clients no blocklist knows: every one is someone other than the operator.
		{name: "curl through kubectl proxy", o: crossplane(entry("provider-aws", "", finalizerBy), entry("curl", "", annotationBy), entry("provider-aws", "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by curl, not by the operator (identity externalName; " + byFinalizer + ")"}},
		{name: "the Python client", o: crossplane(entry("provider-aws", "", finalizerBy), entry("OpenAPI-Generator", "", annotationBy), entry("provider-aws", "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by OpenAPI-Generator, not by the operator (identity externalName; " + byFinalizer + ")"}},
		{name: "kubectl annotate --field-manager", o: crossplane(entry("provider-aws", "", finalizerBy), entry("crossplane-helper", "", annotationBy), entry("provider-aws", "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by crossplane-helper, not by the operator (identity externalName; " + byFinalizer + ")"}},
		{name: "shared with another writer", o: crossplane(entry("provider-aws", "", bothBy), entry("my-script", "", annotationBy), entry("provider-aws", "status", arnBy)),
			want: []string{"annotation crossplane.io/external-name was last written by my-script, not by the operator (identity externalName; " + byFinalizer + ")"}},
		{name: "status patched by hand", o: crossplane(entry("provider-aws", "", bothBy), entry("kubectl-patch", "status", arnBy)),
			want: []string{"status.atProvider.arn was last written by kubectl-patch, not by the operator (identity arn; " + byFinalizer + ")"}},
		// A status writer does not join a finalizer writer: curl on /status is not the
		// operator because it wrote status.
		{name: "status patched with curl", o: crossplane(entry("provider-aws", "", bothBy), entry("curl", "status", arnBy)),
			want: []string{"status.atProvider.arn was last written by curl, not by the operator (identity arn; " + byFinalizer + ")"}},
		{name: "no operator identifiable", o: crossplane(entry("argocd-controller", "", bothBy), entry("kubectl-patch", "status", arnBy)),
			want: []string{
				"annotation crossplane.io/external-name was last written by argocd-controller, and the operator could not be identified from managedFields (no manager but a generic client wrote finalizer " + fin + ", and none wrote the status subresource), so it is not known to be the operator's (identity externalName)",
				"status.atProvider.arn was last written by kubectl-patch, and the operator could not be identified from managedFields (no manager but a generic client wrote finalizer " + fin + ", and none wrote the status subresource), so it is not known to be the operator's (identity arn)"}},
		{name: "no managedFields at all", o: crossplane(),
			want: []string{
				"no managedFields entry says who wrote annotation crossplane.io/external-name (identity externalName), so it is not known to be the operator's",
				"no managedFields entry says who wrote status.atProvider.arn (identity arn), so it is not known to be the operator's"}},
		{name: "no entry", o: crossplane(entry("provider-aws", "", finalizerBy), entry("provider-aws", "status", arnBy)),
			want: []string{"no managedFields entry says who wrote annotation crossplane.io/external-name (identity externalName), so it is not known to be the operator's"}},
		{name: "only what the request uses", o: crossplane(entry("provider-aws", "", finalizerBy), entry("kubectl-annotate", "", annotationBy), entry("provider-aws", "status", arnBy)),
			used: func(name string) bool { return name == "arn" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.UntrustedIdentity(tt.o, fin, tt.used); !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}

	// A field in a list is owned at the list.
	lb, _ := Lookup("aws-load-balancer")
	svc := obj("web", "front", nil, map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "lb.example.com"}}}}})
	svc.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("aws-load-balancer-controller", "", `{"f:metadata":{"f:finalizers":{".":{},"v:\"service.k8s.aws/resources\"":{}}}}`),
		entry("kubectl-edit", "status", `{"f:status":{"f:loadBalancer":{"f:ingress":{}}}}`)})
	if got := lb.UntrustedIdentity(svc, "service.k8s.aws/resources", nil); len(got) != 1 || !strings.HasPrefix(got[0], "status.loadBalancer.ingress[0].hostname was last written by kubectl-edit, not by the operator") {
		t.Errorf("load balancer: %q", got)
	}
}

func TestOperatorManagers(t *testing.T) {
	entry := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	const fin = "finalizers.s3.services.k8s.aws/Bucket"
	finalizerBy := `{"f:metadata":{"f:finalizers":{".":{},"v:\"` + fin + `\"":{}}}}`
	otherFinalizer := `{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/other\"":{}}}}`
	const status = `{"f:status":{".":{}}}`
	tests := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		want    []string
	}{
		{"the finalizer's writer", []metav1.ManagedFieldsEntry{entry("ack-s3-controller", "", finalizerBy), entry("other-controller", "status", status)}, []string{"ack-s3-controller"}},
		{"a generic writer of the finalizer is not", []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", finalizerBy), entry("ack-s3-controller", "status", status)}, []string{"ack-s3-controller"}},
		{"another finalizer's writer is not", []metav1.ManagedFieldsEntry{entry("other-controller", "", otherFinalizer)}, nil},
		{"a generic status writer is not", []metav1.ManagedFieldsEntry{entry("helm", "", finalizerBy), entry("kubectl-patch", "status", status)}, nil},
		{"nothing", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := operatorManagers(tt.managed, fin); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
