package cassandra

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"os"

	"slices"

	"testing"
	"time"

	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems/systemstest"
)

// TestTokens: the ring is split in equal ranges from its lowest token.
func TestTokens(t *testing.T) {
	if Token(0, 3) != fmt.Sprint(int64(math.MinInt64)) {
		t.Errorf("first token %s", Token(0, 3))
	}
	step := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(3))
	one, _ := new(big.Int).SetString(Token(1, 3), 10)
	if d := new(big.Int).Sub(one, big.NewInt(math.MinInt64)); d.Cmp(step) != 0 {
		t.Errorf("second token %s is %s past the first, want %s", one, d, step)
	}
}

// TestCluster starts three real Cassandra nodes, writes and reads at
// consistency all through the coordinator, reads the white-box tables,
// then limps a replica's NIC: a write at all, which waits for that
// replica, slows by far more than one at one, which does not, and names
// the replicas it waited for.
func TestCluster(t *testing.T) {
	if os.Getenv("GAIT_CASSANDRA_TEST") == "" {
		t.Skip("skipped: set GAIT_CASSANDRA_TEST=1 (three Cassandra nodes take 40 s to 2 min to start on 2 cores)")
	}
	d := New()
	if err := d.Check(); err != nil {
		t.Skip(err)
	}
	d.Read, d.Write = "all", "all"
	if v := os.Getenv("GAIT_CASSANDRA_START"); v != "" {
		d.StartTimeout, _ = time.ParseDuration(v)
	}
	cl, tb := systemstest.OnTestbed(t, d, 3)
	c := cl.(*Cluster)
	ctx := context.Background()
	if rs, _ := c.Roles(ctx); rs["h0"] != RoleCoordinator || rs["h1"] != RoleReplica || rs["h2"] != RoleReplica {
		t.Fatalf("roles %v", rs)
	}
	lc, err := c.Client("h0")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	client := lc.(*Client)
	value := make([]byte, 1024)
	put := func(i int) time.Duration {
		t.Helper()
		t0 := time.Now()
		if err := client.Do(ctx, load.Op{Kind: opPut, Key: fmt.Sprint("k", i), Value: value}); err != nil {
			t.Fatalf("put: %v", err)
		}
		return time.Since(t0)
	}
	for i := range 20 {
		put(i)
	}
	if err := client.Do(ctx, load.Op{Kind: opGet, Key: "k1"}); err != nil {
		t.Fatalf("get at all: %v", err)
	}
	if got := client.Involved(); !slices.Equal(got, []string{"h1", "h2"}) {
		t.Errorf("a get at all involved %v, want [h1 h2]", got)
	}
	m, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cassandra_outbound_pending_messages{host=h0,peer=h1}", "cassandra_threadpool_pending_tasks{host=h1,pool=MutationStage}"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %s in the metrics (%d keys)", k, len(m))
		}
	}

	// A replica limping at 1000x (100 kbit/s): an 8-KB write at all
	// waits for it to receive the value (about 0.7 s), one at one does not.
	value = make([]byte, 8<<10)
	if err := (limp.NIC{}).Apply(tb.Host("h1"), 1000); err != nil {
		t.Fatal(err)
	}
	var all, one []time.Duration
	for i := range 10 {
		all = append(all, put(100+i))
	}
	one1, err := consistency("one")
	if err != nil {
		t.Fatal(err)
	}
	client.write = one1
	for i := range 10 {
		one = append(one, put(200+i))
	}
	if client.Involved() != nil {
		t.Errorf("a put at one involved %v", client.Involved())
	}
	slices.Sort(all)
	slices.Sort(one)
	t.Logf("with h1 at 1000x: put at all median %v, at one %v", all[5], one[5])
	if all[5] < 5*one[5] {
		t.Errorf("a put at all (median %v) is not 5x one at one (%v) with a replica limping", all[5], one[5])
	}
}
