package hdfs

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/testbed"
)

// checkStores is TestCluster's last part, on a cluster whose hosts'
// data directories are emulating stores: it writes files of gait's
// synthetic stream through cl and reads each back whole (the read checks
// every byte), stops the cluster, and asks each DataNode's store what it
// holds. The store must show every replica yet hold far fewer bytes: the
// block files are kept as descriptions, and so are the blocks' .meta
// checksums, also those the DataNode closed before the block's data
// reached the mount; what stays literal is the daemons' own small files.
func checkStores(t *testing.T, c *Cluster, tb *testbed.Testbed, cl load.Client) {
	t.Helper()
	for _, h := range tb.Hosts[1:] {
		data := c.d.conf(c.members[h.Index].host, c.nn.host, len(tb.Hosts)-1)["dfs.datanode.data.dir"]
		if rel, err := filepath.Rel(h.DataDir, data); err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("%s: the DataNode's data directory %s is not in the emulated %s", h.Name, data, h.DataDir)
		}
	}
	const files, size = 4, 8 << 20
	for i := range files {
		do(t, cl, opWrite, fmt.Sprintf("e%d", i), size)
	}
	for i := range files {
		do(t, cl, opRead, fmt.Sprintf("e%d", i), 0)
	}
	// Stop, so that every block and .meta file is closed and its
	// description committed to the store.
	if err := c.Stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	// The bound is on the data's descriptions: each store's metadata log
	// is a fixed 64 KiB while it is mounted, 40% of these small stores.
	var logical, physical int64
	for _, h := range tb.Hosts[1:] {
		st, err := limpfs.ReadStoreStats(h.Disk().Backing)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d files, %d bytes logical, %d physical (ratio %.1f)", h.Name, st.Files, st.LogicalBytes, st.PhysicalBytes, st.Ratio)
		if st.LogicalBytes < files*size {
			t.Errorf("%s: the store shows %d bytes, fewer than a replica of every file (%d)", h.Name, st.LogicalBytes, files*size)
		}
		logical += st.LogicalBytes
		physical += st.PhysicalBytes - st.LogBytes
	}
	ratio := float64(logical) / float64(max(physical, 1))
	t.Logf("the DataNodes' stores: %d bytes logical, %d physical besides their logs, ratio %.1f", logical, physical, ratio)
	if ratio < 400 {
		t.Errorf("ratio %.1f, want more than 400 (826 measured)", ratio)
	}
}
