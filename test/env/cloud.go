package env

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// The cloud: test/fakecloud's cloud API on loopback, knowing which of the seeded
// databases still exist. Start runs it as a process of its own (the running program,
// run as "PROGRAM cloud --dir DIR", which calls ServeCloud), and Stop stops it, like the
// control plane.
//
//	GET /instances/ID: 200 {"id": ID, "state": "available"} when the instance exists,
//	                   404 {"error": {"code": "InstanceNotFound", ...}} when it does not
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
// cloud outlives this process (stopCloud stops it); an attached one is killed by the
// kernel when this process ends.
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
		return "", "", fmt.Errorf("starting the cloud: %w", err)
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
		resp, err := client.Get(url + "/instances/ready-check")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cloud did not answer at %s: %w", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeCert writes the cloud's CA and its serving certificate for 127.0.0.1.
func writeCert(dir string) error {
	ca := pki.NewCA("kubectl-finalize test cloud CA")
	if err := os.WriteFile(filepath.Join(dir, cloudCA), ca.PEM, 0o644); err != nil {
		return err
	}
	return ca.Serving("kubectl-finalize test cloud", "127.0.0.1").Write(filepath.Join(dir, cloudCert), filepath.Join(dir, cloudKey))
}

// ServeCloud is the cloud's process: a program that starts an Env calls it when it is
// run as "PROGRAM cloud --dir DIR", and it serves on the socket Start handed over until
// SIGTERM.
func ServeCloud(dir string) error {
	cdir := filepath.Join(dir, cloudDir)
	cert, err := tls.LoadX509KeyPair(filepath.Join(cdir, cloudCert), filepath.Join(cdir, cloudKey))
	if err != nil {
		return err
	}
	l, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return fmt.Errorf("the socket from Start: %w", err)
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
	fmt.Printf("cloud: serving https://%s, instances from %s\n", l.Addr(), filepath.Join(cdir, cloudInstance))
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// cloudHandler is the cloud of the instances listed in the file instances, logging
// each request and its answer.
func cloudHandler(instances string) http.Handler {
	cloud := fakecloud.Listing(func() ([]string, error) {
		b, err := os.ReadFile(instances)
		return strings.Fields(string(b)), err
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		cloud.ServeHTTP(sw, r)
		fmt.Printf("%s %s %s: %d\n", time.Now().Format(time.TimeOnly), r.Method, r.URL.Path, sw.code)
	})
}

// statusWriter remembers the status code of an answer, for the log.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
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
		return fmt.Errorf("reading the cloud's command line: %w", err)
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stopping the cloud: %w", err)
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
