package plan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
)

// ServerClock is the API server's clock, as well as the Date header of one answer tells:
// the local clock plus the offset a GET /version showed, measured once. Every age that
// decides something (a rule's minAge, a pod's grace period and margin, a kubelet's last
// sign of life) or is shown (terminatingSeconds, --older-than, the doctor's "ago") is
// measured against it: the times it is compared with (deletionTimestamp, managedFields)
// are the API server's, and a laptop's clock may be minutes off. It is as precise as the
// Date (one second) and half the round trip of that GET. One run makes one and shares it;
// a continuous reconcile makes one per pass.
type ServerClock struct {
	offset time.Duration
	err    error
}

var _ clock.PassiveClock = (*ServerClock)(nil)

// NewServerClock measures the API server's clock through kc. Without an answer with a
// Date, it is the local clock, and Err says why; a client that cannot be asked (a fake,
// which has no HTTP client) is the local clock with no error.
func NewServerClock(ctx context.Context, kc client.Interface) *ServerClock {
	c := &ServerClock{}
	if kc != nil {
		c.offset, c.err = serverOffset(ctx, kc)
	}
	return c
}

// Now is the API server's time.
func (c *ServerClock) Now() time.Time { return time.Now().Add(c.offset) }

// Since is how long ago t was by the API server's clock.
func (c *ServerClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Offset is how far the API server's clock is ahead of the local one (behind when
// negative): 0 when it was not measured.
func (c *ServerClock) Offset() time.Duration { return c.offset }

// Err says why the API server's clock could not be read: the clock is then the local
// one. A run that decides by ages (remove, a reconcile pass) fails on it rather than
// decide by a clock the API server did not show.
func (c *ServerClock) Err() error { return c.err }

func serverOffset(ctx context.Context, kc client.Interface) (time.Duration, error) {
	d := kc.Discovery()
	if d == nil {
		return 0, nil
	}
	rc, ok := d.RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return 0, nil
	}
	fail := func(err error) (time.Duration, error) {
		return 0, fmt.Errorf("reading the API server's clock (the Date of its answer to GET /version): %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Get().AbsPath("/version").URL().String(), http.NoBody)
	if err != nil {
		return fail(err)
	}
	sent := time.Now()
	resp, err := rc.Client.Do(req)
	if err != nil {
		return fail(err)
	}
	_ = resp.Body.Close()
	received := time.Now()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return fail(errors.New("the answer has no valid Date header"))
	}
	// The Date was written between sent and received, truncated to the second: its
	// middle second is the best estimate.
	mid := sent.Add(received.Sub(sent) / 2)
	return date.Add(500 * time.Millisecond).Sub(mid), nil
}
