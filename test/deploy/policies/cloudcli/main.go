// Command cloudcli stands in, in the pods of test/deploy/policies, for the programs the
// rules of docs/presets.md run: check-s3, check-rds, check-gcloud-sql, check-elb and
// check-ebs, scripts around a cloud's CLI that exist in no image; and for
// check-account, a program that reads the Secret it is asked about (a rule with
// secretData: true). The pod's init container installs it under each of those names in
// /usr/local/bin, the path the docs' rules name, and it speaks the exec protocol as the
// docs' scripts do: one VerifyRequest on stdin, one VerifyResponse on stdout that echoes
// its uid, resourceVersion and finalizer, and a non-zero exit on anything else.
//
// It answers from an inventory of the cloud (inventoryPath), not from a cloud: for each
// program, the arguments it may be called with, the identity the VerifyRequest must
// carry along with them, and whether that resource exists:
//
//	{"check-s3": [{"args": ["orders-archive"], "identity": {"externalName": "orders-archive", ...}, "exists": true}]}
//
// A call the inventory lists answers Present when the resource exists and Gone when it
// does not (the CLI's "not found"). A call it does not list, or whose VerifyRequest
// carries another identity than the one listed with it, fails (exit 1, Unknown to
// kubectl-finalize): the rule read an identity from another place than where the test's
// objects keep it, and the test sees a kept object or a pass that could not verify.
//
// check-account takes no argument: it reads data.accessKeyID of the Secret in the
// VerifyRequest and asks about that account, as a program that needs a Secret's values
// does. A value kubectl-finalize REDACTED (secretData not set) fails.
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	apiVersion = "kubectl-finalize.github.io/v1alpha1"
	// inventoryPath is where the pod mounts the inventory.
	inventoryPath = "/etc/cloudcli/inventory.json"
)

// Call is one call a program may get, and the answer to it.
type Call struct {
	Args     []string          `json:"args"`
	Identity map[string]string `json:"identity,omitempty"`
	Exists   bool              `json:"exists"`
}

type request struct {
	APIVersion      string            `json:"apiVersion"`
	Kind            string            `json:"kind"`
	Finalizer       string            `json:"finalizer"`
	UID             string            `json:"uid"`
	ResourceVersion string            `json:"resourceVersion"`
	Identity        map[string]string `json:"identity"`
	Object          struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	} `json:"object"`
}

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
	if err := run(filepath.Base(os.Args[0]), os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}

func run(program string, args []string) error {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("reading the VerifyRequest: %w", err)
	}
	if req.APIVersion != apiVersion || req.Kind != "VerifyRequest" {
		return fmt.Errorf("not a %s VerifyRequest: %s %s", apiVersion, req.APIVersion, req.Kind)
	}
	if program == "check-account" {
		if len(args) != 0 || req.Object.Kind != "Secret" {
			return fmt.Errorf("check-account reads the Secret it is asked about, and no argument; got %q about a %s", args, req.Object.Kind)
		}
		id, err := accessKeyID(req.Object.Data)
		if err != nil {
			return err
		}
		args = []string{id}
	}
	b, err := os.ReadFile(inventoryPath)
	if err != nil {
		return err
	}
	var inventory map[string][]Call
	if err := json.Unmarshal(b, &inventory); err != nil {
		return fmt.Errorf("%s: %w", inventoryPath, err)
	}
	i := slices.IndexFunc(inventory[program], func(c Call) bool { return slices.Equal(c.Args, args) })
	if i < 0 {
		return fmt.Errorf("the cloud knows of no call %q: an error, not a verdict", args)
	}
	call := inventory[program][i]
	if !maps.Equal(call.Identity, req.Identity) {
		return fmt.Errorf("called with %q about identity %v, which the object keeps as %v: the identity was read from the wrong place", args, req.Identity, call.Identity)
	}
	resp := response{APIVersion: apiVersion, Kind: "VerifyResponse", UID: req.UID, ResourceVersion: req.ResourceVersion, Finalizer: req.Finalizer,
		Verdict: "Gone", Evidence: program + " " + strings.Join(args, " ") + ": not found"}
	if call.Exists {
		resp.Verdict, resp.Evidence = "Present", program+" "+strings.Join(args, " ")+": exists"
	}
	return json.NewEncoder(os.Stdout).Encode(resp)
}

// accessKeyID is the Secret's data.accessKeyID, decoded.
func accessKeyID(data map[string]string) (string, error) {
	v, ok := data["accessKeyID"]
	switch {
	case !ok:
		return "", errors.New("the Secret has no data.accessKeyID")
	case v == "REDACTED":
		return "", errors.New("data.accessKeyID is REDACTED: the rule does not send the Secret's values (secretData)")
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("data.accessKeyID: %w", err)
	}
	return string(b), nil
}
