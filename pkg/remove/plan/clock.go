package plan

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
)

// offsets caches, per client, how far the API server's clock is from the local one.
var offsets sync.Map // client.Interface -> time.Duration

// ServerNow is the API server's clock, as well as one Date header (to the second) tells:
// the local clock corrected by the offset a GET /version showed, measured once per
// client. A pod's deletionTimestamp is the server's time, so whether its grace period and
// margin are over is measured against the server's clock, not a laptop's that may be
// minutes off. Without an answer with a Date (a fake client, an error), it is the local
// clock.
func ServerNow(ctx context.Context, kc client.Interface) time.Time {
	now := time.Now()
	if kc == nil {
		return now
	}
	if off, ok := offsets.Load(kc); ok {
		return now.Add(off.(time.Duration))
	}
	off, ok := serverOffset(ctx, kc)
	if !ok {
		return now
	}
	offsets.Store(kc, off)
	return time.Now().Add(off)
}

func serverOffset(ctx context.Context, kc client.Interface) (time.Duration, bool) {
	d := kc.Discovery()
	if d == nil {
		return 0, false
	}
	rc, ok := d.RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return 0, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Get().AbsPath("/version").URL().String(), http.NoBody)
	if err != nil {
		return 0, false
	}
	sent := time.Now()
	resp, err := rc.Client.Do(req)
	if err != nil {
		return 0, false
	}
	_ = resp.Body.Close()
	received := time.Now()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return 0, false
	}
	// The Date was written between sent and received, truncated to the second: its
	// middle second is the best estimate.
	mid := sent.Add(received.Sub(sent) / 2)
	return date.Add(500 * time.Millisecond).Sub(mid), true
}
