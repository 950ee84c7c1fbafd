package util

import (
	"fmt"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/version"
)

// Flag names shared by several commands.
const (
	flagQPS   = "qps"
	flagBurst = "burst"
)

// Client-side rate limits. client-go's 5/10 would throttle a scan of a large cluster on
// the client; the server protects itself with API Priority and Fairness.
const (
	defaultQPS   = 100
	defaultBurst = 200
)

// Factory is where commands get their clients and the namespace from. Commands resolve
// everything through it in Complete, so that tests can hand them fakes.
type Factory interface {
	// Namespace returns the namespace from -n or the kubeconfig context, and whether it
	// was given explicitly on the command line.
	Namespace() (string, bool, error)
	// RESTMapper resolves kubectl-style type arguments from the run's discovery.
	RESTMapper() (meta.RESTMapper, error)
	// Clients are the clients of the cluster.
	Clients() (*client.Clients, error)
	// RawConfig is the merged kubeconfig, for completing contexts.
	RawConfig() (clientcmdapi.Config, error)
}

// ConfigFactory builds every client from the standard kubectl flags, so --kubeconfig,
// --context, --as, --request-timeout and the rate limits apply to all of them.
// Discovery is fresh for each run and cached in memory only: a stale disk cache could hide
// a CRD installed a minute ago, and with it the objects that block a namespace.
type ConfigFactory struct {
	ConfigFlags *genericclioptions.ConfigFlags
	QPS         float32
	Burst       int
	// contexts are the values of --context, in the order given (see Fleet).
	contexts []string

	mu        sync.Mutex
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	clients   *client.Clients
}

var (
	_ Factory = &ConfigFactory{}
	_ Fleet   = &ConfigFactory{}
)

// NewFactory returns a Factory with kubectl's flags and raised rate limits.
func NewFactory() *ConfigFactory {
	return &ConfigFactory{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		QPS:         defaultQPS,
		Burst:       defaultBurst,
	}
}

// AddFlags adds the kubectl flags and the rate limits to fs.
func (f *ConfigFactory) AddFlags(fs *pflag.FlagSet) {
	f.ConfigFlags.AddFlags(fs)
	f.multiContext(fs)
	// Discovery is never cached on disk (see ConfigFactory), so the flag would do nothing.
	_ = fs.MarkHidden("cache-dir")
	fs.Float32Var(&f.QPS, flagQPS, f.QPS, "Maximum queries per second to the API server from this client; a negative value turns client-side rate limiting off.")
	fs.IntVar(&f.Burst, flagBurst, f.Burst, "Maximum burst of queries to the API server from this client.")
}

// RESTConfig is the client configuration every client shares.
func (f *ConfigFactory) RESTConfig() (*rest.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.config != nil {
		return rest.CopyConfig(f.config), nil
	}
	switch {
	case f.QPS == 0:
		// client-go reads 0 as its own default of 5 per second.
		return nil, UsageErrorf(nil, "--%s must not be 0: pass a rate, or a negative value to turn client-side rate limiting off", flagQPS)
	case f.QPS > 0 && f.Burst < 1:
		return nil, UsageErrorf(nil, "--%s must be at least 1 when --%s is positive, got %d", flagBurst, flagQPS, f.Burst)
	case len(f.distinctContexts()) > 1:
		return nil, UsageErrorf(nil, "--%s was given %d times: only scan and doctor read several clusters; run one command per context", FlagContext, len(f.distinctContexts()))
	}
	cfg, err := f.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = f.QPS
	cfg.Burst = f.Burst
	cfg.UserAgent = version.UserAgent()
	cfg.Wrap(client.RetryServerErrors)
	if err := client.RegisterCredentials(cfg); err != nil {
		return nil, err
	}
	f.config = cfg
	return rest.CopyConfig(cfg), nil
}

// Namespace implements Factory.
func (f *ConfigFactory) Namespace() (string, bool, error) {
	if f.ConfigFlags.Namespace != nil && *f.ConfigFlags.Namespace != "" {
		return *f.ConfigFlags.Namespace, true, nil
	}
	ns, _, err := f.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	return ns, false, err
}

// RawConfig implements Factory.
func (f *ConfigFactory) RawConfig() (clientcmdapi.Config, error) {
	return f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
}

// Clients implements Factory. The metadata and discovery clients drop the API server's
// warnings: a scan touches every API and would repeat each deprecation notice.
func (f *ConfigFactory) Clients() (*client.Clients, error) {
	dc, err := f.discoveryClient()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clients != nil {
		return f.clients, nil
	}
	cfg := rest.CopyConfig(f.config)
	kc, err := client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandler = rest.NoWarnings{}
	mc, err := metadata.NewForConfig(quiet)
	if err != nil {
		return nil, err
	}
	f.clients = &client.Clients{Discovery: dc, Metadata: mc, Kube: kc, Dynamic: dyn}
	return f.clients, nil
}

// discoveryClient returns a discovery client cached in memory for this run.
func (f *ConfigFactory) discoveryClient() (discovery.CachedDiscoveryInterface, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.discovery != nil {
		return f.discovery, nil
	}
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	f.discovery = memory.NewMemCacheClient(dc)
	return f.discovery, nil
}

// RESTMapper implements Factory: it resolves plurals, singulars, kinds and short names
// from the same discovery data as the rest of the run.
func (f *ConfigFactory) RESTMapper() (meta.RESTMapper, error) {
	dc, err := f.discoveryClient()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mapper == nil {
		f.mapper = kube.NewRESTMapper(dc)
	}
	return f.mapper, nil
}
