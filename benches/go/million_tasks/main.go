// The Go peer of gmprt's examples/million_tasks.rs (spawn mode): one goroutine spawns N
// goroutines that each do nothing but wg.Done(), then waits for all of them. Prints one line in
// million_tasks' format, so scripts/scaling.sh can put the three runtimes side by side:
//
//	million_tasks runtime=go mode=spawn tasks=N procs=P elapsed_ms=X ns_per_task=Y
//
// Flags: -tasks N (1000000, 1_000_000 or 1e6) and -procs P (runtime.GOMAXPROCS; default: one
// per core, Go's own default). A bad value prints an error on stderr and exits 2.
//
// Like the Rust example, the spawner is itself a goroutine (not main), and the clock covers
// starting it, the N spawns, every goroutine's run and the final wait.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

const maxTasks = 1 << 40

// parseCount reads a positive count written 1000000, 1_000_000 or 1e6.
func parseCount(name, s string) (int64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if t == "" {
		return 0, fmt.Errorf("-%s: empty value", name)
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("-%s %s: must be at least 1", name, s)
		}
		if n > maxTasks {
			return 0, fmt.Errorf("-%s %s: too large (at most %d)", name, s, int64(maxTasks))
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("-%s %q: not a number (write 1000000, 1_000_000 or 1e6)", name, s)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("-%s %s: not a whole number", name, s)
	}
	if f < 1 {
		return 0, fmt.Errorf("-%s %s: must be at least 1", name, s)
	}
	if f > maxTasks {
		return 0, fmt.Errorf("-%s %s: too large (at most %d)", name, s, int64(maxTasks))
	}
	return int64(f), nil
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "million_tasks (go): %v\n", err)
	os.Exit(2)
}

func done(wg *sync.WaitGroup) { wg.Done() }

func main() {
	tasksFlag := flag.String("tasks", "1000000", "goroutines to spawn and join: 1000000, 1_000_000 or 1e6")
	procsFlag := flag.String("procs", strconv.Itoa(runtime.NumCPU()), "runtime.GOMAXPROCS (Ps)")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected argument %q (flags: -tasks N, -procs P)", flag.Arg(0)))
	}
	tasks, err := parseCount("tasks", *tasksFlag)
	if err != nil {
		fail(err)
	}
	procs64, err := strconv.ParseInt(strings.TrimSpace(*procsFlag), 10, 32)
	if err != nil {
		fail(fmt.Errorf("-procs %q: not an integer", *procsFlag))
	}
	if procs64 < 1 {
		fail(fmt.Errorf("-procs %s: must be at least 1", *procsFlag))
	}
	procs := int(procs64)
	runtime.GOMAXPROCS(procs)

	finished := make(chan struct{})
	start := time.Now()
	go func() {
		var wg sync.WaitGroup
		wg.Add(int(tasks))
		for i := int64(0); i < tasks; i++ {
			go done(&wg)
		}
		wg.Wait()
		close(finished)
	}()
	<-finished
	elapsed := time.Since(start)

	ms := float64(elapsed.Nanoseconds()) / 1e6
	ns := float64(elapsed.Nanoseconds()) / float64(tasks)
	fmt.Printf("million_tasks runtime=go mode=spawn tasks=%d procs=%d elapsed_ms=%.1f ns_per_task=%.1f\n",
		tasks, procs, ms, ns)
}
