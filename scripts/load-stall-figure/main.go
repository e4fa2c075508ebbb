// Command load-stall-figure draws docs/img/load-stall.svg: the same Redis
// server, frozen with SIGSTOP for 500 ms one second into a 3 s run, measured
// once in closed loop and once in open loop. Run it from the repository root:
//
//	go run ./scripts/load-stall-figure
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/systems/redis"
)

const (
	stallAt  = time.Second
	stallFor = 500 * time.Millisecond
	out      = "docs/img/load-stall.svg"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "load-stall-figure:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	srv, err := redis.StartServer(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	mix, err := load.ParseMix("get:50,set:50", redis.Ops)
	if err != nil {
		return err
	}
	wl := load.Workload{Mix: mix, Keys: 1000, ValueSize: 1024}
	dial := redis.Dialer(srv.Addr)
	if err := load.Preload(ctx, wl, redis.OpSet, dial, 4); err != nil {
		return err
	}
	chart := report.ScatterChart{
		Title: fmt.Sprintf("Redis frozen for %v at t = %v: latency by intended start", stallFor, stallAt),
		X:     report.Axis{Label: "intended start (s)", Min: 0, Max: 3},
		Y:     report.Axis{Label: "latency", Unit: "s", Log: true},
	}
	for _, cfg := range []load.Config{
		{Workload: wl, Clients: 4, Duration: 3 * time.Second},
		{Workload: wl, Rate: 5000, Duration: 3 * time.Second},
	} {
		rec := &samples{}
		stalled := stall(srv.PID())
		if _, err := load.Run(ctx, cfg, dial, rec); err != nil {
			return err
		}
		<-stalled
		s := report.Series{Name: cfg.Mode()}
		var slow int
		for _, x := range rec.list {
			s.X = append(s.X, x.Start.Seconds())
			s.Y = append(s.Y, x.Latency.Seconds())
			if x.Latency >= 10*time.Millisecond {
				slow++
			}
		}
		chart.Series = append(chart.Series, s)
		fmt.Printf("%s: %d requests, %d of them took >= 10ms\n", cfg.Mode(), len(rec.list), slow)
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, []byte(chart.SVG()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// stall freezes pid for stallFor, stallAt from now (the run starts at once).
func stall(pid int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(stallAt)
		syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(stallFor)
		syscall.Kill(pid, syscall.SIGCONT)
	}()
	return done
}

type samples struct{ list []rundir.Sample }

func (s *samples) Add(x rundir.Sample)            { s.list = append(s.list, x) }
func (s *samples) AddMetric(int, string, float64) {}
