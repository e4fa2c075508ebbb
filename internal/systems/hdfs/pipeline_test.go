package hdfs

import (
	"maps"
	"slices"
	"testing"
)

func TestInvolvement(t *testing.T) {
	for _, c := range []struct {
		addrs             string
		involved, dropped []string
	}{
		{"", nil, nil},
		// a read: where it read from
		{"10.0.0.2,10.0.0.3", []string{"10.0.0.2", "10.0.0.3"}, nil},
		// a create whose one pipeline held throughout, then its locations
		{"7:10.0.0.5,10.0.0.2,10.0.0.3;10.0.0.2,10.0.0.3,10.0.0.5",
			[]string{"10.0.0.2", "10.0.0.3", "10.0.0.5"}, nil},
		// a recovery dropped .5 and put .4 in its place: the locations
		// after close name .4, not .5, which the op waited on all the same
		{"7:10.0.0.2,10.0.0.5,10.0.0.3;7:10.0.0.2,10.0.0.3;7:10.0.0.2,10.0.0.3,10.0.0.4;10.0.0.2,10.0.0.3,10.0.0.4",
			[]string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"}, []string{"10.0.0.5"}},
		// two blocks of one file: the second's pipeline is not a recovery
		// of the first's
		{"7:10.0.0.1,10.0.0.2;8:10.0.0.3,10.0.0.4",
			[]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}, nil},
		// a DataNode excluded while setting a pipeline up
		{"8:10.0.0.3,10.0.0.4;x:10.0.0.1",
			[]string{"10.0.0.1", "10.0.0.3", "10.0.0.4"}, []string{"10.0.0.1"}},
	} {
		inv, drop, err := involvement(c.addrs)
		if err != nil {
			t.Errorf("involvement(%q): %v", c.addrs, err)
			continue
		}
		if !slices.Equal(inv, c.involved) || !slices.Equal(drop, c.dropped) {
			t.Errorf("involvement(%q) = %v, dropped %v; want %v, dropped %v", c.addrs, inv, drop, c.involved, c.dropped)
		}
	}
	for _, bad := range []string{"7:", ";", "10.0.0.1,", ":10.0.0.1", "7:10.0.0.1;;10.0.0.2"} {
		if _, _, err := involvement(bad); err == nil {
			t.Errorf("involvement(%q) took a malformed list", bad)
		}
	}
}

func TestDropCounts(t *testing.T) {
	var d dropCounts
	d.add(nil)
	d.add([]string{"h5"})
	d.add([]string{"h5", "h2"})
	vals := map[string]float64{}
	d.report([]string{"h1", "h2", "h5"}, vals)
	want := map[string]float64{"ClientPipelineDrops{host=h1}": 0, "ClientPipelineDrops{host=h2}": 1, "ClientPipelineDrops{host=h5}": 2}
	if !maps.Equal(vals, want) {
		t.Errorf("report = %v, want %v", vals, want)
	}
}
