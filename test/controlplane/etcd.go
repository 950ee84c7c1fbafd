package controlplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// What only etcd can do: write bytes the API server did not, as a partial write, a bug or
// a key rotated away leaves them. Through etcd's own JSON API (its gRPC gateway on the
// client URL), so that no etcd client library is needed.

// EtcdPrefix is where the API server keeps its objects in etcd: the default of
// kube-apiserver's --etcd-prefix.
const EtcdPrefix = "/registry"

// EtcdPut writes value at key, bypassing the API server.
func (cp *ControlPlane) EtcdPut(ctx context.Context, key string, value []byte) error {
	_, err := cp.etcdCall(ctx, "/v3/kv/put", map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte(key)),
		"value": base64.StdEncoding.EncodeToString(value),
	})
	return err
}

// EtcdGet reads the value at key; nil when there is none.
func (cp *ControlPlane) EtcdGet(ctx context.Context, key string) ([]byte, error) {
	body, err := cp.etcdCall(ctx, "/v3/kv/range", map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		return nil, err
	}
	var out struct {
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("etcd range %s: %w", key, err)
	}
	if len(out.KVs) == 0 {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(out.KVs[0].Value)
}

func (cp *ControlPlane) etcdCall(ctx context.Context, path string, req any) ([]byte, error) {
	if cp.etcdURL == "" {
		return nil, errors.New("this control plane's etcd URL is not known (a detached control plane reattached)")
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.etcdURL+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}
