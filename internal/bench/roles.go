package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// RoleChange is a member's role changing during a run, T seconds after the
// workload started (as events are timed): a leader that lost its place, a
// follower that took it. A run whose leadership moved measured two
// clusters, one after the other, and its figures say so only here.
type RoleChange struct {
	T    float64 `json:"t"`
	Host string  `json:"host"`
	From string  `json:"from"`
	To   string  `json:"to"`
}

// unreachable is the role a driver gives a member that did not answer in
// time: not a role the member took, so no change.
const unreachable = "unreachable"

// roleChanges lists what differs between two readings of the roles, taken
// at t, by host; a member missing from either, or unreachable, is unknown.
func roleChanges(t float64, before, now map[string]string) []RoleChange {
	var out []RoleChange
	for _, h := range sortedKeys(now) {
		from, ok := before[h]
		to := now[h]
		if !ok || from == to || from == unreachable || to == unreachable {
			continue
		}
		out = append(out, RoleChange{T: t, Host: h, From: from, To: to})
	}
	slices.SortFunc(out, func(a, b RoleChange) int { return hostOrder(a.Host) - hostOrder(b.Host) })
	return out
}

// DescribeRoleChanges says what happened, one moment a line: "4.2s: h0
// follower→leader, h2 leader→follower".
func DescribeRoleChanges(cs []RoleChange) []string {
	var lines []string
	for i := 0; i < len(cs); {
		j := i
		var parts []string
		for ; j < len(cs) && cs[j].T == cs[i].T; j++ {
			parts = append(parts, fmt.Sprintf("%s %s→%s", cs[j].Host, cs[j].From, cs[j].To))
		}
		lines = append(lines, fmt.Sprintf("%.1fs: %s", cs[i].T, strings.Join(parts, ", ")))
		i = j
	}
	return lines
}

// roleWatch asks the cluster for its members' roles once a second while
// the workload runs and keeps every change, each also logged.
type roleWatch struct {
	lr      *liveRun
	mu      sync.Mutex
	t0      time.Time
	last    map[string]string
	changes []RoleChange
	cancel  context.CancelFunc
	done    chan struct{}
}

// watchRoles watches from t0 on, starting from the roles the run began with.
func (lr *liveRun) watchRoles(ctx context.Context, t0 time.Time, roles map[string]string) *roleWatch {
	w := &roleWatch{lr: lr, t0: t0, last: maps.Clone(roles), done: make(chan struct{})}
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				rctx, cancel := context.WithTimeout(ctx, metricsScrape)
				roles, _ := lr.cluster.Roles(rctx) // a member that did not answer is unknown
				cancel()
				if ctx.Err() == nil {
					w.see(roles)
				}
			}
		}
	}()
	return w
}

func (w *roleWatch) see(roles map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cs := roleChanges(time.Since(w.t0).Seconds(), w.last, roles)
	for _, line := range DescribeRoleChanges(cs) {
		w.lr.logf("  %s", line)
	}
	w.changes = append(w.changes, cs...)
	for h, r := range roles {
		if r != unreachable {
			w.last[h] = r
		}
	}
}

// stop ends the watch, takes the roles at the end as a last reading, and
// returns every change.
func (w *roleWatch) stop(after map[string]string) []RoleChange {
	w.cancel()
	<-w.done
	w.see(after)
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.changes)
}
