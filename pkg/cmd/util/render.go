package util

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// PrintError writes err the way kubectl does: "error: ..." for our own errors,
// "Error from server (Reason): ..." for API errors, and a hint for unreachable servers.
// It is the only place an error is rendered; commands return errors, they never print them.
func PrintError(w io.Writer, err error) {
	if err == nil {
		return
	}
	var ec *ExitCodeError
	if errors.As(err, &ec) && ec.Silent {
		return
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		// One line per error, each rendered on its own (an API error keeps its form).
		for _, e := range utilerrors.Flatten(agg).Errors() {
			fmt.Fprintln(w, StandardErrorMessage(e))
		}
		return
	}
	fmt.Fprintln(w, StandardErrorMessage(err))
}

// StandardErrorMessage renders one error as a single kubectl-style message.
func StandardErrorMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Reason != "" && errors.Unwrap(err) == nil {
		// A bare API error, as kubectl prints it.
		return fmt.Sprintf("Error from server (%s): %s", status.Status().Reason, err.Error())
	}
	if host, ok := refusedHost(err); ok {
		return fmt.Sprintf("error: the connection to the server %s was refused - did you specify the right host or port?", host)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	return msg
}

// refusedHost finds the host of a refused connection inside err.
func refusedHost(err error) (string, bool) {
	var uerr *url.Error
	if !errors.As(err, &uerr) {
		return "", false
	}
	var operr *net.OpError
	if !errors.As(uerr.Err, &operr) || operr.Op != "dial" || !strings.Contains(operr.Err.Error(), "connection refused") {
		return "", false
	}
	if u, perr := url.Parse(uerr.URL); perr == nil && u.Host != "" {
		return u.Host, true
	}
	return uerr.URL, true
}
