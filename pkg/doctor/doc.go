// Package doctor explains why each stuck object is stuck, and which few root causes
// explain them all.
//
// It works from a scan (with its Index) plus a few targeted reads: the APIServices, the
// admission webhooks and the endpoints of their services, the pods of namespaces that
// hold stuck claims, warning Events where a controller looks alive, and the workloads of
// the controllers that own finalizers. It never lists the whole cluster again. A read it
// may not do (RBAC) weakens a diagnosis, says so, and never fails it.
package doctor
