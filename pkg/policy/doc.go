// Package policy reads, validates and applies the policies of unattended cleanup: which
// finalizers of which objects may be removed, and which provider verifies, first, that
// what each one guards is gone.
//
// A policy is decoded strictly (an unknown or repeated field is an error) and validated
// as a whole: every problem is reported at once, with its rule and field path. Matching
// is first rule wins; an exclude block wins over every rule. The Verifier asks the rule's
// provider about the full object, pins its answer to the object's resourceVersion, and
// trusts a Gone only after the provider called live objects Present. Rules with
// waitsForNode verify pods instead (VerifyPod): that the machine of the node a pod's
// deletion waits for is gone.
package policy
