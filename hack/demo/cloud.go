package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// The demo cloud: a small HTTPS API on loopback that knows which of the demo's databases
// still exist. `demo up` starts it as a detached process of its own (this program, run
// as "demo cloud"), and `demo down` stops it, like the control plane.
//
//	GET /v1/instances/ID: 200 {"id": ID, "state": "available"} when the instance exists,
//	                      404 {"error": "..."} when it does not
//
// The instances are the lines of DIR/cloud/instances, read at each request: delete a
// line and the cloud has deleted that database.
const (
	cloudDir      = "cloud"
	cloudInstance = "instances"
	cloudCA       = "ca.pem"
	cloudCert     = "cert.pem"
	cloudKey      = "key.pem"
	cloudPID      = "pid"
	cloudLog      = "cloud.log"
)

// startCloud writes the cloud's certificate and instances into dir/cloud, starts the
// cloud on a loopback port, and returns its URL and the file of its CA. A detached
// cloud outlives this process (make demo; stopCloud stops it); an attached one is
// killed by the kernel when this process ends.
func startCloud(dir string, detached bool) (url, caFile string, err error) {
	cdir := filepath.Join(dir, cloudDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return "", "", err
	}
	if err := writeCert(cdir); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(cdir, cloudInstance), []byte(strings.Join(seed.CloudInstances(), "\n")+"\n"), 0o644); err != nil {
		return "", "", err
	}
	// The parent binds the port and hands the socket over: the cloud answers from the
	// first request on, and no port is guessed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	defer l.Close()
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		return "", "", err
	}
	defer lf.Close()
	self, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	log, err := os.OpenFile(filepath.Join(dir, cloudLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", "", err
	}
	defer log.Close()
	cmd := exec.Command(self, "cloud", "--dir", dir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{lf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if !detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("starting the demo cloud: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cdir, cloudPID), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return "", "", err
	}
	_ = cmd.Process.Release()
	url = "https://" + l.Addr().String()
	caFile = filepath.Join(cdir, cloudCA)
	return url, caFile, waitCloud(url, caFile)
}

// waitCloud asks the cloud about an instance nobody has until it answers.
func waitCloud(url, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url + "/v1/instances/ready-check")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo cloud did not answer at %s: %w", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeCert makes a self-signed certificate for 127.0.0.1: its own CA.
func writeCert(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubectl-finalize demo cloud"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(30 * 24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, b := range map[string][]byte{cloudCA: certPEM, cloudCert: certPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, cloudKey), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

// serveCloud is the detached cloud: it serves on the socket startCloud handed over
// until SIGTERM.
func serveCloud(dir string) error {
	cdir := filepath.Join(dir, cloudDir)
	cert, err := tls.LoadX509KeyPair(filepath.Join(cdir, cloudCert), filepath.Join(cdir, cloudKey))
	if err != nil {
		return err
	}
	l, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return fmt.Errorf("the socket from demo up: %w", err)
	}
	srv := &http.Server{
		Handler:           cloudHandler(filepath.Join(cdir, cloudInstance)),
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("demo cloud: serving https://%s, instances from %s\n", l.Addr(), filepath.Join(cdir, cloudInstance))
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func cloudHandler(instances string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/instances/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		b, err := os.ReadFile(instances)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !slices.Contains(strings.Fields(string(b)), id) {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "instance " + id + " not found"})
			fmt.Printf("%s GET %s: 404\n", time.Now().Format(time.TimeOnly), r.URL.Path)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "state": "available"})
		fmt.Printf("%s GET %s: 200\n", time.Now().Format(time.TimeOnly), r.URL.Path)
	})
	return mux
}

// stopCloud stops the cloud whose PID is in dir: SIGTERM to its session, SIGKILL after
// a grace period.
func stopCloud(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, cloudDir, cloudPID))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("%s: not a PID: %q", filepath.Join(dir, cloudDir, cloudPID), b)
	}
	// A PID left from before a reboot may name another process now: stop only the cloud
	// of this folder.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !strings.Contains(string(cmdline), "\x00cloud\x00--dir\x00"+dir+"\x00")) {
		return nil // no such process, or not the cloud of this folder
	}
	if err != nil {
		return fmt.Errorf("reading the demo cloud's command line: %w", err)
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stopping the demo cloud: %w", err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// Reaps the cloud when this process started it (the tests); ECHILD otherwise.
		_, _ = syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}
