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
	var ec *exitCodeError
	if errors.As(err, &ec) && ec.Silent {
		return
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		// One line per error, each rendered on its own (an API error keeps its form).
		for _, e := range utilerrors.Flatten(agg).Errors() {
			fmt.Fprintln(w, standardErrorMessage(e))
		}
		return
	}
	fmt.Fprintln(w, standardErrorMessage(err))
}

// standardErrorMessage renders one error as a single kubectl-style message.
func standardErrorMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Reason != "" && errors.Unwrap(err) == nil {
		// A bare API error, as kubectl prints it.
		return fmt.Sprintf("Error from server (%s): %s", status.Status().Reason, err.Error())
	}
	if host, context, ok := refusedHost(err); ok {
		// kubectl's words; what the command was doing, if it says, comes first.
		return fmt.Sprintf("error: %sthe connection to the server %s was refused - did you specify the right host or port?", context, host)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	return msg
}

// refusedHost finds the host of a refused connection inside err, and the context err
// gives it ("listing configmaps: ", or "").
func refusedHost(err error) (host, context string, ok bool) {
	var uerr *url.Error
	if !errors.As(err, &uerr) {
		return "", "", false
	}
	var operr *net.OpError
	if !errors.As(uerr.Err, &operr) || operr.Op != "dial" || !strings.Contains(operr.Err.Error(), "connection refused") {
		return "", "", false
	}
	u, perr := url.Parse(uerr.URL)
	if perr != nil || u.Host == "" {
		return uerr.URL, "", true
	}
	// Refused at discovery, nothing was done yet: kubectl's words alone. Refused later,
	// what the command was doing says what it did not finish.
	if before, _, found := strings.Cut(err.Error(), uerr.Error()); found && !discoveryPath(u.Path) {
		context = before
	}
	return u.Host, context, true
}

// discoveryPath is /version, /api, /apis, /api/v1 or /apis/GROUP[/VERSION].
func discoveryPath(p string) bool {
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	switch {
	case len(parts) == 0:
		return true
	case parts[0] == "version" || parts[0] == "openapi":
		return true
	case parts[0] == "api":
		return len(parts) <= 2
	case parts[0] == "apis":
		return len(parts) <= 3
	}
	return false
}
