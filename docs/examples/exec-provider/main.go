// Command exec-provider is an example provider for kubectl-finalize's exec protocol
// (docs/providers.md). It answers from an inventory file: a JSON list of the external
// resources that exist, such as a nightly export of a cloud account.
//
//	exec-provider --inventory /etc/inventory/databases.json --max-age 1h ID
//
// It reads one VerifyRequest on stdin and writes one VerifyResponse on stdout:
//
//   - Present when ID is in the inventory;
//   - Gone when it is not, and the inventory is younger than --max-age;
//   - Unknown when the inventory is missing, unreadable or older than --max-age: an old
//     inventory proves nothing about what was deleted since.
//
// Diagnostics go to stderr; a failure exits non-zero, which kubectl-finalize reads as
// Unknown.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

// apiVersion is the version of the protocol this provider speaks.
const apiVersion = "kubectl-finalize.github.io/v1alpha1"

// request holds the fields of a VerifyRequest this provider reads.
type request struct {
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	Rule            string `json:"rule"`
	Finalizer       string `json:"finalizer"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Interactive     bool   `json:"interactive"`
}

// response is a VerifyResponse. It echoes the object and finalizer it answers about.
type response struct {
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Finalizer       string `json:"finalizer"`
	Verdict         string `json:"verdict"`
	Evidence        string `json:"evidence"`
}

func main() {
	inventory := flag.String("inventory", "", "JSON file listing the IDs of the resources that exist")
	maxAge := flag.Duration("max-age", time.Hour, "an inventory older than this proves nothing")
	flag.Parse()
	if err := run(*inventory, *maxAge, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "exec-provider:", err)
		os.Exit(1)
	}
}

func run(inventory string, maxAge time.Duration, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return fmt.Errorf("want exactly one ID argument, got %q", args)
	}
	id := args[0]
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("reading the VerifyRequest: %w", err)
	}
	if req.APIVersion != apiVersion || req.Kind != "VerifyRequest" {
		return fmt.Errorf("this provider speaks %s VerifyRequest, not %s %s", apiVersion, req.APIVersion, req.Kind)
	}
	resp := response{APIVersion: apiVersion, Kind: "VerifyResponse", UID: req.UID, ResourceVersion: req.ResourceVersion, Finalizer: req.Finalizer}
	resp.Verdict, resp.Evidence = check(inventory, maxAge, id)
	return json.NewEncoder(os.Stdout).Encode(resp)
}

// check answers from the inventory. Anything that makes the inventory untrustworthy is
// Unknown: the answer must never be Gone on a guess.
func check(inventory string, maxAge time.Duration, id string) (verdict, evidence string) {
	info, err := os.Stat(inventory)
	if err != nil {
		return "Unknown", fmt.Sprintf("inventory %s: %v", inventory, err)
	}
	if age := time.Since(info.ModTime()); age > maxAge {
		return "Unknown", fmt.Sprintf("inventory %s is %s old, older than %s", inventory, age.Round(time.Second), maxAge)
	}
	data, err := os.ReadFile(inventory)
	if err != nil {
		return "Unknown", fmt.Sprintf("inventory %s: %v", inventory, err)
	}
	var ids []string
	if err := json.Unmarshal(data, &ids); err != nil {
		return "Unknown", fmt.Sprintf("inventory %s is not a JSON list of IDs: %v", inventory, err)
	}
	if slices.Contains(ids, id) {
		return "Present", fmt.Sprintf("%s is in inventory %s (%d resources)", id, inventory, len(ids))
	}
	return "Gone", fmt.Sprintf("%s is not in inventory %s (%d resources, %s old)", id, inventory, len(ids), time.Since(info.ModTime()).Round(time.Second))
}
