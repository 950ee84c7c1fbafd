package seed

import (
	"context"
	"fmt"
)

// RetiredDatabases seeds two databases whose cloud databases were deleted: the operator
// deleted them, then was uninstalled before it removed its finalizer. They are what a
// provider may verify gone; the demo's cloud (CloudInstances) no longer knows them.
func (s *Seeder) RetiredDatabases(ctx context.Context) (Scenario, error) {
	sc, err := s.retiredDatabases(ctx)
	if err != nil {
		return Scenario{}, err
	}
	return sc, s.terminate(ctx, sc.Stuck...)
}

// retiredDatabases writes what RetiredDatabases deletes, and deletes nothing.
func (s *Seeder) retiredDatabases(ctx context.Context) (Scenario, error) {
	ns := s.Name("reporting")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	var stuck []Object
	for _, name := range []string{"reports-2023-db", "reports-2024-db"} {
		o, err := s.Database(ctx, ns, name)
		if err != nil {
			return Scenario{}, err
		}
		stuck = append(stuck, o)
	}
	return Scenario{
		Name:        "retired-databases",
		Description: fmt.Sprintf("databases %s/reports-2023-db and reports-2024-db: their cloud databases are deleted, their operator is gone", ns),
		Stuck:       stuck,
	}, nil
}

// InstanceID is the cloud identity the database operator writes into a database's
// status.instanceID.
func InstanceID(database string) string { return "db-" + database }

// CloudInstances are the instance IDs of the seeded databases whose cloud database still
// exists: the healthy one, the one whose operator was uninstalled without deleting it,
// the one its operator may not delete, and the one its operator is still snapshotting.
// Every other seeded database (RetiredDatabases) is gone from the cloud.
func CloudInstances() []string {
	return []string{InstanceID("live-db"), InstanceID("orders-db"), InstanceID("billing-db"), InstanceID("analytics-db")}
}
