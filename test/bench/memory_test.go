package bench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// evict drops the named files from the page cache, so the next process that runs them
// reads them from disk.
func evict(paths ...string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		_ = f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// sampleAnon samples, every 5 ms until the returned function is called, the anonymous
// memory (heap, stacks) of the process pid, and returns the peak in KiB. Peak RSS also
// counts the pages of the executable; this is what the process itself allocates.
func sampleAnon(pid int) func() int64 {
	return sample(5*time.Millisecond, func() int64 { return anonKB(pid) })
}

// sampleGroupAnon is sampleAnon of the sum over process group pgid, but for the process
// left out (rusage, which started the group), every 20 ms: walking /proc costs more.
func sampleGroupAnon(pgid, leftOut int) func() int64 {
	return sample(20*time.Millisecond, func() int64 { return groupAnonKB(pgid, leftOut) })
}

// sample calls kb every interval until the returned function is called, which returns the
// largest value seen.
func sample(interval time.Duration, kb func() int64) func() int64 {
	var (
		mu   sync.Mutex
		peak int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			v := kb()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// anonKB is RssAnon of /proc/pid/status, 0 once the process is gone.
func anonKB(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("RssAnon:")); ok {
			fields := bytes.Fields(rest)
			if len(fields) > 0 {
				n, _ := strconv.ParseInt(string(fields[0]), 10, 64)
				return n
			}
		}
	}
	return 0
}

// groupAnonKB sums anonKB over the processes of process group pgid but leftOut.
func groupAnonKB(pgid, leftOut int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == leftOut {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil && g == pgid {
			sum += anonKB(pid)
		}
	}
	return sum
}
