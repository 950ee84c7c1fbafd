package seed

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// More field managers of the seeds.
const (
	ManagerLocker            = "locker-controller"
	ManagerAnalyticsOperator = "analytics-operator"
	ManagerBillingOperator   = "billing-operator"
)

// GuardWebhook is the name of the ValidatingWebhookConfiguration WebhookBlocking makes.
func (s *Seeder) GuardWebhook() string { return s.Name("guard") }

// WebhookBlocking seeds a configmap whose updates a failurePolicy Fail webhook rejects,
// because the webhook's service does not exist: nobody can remove its finalizer.
func (s *Seeder) WebhookBlocking(ctx context.Context) (Scenario, error) {
	ns := s.Name("guarded")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "locked", Labels: map[string]string{"guarded-by": s.GuardWebhook()}}}
	if _, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Scenario{}, fmt.Errorf("creating configmap %s/locked: %w", ns, err)
	}
	fin := s.Group("locker") + "/lock"
	o := Object{Resource: gvrConfigMaps, Namespace: ns, Name: "locked", Finalizers: []string{fin}}
	if err := s.AddFinalizer(ctx, o, fin, ManagerLocker); err != nil {
		return Scenario{}, err
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: s.GuardWebhook()},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "guard.locker.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "guard", Path: ptr.To("/validate")},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"guarded-by": s.GuardWebhook()}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	if _, err := s.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Scenario{}, fmt.Errorf("creating validatingwebhookconfiguration %s: %w", vwc.Name, err)
	}
	// A deletion is not an update: the webhook lets it through, and the finalizer holds.
	if err := s.terminate(ctx, o); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "webhook-blocking",
		Description: fmt.Sprintf("configmap %s/locked: webhook %s rejects every update, the removal of its finalizer included", ns, s.GuardWebhook()),
		Stuck:       []Object{o},
	}, nil
}

// FailingController seeds a database whose operator is alive but cannot delete the cloud
// database, and says so in warning Events.
func (s *Seeder) FailingController(ctx context.Context) (Scenario, error) {
	ns := s.Name("billing")
	o, err := s.terminatingDatabase(ctx, ns, "billing-db", ManagerBillingOperator)
	if err != nil {
		return Scenario{}, err
	}
	u, err := s.resource(o).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return Scenario{}, err
	}
	now := metav1.NowMicro()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("billing-db.%x", time.Now().UnixNano())},
		EventTime:           now,
		Series:              &eventsv1.EventSeries{Count: 7, LastObservedTime: now},
		ReportingController: ManagerBillingOperator,
		ReportingInstance:   ManagerBillingOperator + "-6d4cf56db6-x2k7p",
		Action:              "Delete",
		Reason:              "CleanupFailed",
		Note:                "deleting cloud database billing-db: 403 AccessDenied: the role has no rds:DeleteDBInstance",
		Type:                corev1.EventTypeWarning,
		Regarding:           corev1.ObjectReference{APIVersion: o.Resource.GroupVersion().String(), Kind: "Database", Namespace: ns, Name: o.Name, UID: u.GetUID()},
	}
	if _, err := s.Kube.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return Scenario{}, fmt.Errorf("creating a warning event about %s: %w", o, err)
	}
	return Scenario{
		Name:        "failing-controller",
		Description: fmt.Sprintf("database %s/billing-db: billing-operator runs but cannot delete the cloud database", ns),
		Stuck:       []Object{o},
	}, nil
}

// terminatingDatabase creates namespace ns and a database of operator in it, and
// deletes the database: its operator's finalizer holds it.
func (s *Seeder) terminatingDatabase(ctx context.Context, ns, name, operator string) (Object, error) {
	if err := s.Namespace(ctx, ns); err != nil {
		return Object{}, err
	}
	o, err := s.databaseAs(ctx, ns, name, operator)
	if err != nil {
		return Object{}, err
	}
	return o, s.terminate(ctx, o)
}

// BusyController seeds a database whose operator keeps working after the deletion began:
// not stuck, or not yet.
func (s *Seeder) BusyController(ctx context.Context) (Scenario, error) {
	ns := s.Name("analytics")
	o, err := s.terminatingDatabase(ctx, ns, "analytics-db", ManagerAnalyticsOperator)
	if err != nil {
		return Scenario{}, err
	}
	// managedFields keep seconds: write in a later second than the deletion.
	time.Sleep(1100 * time.Millisecond)
	status := []byte(`{"status":{"phase":"Deleting","message":"snapshot 3 of 5 copied"}}`)
	if _, err := s.resource(o).Patch(ctx, o.Name, types.MergePatchType, status, metav1.PatchOptions{FieldManager: ManagerAnalyticsOperator}, "status"); err != nil {
		return Scenario{}, fmt.Errorf("writing the status of %s: %w", o, err)
	}
	return Scenario{
		Name:        "busy-controller",
		Description: fmt.Sprintf("database %s/analytics-db: analytics-operator is still snapshotting it", ns),
		Stuck:       []Object{o},
	}, nil
}

// BoundVolume seeds a volume deleted while its claim still binds it.
func (s *Seeder) BoundVolume(ctx context.Context) (Scenario, error) {
	ns := s.Name("volumes")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	pvName := s.Name("pv-archive")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archive"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""), VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	claim, err := s.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{FieldManager: ManagerKubectl})
	if apierrors.IsAlreadyExists(err) {
		claim, err = s.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "archive", metav1.GetOptions{})
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("creating claim %s/archive: %w", ns, err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/archive"}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "archive", UID: claim.UID},
		},
	}
	created, err := s.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{FieldManager: ManagerKubectl})
	if apierrors.IsAlreadyExists(err) {
		created, err = s.Kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("creating volume %s: %w", pvName, err)
	}
	// The binder controller is not running: record the binding it would have made.
	created.Status.Phase = corev1.VolumeBound
	if _, err := s.Kube.CoreV1().PersistentVolumes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return Scenario{}, fmt.Errorf("binding volume %s: %w", pvName, err)
	}
	o := Object{Resource: gvrPVs, Name: pvName, Finalizers: []string{"kubernetes.io/pv-protection"}}
	if err := s.terminate(ctx, o); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "bound-volume",
		Description: fmt.Sprintf("volume %s is deleted while claim %s/archive binds it", pvName, ns),
		Stuck:       []Object{o},
	}, nil
}

// UnownedFinalizer seeds a configmap whose finalizer came from a manifest and names no
// known controller or API group.
func (s *Seeder) UnownedFinalizer(ctx context.Context) (Scenario, error) {
	ns := s.Name("mystery")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	fin := "cleanup.mystery-vendor.example/final"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy", Finalizers: []string{fin}}}
	if _, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Scenario{}, fmt.Errorf("creating configmap %s/legacy: %w", ns, err)
	}
	o := Object{Resource: gvrConfigMaps, Namespace: ns, Name: "legacy", Finalizers: []string{fin}}
	if err := s.terminate(ctx, o); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "unowned-finalizer",
		Description: fmt.Sprintf("configmap %s/legacy carries a finalizer from a manifest that nobody owns", ns),
		Stuck:       []Object{o},
	}, nil
}
