// Command probe runs in pods on the test node. "probe echo WORDS" prints WORDS and exits;
// "probe list" connects with the pod's in-cluster configuration (the ServiceAccount's
// token and kube-root-ca.crt, the API server on loopback by NetworkOverlay), prints who
// it is and the names of the ConfigMaps in its namespace, and exits 1 on any error.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe echo WORDS... | probe list")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "echo":
		fmt.Println(strings.Join(os.Args[2:], " "))
	case "list":
		if err := list(); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

func list() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	cms, err := client.CoreV1().ConfigMaps(string(ns)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("host %s\n", cfg.Host)
	fmt.Printf("user %s\n", review.Status.UserInfo.Username)
	for _, cm := range cms.Items {
		fmt.Printf("configmap %s\n", cm.Name)
	}
	return nil
}
